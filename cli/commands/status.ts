// cbp status: what an operator looks at first. The last runs, the report windows of the default lookback
// (loaded or still pending), the freshest data per report kind, journal segments waiting for ingest,
// quarantined rows per kind, and the levels and watch states of the latest month evaluated (the alerts in force
// where no evaluation explained its rows yet). Reads the store read-only; when a writer holds it
// (a run or the worker), reads the published snapshot instead and says so.
import { existsSync } from 'node:fs';
import { configuredLake, lakeLabel } from '../../store/lake.ts';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import type { Config } from '../../lib/config.ts';
import type { Store } from '../../store/db.ts';
import { alertsInForce, serviceClock, loadsByKind, quarantineByKind, ratioStatesOfLatestMonth, recentRuns, unknownRowsOf, type RatioStateLine } from '../../store/status.ts';
import { martFreshness } from '../../store/ratio-mart.ts';
import { StoreHeldError } from '../../store/errors.ts';
import { sameVersion, storeVersion } from '../../store/generation.ts';
import { invalidOrderLines, rejectedOrders } from '../../store/orders.ts';
import { coverageSpans, spanCoveredTo } from '../../store/windows.ts';
import { listClosedSegments } from '../../lib/journal-files.ts';
import { nightlyTasks } from '../../workflows/windows.ts';
import { dayNumber, windowId } from '../../lib/utc.ts';
import { REPORT_KINDS } from '../../contract/reporting.ts';
import { parseInstant } from '../options.ts';
import { renderTable } from './sql.ts';

export interface StatusReport {
  source: 'store' | 'snapshot' | 'none';
  path: string | null;
  note?: string;
  asOf: string;
  /**
   * Whose clock asOf is: `service` (ours moved by the offset between the service's clock and ours at the latest
   * report fetch, as windows are judged: a sandbox's clock ends where its demo left it), `local` (nothing fetched
   * yet) or `given` (--as-of). `offsetSeconds`: the service's clock minus ours, when known.
   */
  clock: { judgedBy: 'service' | 'local' | 'given'; localNow: string; offsetSeconds: number | null };
  runs: Array<{ run_id: string; workflow: string; status: string; started_at: string; finished_at: string; as_of: string | null; error: string | null }>;
  windows: { lookbackDays: number; windowDays: number; done: number; pending: Array<{ kind: string; window: string }> };
  /**
   * Per report kind: `covered_to`, the latest instant the loaded data covers (a fetched window counts up to
   * the service's clock when it answered, never past it; a window recorded as done, whole), whatever range
   * was asked for; null when nothing is known to be covered.
   */
  freshest: Array<{ kind: string; covered_to: string | null; last_loaded_at: string | null; loads: number }>;
  /**
   * The analysts' snapshot against the store: `behind` unless it holds this store (`fromStore`, the id of
   * the store it copies, equal to `storeId`) at this store's generation; true when none is published; null
   * when it cannot be told (the store is held by a writer, or has no generation counter). A snapshot of a
   * store since started over (deleted, replaced) is behind whatever its generation.
   */
  snapshot: {
    /** null: the store is a lake, read in place (it has no snapshot file) */
    path: string | null;
    exists: boolean;
    generation: number | null;
    storeGeneration: number | null;
    fromStore: string | null;
    storeId: string | null;
    behind: boolean | null;
  };
  journal: { dir: string; waiting: number; segments: string[] };
  quarantine: Array<{ kind: string; rows: number }>;
  alerts: Array<{ mid: string; network: string; program: string; level: string; month: string; ratio_pct: number | null }>;
  /**
   * The ratio table's latest month (null: none yet), whether it is the month to date (the month of asOf), and its
   * series at a level or in the watch band, levels first, then
   * the closest to the next threshold; `level` and `watch` count them.
   */
  ratioStates: {
    month: string | null; monthToDate: boolean; level: number; watch: number; rows: RatioStateLine[];
    /** series whose figures miss a source (state unknown), and what is missing with the command that loads it */
    unknown: number; missing: Array<{ missing: string; series: number }>;
    /** why the kept ratio table is behind the data, and what to run; null when current */
    behind: string | null;
  };
  /**
   * Orders whose last push the service refused (`rejected` counts them all; `recentRejected` holds the most
   * recent STATUS_REJECTED_LIMIT), and invalid lines of order files as last read.
   */
  orders: { rejected: number; recentRejected: Array<{ order_id: string; http_status: number | null; message: string | null; at: string; run_id: string | null }>; invalidLines: number };
}

/** Rejected orders listed by `cbp status --json` (most recent first); the human view shows the first STATUS_REJECTED_SHOWN. */
export const STATUS_REJECTED_LIMIT = 100;
const STATUS_REJECTED_SHOWN = 10;
/** Series at a level or watch the human view lists (levels first, then the closest to the next threshold). */
const STATUS_STATES_SHOWN = 20;

export async function openForStatus(cfg: Config): Promise<{ store?: Store; source: StatusReport['source']; path: string | null; note?: string }> {
  const { openStore } = await import('../../store/db.ts');
  // The snapshot opens as every reader's does (store/analyst.ts: read-only, no file access, settings locked).
  const { openAnalystSession, openLakeAnalystSession } = await import('../../store/analyst.ts');
  // A lake: its latest committed snapshot, read while the workers write.
  const lake = configuredLake(cfg);
  if (lake) return { store: await openLakeAnalystSession(lake, { memoryLimit: cfg.storeMemoryLimit }), source: 'store', path: lakeLabel(lake) };
  if (existsSync(cfg.dbPath)) {
    try {
      return { store: await openStore({ dbPath: cfg.dbPath, readOnly: true, memoryLimit: cfg.storeMemoryLimit, lockWaitMs: 0 }), source: 'store', path: cfg.dbPath };
    } catch (e) {
      if (!(e instanceof StoreHeldError)) throw e;
      if (existsSync(cfg.snapshotPath)) {
        return {
          store: await openAnalystSession(cfg.snapshotPath, { memoryLimit: cfg.storeMemoryLimit }),
          source: 'snapshot',
          path: cfg.snapshotPath,
          note: `the store ${cfg.dbPath} is held by a writer (a run or the worker): showing the published snapshot, as of its last publish`,
        };
      }
      return { source: 'none', path: null, note: `the store ${cfg.dbPath} is held by a writer and no snapshot is published yet` };
    }
  }
  if (existsSync(cfg.snapshotPath)) {
    return { store: await openAnalystSession(cfg.snapshotPath, { memoryLimit: cfg.storeMemoryLimit }), source: 'snapshot', path: cfg.snapshotPath, note: `no store at ${cfg.dbPath}: showing the snapshot` };
  }
  return { source: 'none', path: null, note: `no store at ${cfg.dbPath} yet: run \`cbp run backfill\` or \`cbp run nightly\` first` };
}

/** `now`: judge as of this instant (--as-of); without it, by the service's clock as last seen (`localNow`: our clock, for tests). */
export async function collectStatus(
  cfg: Config,
  opts: { now?: Date; localNow?: Date; lookbackDays?: number; windowDays?: number; runs?: number } = {},
): Promise<StatusReport> {
  const localNow = opts.localNow ?? new Date();
  const lookbackDays = opts.lookbackDays ?? cfg.lookbackDays;
  const windowDays = opts.windowDays ?? cfg.windowDays;
  const journalDir = cfg.journalDir;
  const segments = existsSync(journalDir) ? listClosedSegments(journalDir) : [];
  const opened = await openForStatus(cfg);
  const service = opts.now || !opened.store ? null : await serviceClock(opened.store, localNow);
  const now = opts.now ?? (service ? new Date(service.now) : localNow);
  const report: StatusReport = {
    source: opened.source,
    path: opened.path,
    ...(opened.note ? { note: opened.note } : {}),
    asOf: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    clock: {
      judgedBy: opts.now ? 'given' : service ? 'service' : 'local',
      localNow: localNow.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      offsetSeconds: service ? Math.round(service.offsetMs / 1000) : null,
    },
    runs: [],
    windows: { lookbackDays, windowDays, done: 0, pending: [] },
    freshest: [],
    journal: { dir: journalDir, waiting: segments.length, segments },
    quarantine: [],
    alerts: [],
    ratioStates: { month: null, monthToDate: false, level: 0, watch: 0, rows: [], unknown: 0, missing: [], behind: null },
    orders: { rejected: 0, recentRejected: [], invalidLines: 0 },
    snapshot: { path: cfg.snapshotPath, exists: existsSync(cfg.snapshotPath), generation: null, storeGeneration: null, fromStore: null, storeId: null, behind: null },
  };
  const tasks = nightlyTasks(REPORT_KINDS, report.asOf, lookbackDays, windowDays);
  const store = opened.store;
  if (!store) {
    report.windows.pending = tasks.map((t) => ({ kind: t.kind, window: windowId(t.window) }));
    return report;
  }
  try {
    report.runs = await recentRuns(store, opts.runs ?? 10);
    // A window counts as done when every one of its days lies in a span of loaded data that covers the whole
    // day: a fetch covers a day only if the service answered after it ended (nightly windows shift by a day
    // each night, so their ids never repeat).
    let spans: Awaited<ReturnType<typeof coverageSpans>> = [];
    try {
      spans = await coverageSpans(store);
    } catch {
      // A store or snapshot older than migration 008: nothing is known to be covered.
    }
    const byKind = new Map<string, Array<[number, number]>>();
    const coveredTo = new Map<string, string>();
    for (const c of spans) {
      const to = spanCoveredTo(c);
      const prev = coveredTo.get(c.kind);
      if (!prev || Date.parse(to) > Date.parse(prev)) coveredTo.set(c.kind, to);
      // Whole days only: the last one whose final second the data reaches.
      const lastWhole = Date.parse(to) >= Date.parse(`${c.end}T23:59:59Z`) ? dayNumber(c.end) : dayNumber(to) - 1;
      if (lastWhole < dayNumber(c.start)) continue;
      const list = byKind.get(c.kind) ?? [];
      list.push([dayNumber(c.start), lastWhole]);
      byKind.set(c.kind, list);
    }
    for (const t of tasks) {
      const spans = byKind.get(t.kind) ?? [];
      let ok = true;
      for (let d = dayNumber(t.window.from); d <= dayNumber(t.window.to) && ok; d++) ok = spans.some(([a, b]) => a <= d && d <= b);
      if (ok) report.windows.done++;
      else report.windows.pending.push({ kind: t.kind, window: windowId(t.window) });
    }
    const fresh = await loadsByKind(store);
    report.freshest = REPORT_KINDS.map((k) => {
      const f = fresh.find((r) => r.kind === k);
      return { kind: k, covered_to: coveredTo.get(k) ?? null, last_loaded_at: f?.last_loaded_at ?? null, loads: f?.loads ?? 0 };
    });
    // A lake has no snapshot file: every read is of one committed snapshot of the lake itself.
    if (!configuredLake(cfg)) report.snapshot = await snapshotState(store, opened.source, cfg.snapshotPath);
    else report.snapshot = { ...report.snapshot, path: null, exists: false };
    report.quarantine = await quarantineByKind(store);
    // In force: the level each series reached in the latest month evaluated for it.
    report.alerts = (await alertsInForce(store)).map((a) => ({ mid: a.mid, network: a.network, program: a.program, level: a.level, month: a.month, ratio_pct: a.ratio === null ? null : Math.round(Number(a.ratio) * 10_000) / 100 }));
    const states = await ratioStatesOfLatestMonth(store);
    report.ratioStates = {
      month: states.month,
      monthToDate: states.month !== null && states.month === report.asOf.slice(0, 7),
      level: states.rows.filter((x) => x.state === 'level').length,
      watch: states.rows.filter((x) => x.state === 'watch').length,
      rows: states.rows,
      ...(states.month === null ? { unknown: 0, missing: [] } : await unknownRowsOf(store, states.month).then((u) => ({ unknown: u.series, missing: u.missing }))),
      behind: await martFreshness(store).then((f) => f.behind, () => null),
    };
    try {
      const rejected = await rejectedOrders(store, { limit: STATUS_REJECTED_LIMIT });
      const invalid = await invalidOrderLines(store, { limit: 0 });
      report.orders = { rejected: rejected.total, recentRejected: rejected.orders, invalidLines: invalid.total };
    } catch {
      // An older store or snapshot without the order tables: nothing to show for them.
    }
  } finally {
    store.close();
  }
  return report;
}

/** The snapshot's store id and generation against the store's: the rule of the publish step (sameVersion). */
async function snapshotState(store: Store, source: StatusReport['source'], snapshotPath: string): Promise<StatusReport['snapshot']> {
  const { snapshotFileGeneration } = await import('../../store/snapshot.ts');
  const exists = existsSync(snapshotPath);
  const unknown = { storeId: null, generation: null };
  if (source === 'snapshot') {
    // The store is held by a writer: only the snapshot's own version can be read.
    const own = await storeVersion(store).catch(() => unknown);
    return { path: snapshotPath, exists, generation: own.generation, storeGeneration: null, fromStore: own.storeId, storeId: null, behind: null };
  }
  const current = await storeVersion(store).catch(() => unknown);
  // Read through an instance of its own: a reader's session may not attach files.
  const snap = await snapshotFileGeneration(snapshotPath);
  const behind = !snap.exists ? true : current.generation === null ? null : !sameVersion(current, snap);
  return { path: snapshotPath, exists: snap.exists, generation: snap.generation, storeGeneration: current.generation, fromStore: snap.storeId, storeId: current.storeId, behind };
}

function snapshotLine(s: StatusReport['snapshot']): string {
  if (s.path === null) return 'Snapshot: none, the store is a lake: analysts read the lake itself (cbp sql, cbp report, any DuckDB client)';
  if (!s.exists) return `Snapshot ${s.path}: not published yet — analysts have nothing to query; run \`cbp db snapshot\``;
  const fix = 'run `cbp db snapshot` (the next run publishes it too)';
  if (s.behind === true && s.fromStore !== null && s.storeId !== null && s.fromStore !== s.storeId) {
    return (
      `Snapshot ${s.path}: a copy of ANOTHER store (store ${s.fromStore.slice(0, 8)}… at generation ${s.generation ?? 'unknown'}; ` +
      `this store is ${s.storeId.slice(0, 8)}… at generation ${s.storeGeneration ?? 'unknown'}: started over or replaced since) — ` +
      `analysts are reading data this store does not hold; ${fix}`
    );
  }
  if (s.behind === true && s.generation !== null && s.storeGeneration !== null && s.generation > s.storeGeneration) {
    return (
      `Snapshot ${s.path}: does NOT MATCH the store (generation ${s.generation}, store ${s.storeGeneration}: the store was put back ` +
      `from an older copy since) — analysts are reading data this store does not hold; ${fix}`
    );
  }
  if (s.behind === true) {
    return (
      `Snapshot ${s.path}: BEHIND the store (generation ${s.generation ?? 'unknown'}, store ${s.storeGeneration ?? 'unknown'}) — ` +
      'analysts do not see the latest data; run `cbp db snapshot` (the next run publishes it too)'
    );
  }
  if (s.behind === false) return `Snapshot ${s.path}: up to date (generation ${s.generation})`;
  return `Snapshot ${s.path}: generation ${s.generation ?? 'unknown'}; whether it is behind cannot be told while the store is held by a writer`;
}

/** Whose clock the status is judged by, when it is not ours as it stands. */
function clockNote(c: StatusReport['clock']): string {
  if (c.judgedBy !== 'service' || c.offsetSeconds === null || Math.abs(c.offsetSeconds) < 60) return '';
  const days = Math.abs(c.offsetSeconds) / 86_400;
  const gap = days >= 1 ? `${days.toFixed(1)} d` : `${Math.round(Math.abs(c.offsetSeconds) / 60)} min`;
  return ` (the service's clock: ${gap} ${c.offsetSeconds < 0 ? 'behind' : 'ahead of'} this machine's ${c.localNow}, as of the last fetch)`;
}

export function humanStatus(r: StatusReport): string {
  const out: string[] = [];
  out.push(`cbp status as of ${r.asOf}${clockNote(r.clock)} — reading the ${r.source === 'none' ? 'nothing (no store)' : `${r.source} ${r.path}`}`);
  if (r.note) out.push(`note: ${r.note}`);
  out.push('', 'Last runs:');
  out.push(r.runs.length ? renderTable(['run', 'workflow', 'status', 'finished', 'error'], r.runs.map((x) => [x.run_id, x.workflow, x.status, x.finished_at, x.error])) : '  (none recorded)');
  out.push('', `Report windows of the last ${r.windows.lookbackDays} days (${r.windows.windowDays}-day windows, MID report by month): ${r.windows.done} loaded, ${r.windows.pending.length} pending`);
  for (const p of r.windows.pending.slice(0, 12)) out.push(`  pending ${p.kind} ${p.window}`);
  if (r.windows.pending.length > 12) out.push(`  ... and ${r.windows.pending.length - 12} more`);
  out.push('', "Data covered per report kind (up to the service's clock when it answered, whatever range was asked):");
  out.push(renderTable(['kind', 'covered to', 'last loaded', 'loads'], r.freshest.map((f) => [f.kind, f.covered_to, f.last_loaded_at, f.loads])));
  out.push('', snapshotLine(r.snapshot));
  out.push('', `Journal ${r.journal.dir}: ${r.journal.waiting} sealed segment(s) waiting for ingest`);
  out.push('', `Quarantined rows: ${r.quarantine.length ? r.quarantine.map((q) => `${q.kind} ${q.rows}`).join(', ') : 'none'}`);
  out.push('', `Rejected orders (refused by the service, not sent again until changed): ${r.orders.rejected || 'none'}`);
  if (r.orders.rejected) {
    const shown = r.orders.recentRejected.slice(0, STATUS_REJECTED_SHOWN);
    out.push(renderTable(['order_id', 'status', 'reason', 'refused at'], shown.map((o) => [o.order_id, o.http_status, o.message, o.at])).replace(/\n\(\d+ rows?\)$/, ''));
    if (r.orders.rejected > shown.length) out.push(`  ... and ${r.orders.rejected - shown.length} more (--json lists the ${STATUS_REJECTED_LIMIT} most recent; all: cbp sql "SELECT * FROM order_pushes WHERE status = 'rejected'")`);
    out.push('  fix them in the order file and run `cbp run orders` again, or send them as they are with `cbp run orders --source <file> --retry-rejected`');
  }
  if (r.orders.invalidLines) out.push(`Invalid lines in order files (not sent): ${r.orders.invalidLines} (cbp sql "SELECT * FROM order_rejects")`);
  const st = r.ratioStates;
  if (st.month === null) {
    // A store no rule evaluation has explained yet (or an older one): the levels recorded by the alerts.
    out.push('', 'Alerts in force:');
    out.push(r.alerts.length ? renderTable(['mid', 'network', 'program', 'level', 'month', 'ratio %'], r.alerts.map((a) => [a.mid, a.network, a.program, a.level, a.month, a.ratio_pct])) : '  none');
  } else {
    out.push('', `Levels and watch in ${st.month} (the latest month evaluated${st.monthToDate ? ', MONTH TO DATE' : ''}): ${st.level} at a level, ${st.watch} watch`);
    if (st.rows.length) {
      const shown = st.rows.slice(0, STATUS_STATES_SHOWN);
      out.push(
        renderTable(
          ['state', 'mid', 'network', 'program', 'next', 'closeness', 'region', 'why not the next level'],
          shown.map((x) => [
            x.state === 'level' ? (x.level ?? 'level').toUpperCase() : 'watch', x.mid, x.network, x.program, x.next_level ?? 'top',
            x.closeness === null ? null : x.closeness.toFixed(2), `${x.region ?? '-'}${x.region_source === 'default' ? '*' : ''}`, x.reason,
          ]),
        ).replace(/\n\(\d+ rows?\)$/, ''),
      );
      if (st.rows.length > shown.length) out.push(`  ... and ${st.rows.length - shown.length} more (--json lists them all; cbp ratios shows every MID)`);
      if (st.rows.some((x) => x.region_source === 'default')) out.push('  * evaluated under the default region (no region of its own in the thresholds file)');
    }
    if (st.unknown) {
      out.push(`Unknown in ${st.month}: ${st.unknown} MID x program${st.unknown === 1 ? '' : 's'} cannot be judged, a source their figures need is missing (never shown as clear):`);
      for (const m of st.missing.slice(0, STATUS_STATES_SHOWN)) out.push(`  ${m.series} × ${m.missing}`);
      if (st.missing.length > STATUS_STATES_SHOWN) out.push(`  ... and ${st.missing.length - STATUS_STATES_SHOWN} more (--json lists them all)`);
    }
  }
  if (st.behind) out.push(`Ratios behind the data: ${st.behind}`);
  return out.join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('status')
    .description('What ran, what is loaded or pending, journal backlog, quarantine, and the levels and watch states of the latest month (reads the store read-only, or the snapshot)')
    .option('--as-of <iso>', "judge pending windows as of this time (default: the service's clock, as of the last report fetch; our clock before any)")
    .option('--json', 'print the result as JSON')
    .action(async (o: { asOf?: string; json?: boolean }) => {
      const at = o.asOf === undefined ? undefined : new Date(parseInstant('--as-of', o.asOf));
      const r = await collectStatus(ctx.config(), { now: at });
      ctx.out(r, humanStatus, o.json);
    });
}
