// What `cbp run <step>` and `cbp demo` share: one store and one set of clients per run (the store has one
// writer), the real activities, the local runner, progress bars, and the summaries printed at the end.
// DuckDB, undici and the activities load when a pipeline opens: every `cbp` start imports this file through
// run.ts (cli/commands/index.ts says why).
import { Presets, SingleBar } from 'cli-progress';
import { configuredStore } from '../store/lake.ts';
import type { Logger } from 'pino';
import type { Activities, FetchAndLoadResult } from '../activities/types.ts';
import type { ActivityDeps } from '../activities/deps.ts';
import type { ServiceClients, ServiceClientsOptions } from '../client/index.ts';
import { requireSettings, type Config, type ConfigWith, type SettingKey } from '../lib/config.ts';
import type { Store } from '../store/db.ts';
import { createLocalRunner, type LocalRunner } from '../worker/local.ts';
import type { BackfillResult } from '../workflows/backfill.ts';
import type { NightlyResult } from '../workflows/nightly.ts';
import type { PushOrdersResult } from '../workflows/push-orders.ts';
import type { ReconcileResult } from '../workflows/reconcile.ts';
import type { IngestResult } from '../activities/types.ts';
import { renderTable } from './commands/sql.ts';

/** Settings each step needs; a missing one is named with every other missing one at once. */
export const STEP_SETTINGS = {
  reporting: ['reportingBaseUrl', 'reportingKey', 'companyToken'],
  events: ['eventsBaseUrl', 'authBaseUrl', 'apiSecret'],
  data: ['dataBaseUrl', 'dataUsername', 'dataPassword'],
  webhook: ['webhookUsername', 'webhookPassword'],
} as const satisfies Record<string, readonly SettingKey[]>;

type Step = keyof typeof STEP_SETTINGS;

/** requireSettings for the steps' settings and `extra`; afterwards the type says they are set. */
export function requireFor<G extends Step, K extends SettingKey = never>(
  cfg: Config,
  groups: readonly G[],
  forWhat: string,
  extra: readonly K[] = [],
): asserts cfg is ConfigWith<(typeof STEP_SETTINGS)[G][number] | K> {
  const keys = [...new Set<SettingKey>([...groups.flatMap((g) => STEP_SETTINGS[g]), ...extra])];
  requireSettings(cfg, keys, forWhat);
}

export interface Pipeline {
  store: Store;
  clients: ServiceClients;
  activities: Activities;
  runner: LocalRunner;
  close(): Promise<void>;
}

export interface PipelineOptions {
  logger?: Logger;
  /** Client options (tests: short retry sleeps). */
  clientOptions?: ServiceClientsOptions;
  /** The workflows' clock (default: the wall clock). */
  now?: () => string;
  /** Wraps the activities (progress counting, fault injection in tests). */
  wrap?: (a: Activities) => Activities;
  /** Passed to the activities: another journal (`cbp run ingest --journal`), the per-segment account of a load. */
  activityDeps?: Pick<ActivityDeps, 'journalDir' | 'onIngested'>;
}

/** Opens the store once for the whole run and builds the activities over it. */
export async function openPipeline(cfg: Config, opts: PipelineOptions = {}): Promise<Pipeline> {
  const { openStore } = await import('../store/db.ts');
  const { createServiceClients } = await import('../client/index.ts');
  const { createActivities } = await import('../activities/index.ts');
  const store = await openStore(configuredStore(cfg));
  const clients = createServiceClients(cfg, opts.clientOptions);
  const base = createActivities({ ...opts.activityDeps, config: cfg, store, clients, logger: opts.logger });
  const activities = opts.wrap ? opts.wrap(base) : base;
  const runner = createLocalRunner(activities, opts.now ? { now: opts.now } : {});
  let closed = false;
  return {
    store,
    clients,
    activities,
    runner,
    async close() {
      if (closed) return;
      closed = true;
      try {
        await clients.close();
      } finally {
        store.close();
      }
    },
  };
}

/** Counts report windows as they finish (for a progress bar). */
export function countWindows(onDone: (r: FetchAndLoadResult) => void): (a: Activities) => Activities {
  return (a) => ({
    ...a,
    async fetchAndLoad(input) {
      const r = await a.fetchAndLoad(input);
      onDone(r);
      return r;
    },
  });
}

export interface Progress {
  start(total: number, label: string): void;
  tick(): void;
  stop(): void;
}

/** A progress bar on stderr when stdout is a terminal and JSON was not asked for; otherwise nothing. */
export function progressBar(json: boolean | undefined, stream: NodeJS.WriteStream = process.stderr): Progress {
  const on = !json && process.stdout.isTTY === true && stream.isTTY === true;
  let bar: SingleBar | undefined;
  return {
    start(total, label) {
      if (!on) return;
      bar = new SingleBar({ format: `${label} [{bar}] {value}/{total} windows | {duration}s`, stream, hideCursor: true, clearOnComplete: true }, Presets.shades_classic);
      bar.start(total, 0);
    },
    tick() {
      if (bar) {
        // The plan's size is known only inside the body: grow the total when a run does more than announced.
        if (bar.getProgress() >= 1) bar.setTotal(bar.getTotal() + 1);
        bar.increment();
      }
    },
    stop() {
      bar?.stop();
      bar = undefined;
    },
  };
}

// --- summaries ------------------------------------------------------------------------------------------

function table(rows: Array<[string, unknown]>): string {
  return renderTable(['', 'value'], rows.map(([k, v]) => [k, typeof v === 'object' && v !== null ? JSON.stringify(v) : (v as string | number | null)])).replace(/\n\(\d+ rows?\)$/, '');
}

/** The representment deadline notices a run raised, beside the ratio notices (alerts/due.ts). */
const dueNote = (n: number | undefined) => (n ? ` (+${n} due date notice${n === 1 ? '' : 's'})` : '');

export function humanNightly(r: NightlyResult): string {
  const records = r.windows.reduce((n, w) => n + w.records, 0);
  const quarantined = r.windows.reduce((n, w) => n + w.quarantined, 0);
  return [
    `nightly ${r.runId}: ok`,
    table([
      ['as of', r.asOf],
      ['report windows', r.windows.length],
      ['records loaded', records],
      ['records quarantined', quarantined],
      ['events ingested', `${r.events.events} (${r.events.duplicates} duplicates, ${r.events.quarantined} quarantined, ${r.events.failed} segments failed)`],
      ['lookups', `${r.enrich.lookups} (${r.enrich.failed} failed, retried next run)`],
      ['ratio rows judged', r.ratios.ratios],
      ['alerts firing', r.ratios.alerts],
      ...(r.ratios.unknown ? [['unknown (data missing)', `${r.ratios.unknown.series}: ${r.ratios.unknown.missing[0]}${r.ratios.unknown.missing.length > 1 ? ` (+${r.ratios.unknown.missing.length - 1} more: cbp status)` : ''}`] as [string, string]] : []),
      [
        'notices',
        r.notices.notifiers?.length === 0
          ? `${r.ratios.noticesQueued} new${dueNote(r.notices.dueQueued)}, none sent: no notifier is configured`
          : `${r.ratios.noticesQueued} queued${dueNote(r.notices.dueQueued)}, ${r.notices.sent} sent, ${r.notices.failed} pending`,
      ],
      ['service clock', r.serviceTime ?? 'n/a'],
      ['snapshot', snapshotCell(r.snapshot)],
    ]),
    ...(r.warning ? [`WARNING: ${r.warning}`] : []),
    // Alerts with nowhere to go are said where the person running cbp looks, not only in the log.
    ...(r.notices.warning ? [`WARNING: ${r.notices.warning}`] : []),
    ...(r.ratios.noRegion ? [`NOTE: ${r.ratios.noRegion.note}; cbp ratios shows each MID's region`] : []),
  ].join('\n');
}

export function humanBackfill(r: BackfillResult): string {
  const rows: Array<[string, unknown]> = [
    ['windows planned', r.planned],
    ['windows loaded', r.loaded],
    ['already done (skipped)', r.skipped],
    ['records loaded', r.records],
    ['records quarantined', r.quarantined],
    ['left open (not done)', r.open ?? 0],
    ['service clock', r.serviceTime ?? 'n/a'],
  ];
  if (r.status === 'done') rows.push(['alerts firing', r.ratios.alerts], ['snapshot', snapshotCell(r.snapshot)]);
  return [`backfill ${r.runId}: ${r.status}`, table(rows), ...(r.status === 'done' && r.warning ? [`WARNING: ${r.warning}`] : [])].join('\n');
}

function snapshotCell(s: { path: string; published?: boolean }): string {
  return s.published === false ? `${s.path} (already up to date)` : s.path;
}

export function humanIngestResult(r: IngestResult): string {
  return `ingested ${r.events} new events from ${r.segments} segments (${r.duplicates} duplicates, ${r.quarantined} quarantined, ${r.failed} failed)`;
}

export function humanReconcile(r: ReconcileResult): string {
  const lines = [`subscriptions ${r.runId}: service clock ${r.serviceTime}`];
  const rows: Array<[string, unknown]> = [
    ['created', r.created.map((c) => `${c.event_type} (${c.reason})`).join(', ') || 0],
    ['updated', r.updated.map((u) => `${u.event_type} [${u.fields.join(',')}]`).join(', ') || 0],
    ['deleted', r.deleted.map((d) => `${d.event_type} (${d.reason})`).join(', ') || 0],
    ['unchanged', r.unchanged],
    ['vetting pending', r.pendingVetting.map((v) => `${v.event_type} (${v.ageHours.toFixed(1)} h)`).join(', ') || 0],
    ['vetting failed', r.failedVetting.map((v) => `${v.event_type} (${v.ageHours.toFixed(1)} h)`).join(', ') || 0],
    ['left alone (not cbp\'s)', r.leftAlone.length],
  ];
  lines.push(table(rows));
  if (r.leftAlone.length > 0) {
    // Another consumer's subscriptions (a CRM, say): shown so nobody wonders why cbp did not touch them.
    lines.push("left alone: other consumers' subscriptions, never changed by cbp (only the url's host is shown)");
    lines.push(
      renderTable(['guid', 'event type', 'url host', 'active'], r.leftAlone.map((f) => [f.guid, f.event_type, f.url_host, f.active ? 'yes' : 'no'])).replace(/\n\(\d+ rows?\)$/, ''),
    );
  }
  return lines.join('\n');
}

/** `cbp run orders`: the run's counts with the orders and lines that need attention (read from the store after the run). */
export interface PushOrdersReport extends PushOrdersResult {
  /** Orders this run had refused by the service, at most ORDER_DETAIL_LIMIT (`rejected` counts them all). */
  rejectedOrders: Array<{ order_id: string; http_status: number | null; message: string | null }>;
  /** Invalid lines this run read, at most ORDER_DETAIL_LIMIT (`invalid` counts them all). */
  invalidLines: Array<{ line: number; order_id: string | null; message: string }>;
}

export const ORDER_DETAIL_LIMIT = 100;
const ORDER_LINES_SHOWN = 20;

export function humanPush(r: PushOrdersReport): string {
  const lines = [
    `orders ${r.runId}: ${r.status}${r.read === 0 ? ` (no records in ${r.source})` : ''}`,
    table([
      ['records read', r.read],
      ['pushed', `${r.pushed} (${r.new} new, ${r.changed} changed${r.retried ? `, ${r.retried} refused before and sent again` : ''})`],
      ['unchanged (not sent)', r.unchanged],
      ['refused before, unchanged (not sent)', r.stillRejected],
      ['rejected by the service', r.rejected],
      ['invalid in the file', r.invalid],
      ['listed again later in the file', r.repeated],
    ]),
  ];
  const more = (shown: number, total: number) => (total > shown ? [`  ... and ${total - shown} more (cbp status lists them; all are in the store: order_pushes, order_rejects)`] : []);
  const rejected = r.rejectedOrders.slice(0, ORDER_LINES_SHOWN);
  for (const o of rejected) lines.push(`  rejected ${o.order_id} (HTTP ${o.http_status ?? '?'}): ${o.message ?? ''}`);
  lines.push(...more(rejected.length, r.rejected));
  const invalid = r.invalidLines.slice(0, ORDER_LINES_SHOWN);
  for (const l of invalid) lines.push(`  invalid line ${l.line}${l.order_id ? ` (${l.order_id})` : ''}: ${l.message}`);
  lines.push(...more(invalid.length, r.invalid));
  if (r.invalid) lines.push('Invalid lines were not sent: fix them in the file (docs/orders.md) and run again.');
  if (r.rejected) lines.push("Rejected orders are not sent again until they change: fix them in the file and run again, or send them as they are with --retry-rejected.");
  if (r.stillRejected) lines.push(`${r.stillRejected} order(s) the service refused in an earlier run are unchanged and were not sent: fix them, or send them again with --retry-rejected (cbp status lists them).`);
  return lines.join('\n');
}
