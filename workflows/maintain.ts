// The store's upkeep on a schedule of its own (cbp-maintain, daily): a lake's small files merged, old snapshots
// expired, unlisted files deleted after their grace time; a file checkpointed. Recorded in the run log.
import type { MaintainInput, MaintainSummary, PipelineActivities } from '../activities/types.ts';
import { defaultRunId, recorded } from './run.ts';

export interface MaintainStoreInput extends MaintainInput {
  runId?: string;
}

export type MaintainActs = Pick<PipelineActivities, 'maintainStore' | 'recordRun'> & { now(): string };

export async function maintainStore(input: MaintainStoreInput, acts: MaintainActs): Promise<MaintainSummary> {
  const startedAt = acts.now();
  const runId = input.runId ?? defaultRunId('maintainStore', startedAt);
  return recorded(acts, { runId, workflow: 'maintainStore', startedAt }, async () => {
    const result = await acts.maintainStore({ keepDays: input.keepDays, graceHours: input.graceHours });
    return { result, summary: { ...result }, record: true };
  });
}
