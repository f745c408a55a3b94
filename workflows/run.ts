// What every body shares: run ids, run records that never hide the original failure, input checks.
import type { PipelineActivities, RunRecord, WorkflowName } from '../activities/types.ts';
import { errorCode, errorMessage, WorkflowInputError } from './errors.ts';

export function defaultRunId(workflow: WorkflowName, startedAt: string): string {
  return `${workflow}-${startedAt}`;
}

/**
 * Run `body`, then record the run: ok with its summary, or failed with the error's message (its code in the
 * summary: the recordRun activity sends a pipeline_failed notice with it). A failure to record a failed run must
 * not replace the run's own error, so that one is swallowed.
 */
export async function recorded<T>(
  acts: Pick<PipelineActivities, 'recordRun'> & { now(): string },
  base: Omit<RunRecord, 'status' | 'finishedAt' | 'summary' | 'error'>,
  body: () => Promise<{ result: T; summary: Record<string, unknown>; record?: boolean }>,
): Promise<T> {
  let out: { result: T; summary: Record<string, unknown>; record?: boolean };
  try {
    out = await body();
  } catch (e) {
    try {
      const code = errorCode(e);
      await acts.recordRun({ ...base, status: 'failed', finishedAt: acts.now(), summary: code ? { errorCode: code } : {}, error: errorMessage(e) });
    } catch {
      // the run's own error is the one worth reporting
    }
    throw e;
  }
  if (out.record !== false) await acts.recordRun({ ...base, status: 'ok', finishedAt: acts.now(), summary: out.summary });
  return out.result;
}

export function checkInt(value: unknown, what: string, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw new WorkflowInputError(`${what} must be a whole number of at least ${min}, got ${JSON.stringify(value)}`);
  }
  return value;
}
