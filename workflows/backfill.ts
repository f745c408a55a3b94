// Backfill: load history window by window, with bounded parallelism, resumable. Each finished window is
// recorded in the store (in its load's commit; markWindowDone for older workers) and skipped by any later run of an
// overlapping backfill, so a run killed half-way is finished by simply running it again.
//
// A window is finished only when the service answered after its end (the fetch's serviceTime: the
// response's Date header): a window still running on the service's clock is loaded with its data so far but
// left open, so the next run fetches it again, and the run says which windows it left open and why.
// `force` fetches every window of the range again, done or not.
import type { ComputeRatiosResult, FetchAndLoadResult, PipelineActivities, PublishResult, ReportActivities, WindowStateActivities } from '../activities/types.ts';
import type { ReportKind } from '../contract/reporting.ts';
import { checkKinds } from './nightly.ts';
import { runBounded } from '../lib/pool.ts';
import { checkInt, defaultRunId, recorded } from './run.ts';
import { laterInstant, utcDay, windowComplete } from '../lib/utc.ts';
import { backfillTasks, taskId, type WindowTask } from './windows.ts';

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
  carried?: Partial<BackfillCounts>;
  /** Fetch every window of the range again, also those recorded as done (the loads stay idempotent). Default false. */
  force?: boolean;
}

export interface BackfillCounts {
  planned: number;
  loaded: number;
  skipped: number;
  records: number;
  quarantined: number;
  /** Windows loaded but left open: the service answered before their end, so they are not recorded as done. */
  open: number;
  /** The first OPEN_LISTED of them, as task ids (`kind:from..to`). */
  openWindows: string[];
  /** The latest time the service answered a fetch of this run (ISO UTC); null before the first fetch. */
  serviceTime: string | null;
}

/** Open windows named in a result (the count has them all): results stay small in Temporal's history. */
export const OPEN_LISTED = 20;

export type BackfillResult =
  | ({ status: 'done'; runId: string; ratios: ComputeRatiosResult; snapshot: PublishResult; warning?: string } & BackfillCounts)
  /** Paused so the driver can continue as new with `next` (Temporal history limits). */
  | ({ status: 'continue'; runId: string; next: BackfillInput } & BackfillCounts);

export type BackfillActs = ReportActivities & WindowStateActivities & PipelineActivities & { now(): string };

/** Windows per run of `cbp schedule backfill --workflow` unless told: a run's history stays far below Temporal's limits. */
export const DEFAULT_WINDOWS_PER_RUN = 200;

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
  const force = input.force === true;
  const counts: BackfillCounts = {
    planned: tasks.length,
    loaded: 0,
    skipped: 0,
    records: 0,
    quarantined: 0,
    open: 0,
    ...input.carried,
    openWindows: [...(input.carried?.openWindows ?? [])],
    serviceTime: input.carried?.serviceTime ?? null,
  };

  return recorded<BackfillResult>(acts, { runId, workflow: 'backfill', startedAt, asOf: `${utcDay(input.to)}T23:59:59Z` }, async () => {
    const todo = force ? tasks : await withoutFinished(tasks, acts);
    counts.skipped += tasks.length - todo.length;

    let started = 0;
    const shouldStop = () => (windowsPerRun !== undefined && started >= windowsPerRun) || (hooks.shouldPause?.() ?? false);
    const outcome = await runBounded(
      todo,
      parallelism,
      async (t) => {
        started += 1;
        const r: FetchAndLoadResult = await acts.fetchAndLoad({ kind: t.kind, window: t.window, runId });
        // An older worker's result has no service time: the workflow's clock stands in (as "else the local clock").
        const serviceTime = r.serviceTime ?? acts.now();
        // The activity records it as done only when complete, by the same rule (windowComplete).
        await acts.markWindowDone(t.kind, t.window, { ...r, serviceTime });
        counts.loaded += 1;
        counts.records += r.records;
        counts.quarantined += r.quarantined;
        counts.serviceTime = laterInstant(counts.serviceTime, serviceTime);
        if (!windowComplete(t.window, serviceTime)) {
          counts.open += 1;
          if (counts.openWindows.length < OPEN_LISTED) counts.openWindows.push(taskId(t));
        }
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
    const warning = openWarning(counts);
    return {
      result: { status: 'done', runId, ratios, snapshot, ...counts, ...(warning ? { warning } : {}) },
      summary: {
        ...counts,
        from: utcDay(input.from),
        to: utcDay(input.to),
        kinds,
        windowDays,
        ...(force ? { force } : {}),
        snapshot: snapshot.path,
        ...(warning ? { warning } : {}),
      },
    };
  });
}

/** What a run that left windows open says about them (undefined when it left none). */
export function openWarning(c: Pick<BackfillCounts, 'open' | 'openWindows' | 'serviceTime'>): string | undefined {
  if (c.open === 0) return undefined;
  const more = c.open > c.openWindows.length ? `, and ${c.open - c.openWindows.length} more` : '';
  return (
    `${c.open} window${c.open === 1 ? '' : 's'} reach${c.open === 1 ? 'es' : ''} past the service's clock (${c.serviceTime ?? 'unknown'}): ` +
    `loaded with the data so far but not recorded as done, so the next run fetches ${c.open === 1 ? 'it' : 'them'} again ` +
    `(${[...c.openWindows].sort().join(', ')}${more})`
  );
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
