// Failure is a notice too: a nightly, backfill, ingest or order push that failed for good (its activity's retries
// spent, or a non-retryable error) queues a pipeline_failed notice, and the workflow's next success a
// pipeline_recovered one. Pure: the run record and the workflow's latest pipeline notice in, the notice to record
// out. One notice per failure: while a workflow keeps failing with the same code nothing new is said (an ingest
// every few minutes would page every few minutes); a different code is a new failure (docs/spec-decisions.md).
// The notice's columns: program = the workflow, level = the error code, rule_id = the run id, mid = ''.
import { createHash } from 'node:crypto';
import type { Notice } from '../store/alerts.ts';

/** The workflows whose failure is a notice (activities/types.ts WorkflowName). */
export const NOTIFIED_WORKFLOWS: readonly string[] = ['nightly', 'backfill', 'ingestEvents', 'pushOrders'];

/** The code of a failure whose error carries none (no CbpError: a bug, a crash of a library). */
export const UNCODED = 'UNCODED';

export interface FinishedRun {
  runId: string;
  workflow: string;
  status: 'ok' | 'failed';
  finishedAt: string;
  summary: Record<string, unknown>;
  error?: string;
}

export type LatestPipelineNotice = Pick<Notice, 'notice_id' | 'kind' | 'level' | 'rule_id'> | null;

export function isPipelineNotice(n: Pick<Notice, 'kind'>): boolean {
  return n.kind === 'pipeline_failed' || n.kind === 'pipeline_recovered';
}

function pipelineNoticeId(kind: string, workflow: string, about: string): string {
  return `ntc_${createHash('sha256').update([kind, workflow, about].join('\u0000')).digest('hex').slice(0, 32)}`;
}

/**
 * The command that shows more of a run: a Temporal run id (workflowId/runId) has its history; a local run, the run
 * log of `cbp status`.
 */
export function seeMoreCommand(runId: string): string {
  const slash = runId.indexOf('/');
  if (slash > 0) return `temporal workflow show --workflow-id '${runId.slice(0, slash)}' --run-id '${runId.slice(slash + 1)}'`;
  return 'cbp status';
}

/** What a pipeline notice carries beyond its text, by name (webhook body, e-mail). */
export function pipelineDetails(n: Notice): { workflow: string; error_code: string; run_id: string | null; command: string | null } {
  return { workflow: n.program, error_code: n.level, run_id: n.rule_id, command: n.rule_id ? seeMoreCommand(n.rule_id) : null };
}

/**
 * The notice a finished run owes, or null, made at `now` (default: the run's end; the activity passes its clock, which
 * the outbox's look-back is counted from). redact is applied to the error's text before it is stored (the notice
 * history is copied into the analysts' snapshot).
 */
export function pipelineNotice(
  run: FinishedRun,
  latest: LatestPipelineNotice,
  redact: (text: string) => string = (t) => t,
  now: string = run.finishedAt,
): Notice | null {
  if (!NOTIFIED_WORKFLOWS.includes(run.workflow)) return null;
  const failing = latest?.kind === 'pipeline_failed';
  if (run.status === 'ok') {
    if (!failing || !latest) return null;
    const message = `${run.workflow} recovered: run ${run.runId} succeeded after ${latest.level} (failed run ${latest.rule_id ?? '?'})`;
    return notice('pipeline_recovered', pipelineNoticeId('pipeline_recovered', run.workflow, latest.notice_id), run, latest.level, message, now);
  }
  const code = typeof run.summary.errorCode === 'string' ? run.summary.errorCode : UNCODED;
  if (failing && latest?.level === code) return null;
  const why = redact(run.error ?? 'no message').split('\n')[0].slice(0, 500);
  const message = `${run.workflow} failed for good (retries spent or not retryable): [${code}] ${why}; see more: ${seeMoreCommand(run.runId)}`;
  return notice('pipeline_failed', pipelineNoticeId('pipeline_failed', run.workflow, run.runId), run, code, message, now);
}

function notice(kind: 'pipeline_failed' | 'pipeline_recovered', id: string, run: FinishedRun, code: string, message: string, now: string): Notice {
  const at = new Date(now).toISOString();
  return {
    notice_id: id, kind, mid: '', network: 'cbp', program: run.workflow, level: code, previous_level: null,
    month: at.slice(0, 7), metric: null, rule_id: run.runId, comparison: null, ratio_threshold: null,
    numerator: null, denominator: null, denominator_month: null, ratio: null, ratio_pct: null, ratio_bps: null,
    is_projection: false, is_partial: false, notify: true, message, created_at: at,
  };
}
