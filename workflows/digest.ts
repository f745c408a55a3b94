// The digest e-mail on a schedule of its own (cbp-digest, weekly by default): one activity, recorded in the run log.
import type { DigestSummary, PipelineActivities } from '../activities/types.ts';
import { defaultRunId, recorded } from './run.ts';

export interface SendDigestInput {
  runId?: string;
}

export type DigestActs = Pick<PipelineActivities, 'sendDigest' | 'recordRun'> & { now(): string };

export async function sendDigest(input: SendDigestInput, acts: DigestActs): Promise<DigestSummary> {
  const startedAt = acts.now();
  const runId = input.runId ?? defaultRunId('sendDigest', startedAt);
  return recorded(acts, { runId, workflow: 'sendDigest', startedAt }, async () => {
    const result = await acts.sendDigest();
    return { result, summary: { ...result }, record: true };
  });
}
