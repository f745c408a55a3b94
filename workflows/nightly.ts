// The nightly run: refresh every report over its trailing windows, then events, enrichment, ratios and
// alerts, notices, and the analysts' snapshot. Pure orchestration: time comes from the input or acts.now().
import type { ComputeRatiosResult, DeliverResult, EnrichResult, FetchAndLoadResult, IngestResult, PipelineActivities, PublishResult, ReportActivities } from '../activities/types.ts';
import { REPORT_KINDS, type ReportKind } from '../contract/reporting.ts';
import { WorkflowInputError } from './errors.ts';
import { runBounded } from '../lib/pool.ts';
import { checkInt, defaultRunId, recorded } from './run.ts';
import { laterInstant, utcDay, windowComplete } from '../lib/utc.ts';
import { nightlyTasks, taskId } from './windows.ts';

export interface NightlyInput {
  /** Nominal time the run covers (ISO UTC). Under a schedule: its scheduled time. Default: the run's start. */
  asOf?: string;
  /** Days reached back, asOf's day included. Default 60. */
  lookbackDays?: number;
  /** Days per chargebacks / prevention window. */
  windowDays: number;
  /** Default: all three. */
  kinds?: ReportKind[];
  /** Report windows fetched at once. Default 2. */
  parallelism?: number;
  runId?: string;
}

export interface NightlyResult {
  runId: string;
  asOf: string;
  /** `open`: the service answered before the window's end, so it holds the data so far (asOf's own day always). */
  windows: Array<{ task: string; records: number; quarantined: number; open?: true }>;
  /** The latest time the service answered a report fetch (ISO UTC; its Date header, else the worker's clock). */
  serviceTime: string | null;
  /** Set when the service's clock is before the day this run covers: those windows hold no data yet. */
  warning?: string;
  events: IngestResult;
  enrich: EnrichResult;
  ratios: ComputeRatiosResult;
  notices: DeliverResult;
  snapshot: PublishResult;
}

export type NightlyActs = ReportActivities & PipelineActivities & { now(): string };

export const NIGHTLY_DEFAULTS = { lookbackDays: 60, parallelism: 2 } as const;

export function checkKinds(kinds: readonly string[] | undefined): ReportKind[] {
  const list = kinds ?? [...REPORT_KINDS];
  if (list.length === 0) throw new WorkflowInputError('kinds must name at least one report kind');
  for (const k of list) {
    if (!(REPORT_KINDS as readonly string[]).includes(k)) {
      throw new WorkflowInputError(`unknown report kind ${JSON.stringify(k)}: expected chargebacks, prevention or mid_report`);
    }
  }
  return [...new Set(list)] as ReportKind[];
}

export async function nightly(input: NightlyInput, acts: NightlyActs): Promise<NightlyResult> {
  const startedAt = acts.now();
  const asOf = input.asOf ?? startedAt;
  const lookbackDays = checkInt(input.lookbackDays ?? NIGHTLY_DEFAULTS.lookbackDays, 'lookbackDays', 1);
  const windowDays = checkInt(input.windowDays, 'windowDays', 1);
  const parallelism = checkInt(input.parallelism ?? NIGHTLY_DEFAULTS.parallelism, 'parallelism', 1);
  const kinds = checkKinds(input.kinds);
  utcDay(asOf); // rejects a malformed asOf before anything runs
  const runId = input.runId ?? defaultRunId('nightly', startedAt);
  const tasks = nightlyTasks(kinds, asOf, lookbackDays, windowDays);

  return recorded(acts, { runId, workflow: 'nightly', startedAt, asOf }, async () => {
    const loads = await runBounded(tasks, parallelism, (t) => acts.fetchAndLoad({ kind: t.kind, window: t.window, runId }));
    let serviceTime: string | null = null;
    const windows = tasks.map((t, i) => {
      const r = loads.results[i] as FetchAndLoadResult;
      // An older worker's result has no service time: the workflow's clock stands in.
      const answeredAt = r.serviceTime ?? startedAt;
      serviceTime = laterInstant(serviceTime, answeredAt);
      return { task: taskId(t), records: r.records, quarantined: r.quarantined, ...(windowComplete(t.window, answeredAt) ? {} : { open: true as const }) };
    });
    const warning = aheadWarning(asOf, serviceTime, windows);
    // Events after reports: enrichment and ratios then see both sources as of the same moment.
    const events = await acts.ingestEvents();
    const enrich = await acts.enrich();
    const ratios = await acts.computeRatios({ asOf: utcDay(asOf), notify: true });
    const notices = await acts.deliverNotices();
    const snapshot = await acts.publishSnapshot();
    const result: NightlyResult = { runId, asOf, windows, serviceTime, ...(warning ? { warning } : {}), events, enrich, ratios, notices, snapshot };
    return {
      result,
      summary: {
        windows: windows.length,
        records: windows.reduce((n, w) => n + w.records, 0),
        quarantined: windows.reduce((n, w) => n + w.quarantined, 0),
        events: events.events,
        lookups: enrich.lookups,
        alerts: ratios.alerts,
        noticesSent: notices.sent,
        snapshot: snapshot.path,
        serviceTime,
        ...(warning ? { warning } : {}),
        ...(ratios.noRegion ? { noRegion: ratios.noRegion.note } : {}),
      },
    };
  });
}

/**
 * A nightly reaches past the service when the service's clock is before the day it covers (asOf's day):
 * the windows after that clock hold no data yet. asOf's own day is partial every night, which is expected
 * (the next night fetches it again) and not worth a warning.
 */
function aheadWarning(asOf: string, serviceTime: string | null, windows: NightlyResult['windows']): string | undefined {
  const day = utcDay(asOf);
  if (serviceTime === null || Date.parse(serviceTime) >= Date.parse(`${day}T00:00:00Z`)) return undefined;
  const open = windows.filter((w) => w.open).length;
  return (
    `the service's clock (${serviceTime}) is before the day this run covers (${day}): ${open} of ${windows.length} windows reach past it ` +
    `and hold only the data so far; run it again once the service has got there, or give an earlier --as-of`
  );
}
