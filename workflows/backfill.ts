// Backfill: load history window by window, with bounded parallelism, resumable. Each finished window is
// recorded in the store (markWindowDone) and skipped by any later run of an overlapping backfill, so a run
// killed half-way is finished by simply running it again.
import type { ComputeRatiosResult, FetchAndLoadResult, PipelineActivities, PublishResult, ReportActivities, WindowStateActivities } from '../activities/types.ts';
import type { ReportKind } from '../contract/reporting.ts';
import { checkKinds } from './nightly.ts';
import { runBounded } from './pool.ts';
import { checkInt, defaultRunId, recorded } from './run.ts';
import { backfillTasks, taskId, utcDay, type WindowTask } from './windows.ts';

export interface BackfillInput {
  from: string;
  to: string;
  /** Default: all three. */
  kinds?: ReportKind[];
  windowDays: number;
  /** Windows loaded at once. Default 2. */
  parallelism?: number;
  runId?: string;
  /** Pause (continue as new) after starting this many windows in one run: bounds the history. Default: none. */
  windowsPerRun?: number;
  /** Set by a continued run: the windows still to do (planning is not repeated). */
  pending?: WindowTask[];
  /** Set by a continued run: counts carried over from earlier runs of the chain. */
  carried?: BackfillCounts;
}

export interface BackfillCounts {
  planned: number;
  loaded: number;
  skipped: number;
  records: number;
  quarantined: number;
}

export type BackfillResult =
  | ({ status: 'done'; runId: string; ratios: ComputeRatiosResult; snapshot: PublishResult } & BackfillCounts)
  /** Paused so the driver can continue as new with `next` (Temporal history limits). */
  | ({ status: 'continue'; runId: string; next: BackfillInput } & BackfillCounts);

export type BackfillActs = ReportActivities & WindowStateActivities & PipelineActivities & { now(): string };

export interface BackfillHooks {
  /** True when the driver wants the run to pause (Temporal: workflowInfo().continueAsNewSuggested). */
  shouldPause?: () => boolean;
}

export async function backfill(input: BackfillInput, acts: BackfillActs, hooks: BackfillHooks = {}): Promise<BackfillResult> {
  const startedAt = acts.now();
  const windowDays = checkInt(input.windowDays, 'windowDays', 1);
  const parallelism = checkInt(input.parallelism ?? 2, 'parallelism', 1);
  const kinds = checkKinds(input.kinds);
  const runId = input.runId ?? defaultRunId('backfill', startedAt);
  const tasks = input.pending ?? backfillTasks(kinds, input.from, input.to, windowDays);
  const windowsPerRun = input.windowsPerRun === undefined ? undefined : checkInt(input.windowsPerRun, 'windowsPerRun', 1);
  const counts: BackfillCounts = input.carried
    ? { ...input.carried }
    : { planned: tasks.length, loaded: 0, skipped: 0, records: 0, quarantined: 0 };

  return recorded<BackfillResult>(acts, { runId, workflow: 'backfill', startedAt, asOf: `${utcDay(input.to)}T23:59:59Z` }, async () => {
    const todo = await withoutFinished(tasks, acts);
    counts.skipped += tasks.length - todo.length;

    let started = 0;
    const shouldStop = () => (windowsPerRun !== undefined && started >= windowsPerRun) || (hooks.shouldPause?.() ?? false);
    const outcome = await runBounded(
      todo,
      parallelism,
      async (t) => {
        started += 1;
        const r: FetchAndLoadResult = await acts.fetchAndLoad({ kind: t.kind, window: t.window, runId });
        await acts.markWindowDone(t.kind, t.window, r);
        counts.loaded += 1;
        counts.records += r.records;
        counts.quarantined += r.quarantined;
        return r;
      },
      { shouldStop },
    );

    if (outcome.notStarted.length > 0) {
      const next: BackfillInput = { ...input, runId, pending: outcome.notStarted, carried: { ...counts } };
      // The chain's last run records it; a pause is not a finished run.
      return { result: { status: 'continue', runId, next, ...counts }, summary: {}, record: false };
    }

    // History is not "news": alerts are evaluated and stored, but no notice is queued for old months.
    const ratios = await acts.computeRatios({ asOf: utcDay(input.to), notify: false });
    const snapshot = await acts.publishSnapshot();
    return {
      result: { status: 'done', runId, ratios, snapshot, ...counts },
      summary: { ...counts, from: utcDay(input.from), to: utcDay(input.to), kinds, windowDays, snapshot: snapshot.path },
    };
  });
}

/** Drop the windows the store already records as finished, asking once per kind. */
async function withoutFinished(tasks: WindowTask[], acts: WindowStateActivities): Promise<WindowTask[]> {
  const byKind = new Map<ReportKind, WindowTask[]>();
  for (const t of tasks) {
    const list = byKind.get(t.kind) ?? [];
    list.push(t);
    byKind.set(t.kind, list);
  }
  const done = new Set<string>();
  for (const [kind, list] of byKind) {
    const ids = await acts.windowsDone(kind, list.map((t) => t.window));
    for (const id of ids) done.add(`${kind}:${id}`);
  }
  return tasks.filter((t) => !done.has(taskId(t)));
}
