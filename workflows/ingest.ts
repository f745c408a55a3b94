// Load the webhook journal's closed segments into the store. Runs often (every few minutes), so a run that
// found nothing to load is not recorded; a failure always is.
import type { IngestResult, PipelineActivities } from '../activities/types.ts';
import { defaultRunId, recorded } from './run.ts';

export interface IngestInput {
  runId?: string;
}

export type IngestActs = Pick<PipelineActivities, 'ingestEvents' | 'publishSnapshot' | 'recordRun'> & { now(): string };

export async function ingestEvents(input: IngestInput, acts: IngestActs): Promise<IngestResult> {
  const startedAt = acts.now();
  const runId = input.runId ?? defaultRunId('ingestEvents', startedAt);
  return recorded(acts, { runId, workflow: 'ingestEvents', startedAt }, async () => {
    const result = await acts.ingestEvents();
    // Analysts read the snapshot: publish it after every ingest that wrote something.
    if (result.events > 0 || result.quarantined > 0) await acts.publishSnapshot();
    return { result, summary: { ...result }, record: result.segments > 0 || result.quarantined > 0 || result.failed > 0 };
  });
}
