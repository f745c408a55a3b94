// Load the webhook journal's closed segments into the store, then the publish step (which publishes only
// when the snapshot is behind the store). Runs often (every few minutes), so a run that found nothing to
// load is not recorded; a failure always is, and so is the first success after one (it sends pipeline_recovered).
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
    // Every run, even one that loaded nothing: the activity publishes only when the snapshot is behind the
    // store, so a run killed between its commit and its publish is made good by the next one.
    const snapshot = await acts.publishSnapshot();
    return {
      result,
      summary: { ...result, ...(snapshot.published === undefined ? {} : { snapshotPublished: snapshot.published }) },
      record: result.segments > 0 || result.quarantined > 0 || result.failed > 0 || result.afterFailure === true,
    };
  });
}
