// cbp status: what an operator looks at first. The last runs, the report windows of the default lookback
// (loaded or still pending), the freshest data per report kind, journal segments waiting for ingest,
// quarantined rows per kind and the alerts in force. Reads the store read-only; when a writer holds it
// (a run or the worker), reads the published snapshot instead and says so.
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import type { Config } from '../../lib/config.ts';
import type { Store } from '../../store/db.ts';
import { REPORT_KINDS, parseInstant } from '../options.ts';
import { renderTable } from './sql.ts';

export interface StatusReport {
  source: 'store' | 'snapshot' | 'none';
  path: string | null;
  note?: string;
  asOf: string;
  runs: Array<{ run_id: string; workflow: string; status: string; started_at: string; finished_at: string; as_of: string | null; error: string | null }>;
  windows: { lookbackDays: number; windowDays: number; done: number; pending: Array<{ kind: string; window: string }> };
  freshest: Array<{ kind: string; latest_window_end: string | null; last_loaded_at: string | null; loads: number }>;
  journal: { dir: string; waiting: number; segments: string[] };
  quarantine: Array<{ kind: string; rows: number }>;
  alerts: Array<{ mid: string; network: string; program: string; level: string; month: string; ratio_pct: number | null }>;
  /**
   * Orders whose last push the service refused (`rejected` counts them all; `recentRejected` holds the most
   * recent STATUS_REJECTED_LIMIT), and invalid lines of order files as last read.
   */
  orders: { rejected: number; recentRejected: Array<{ order_id: string; http_status: number | null; message: string | null; at: string; run_id: string | null }>; invalidLines: number };
}

/** Rejected orders listed by `cbp status --json` (most recent first); the human view shows the first STATUS_REJECTED_SHOWN. */
export const STATUS_REJECTED_LIMIT = 100;
const STATUS_REJECTED_SHOWN = 10;

async function tryAll<T>(store: Store, sql: string): Promise<T[]> {
  try {
    return await store.all<T>(sql);
  } catch {
    // An older store or snapshot without this table: nothing to show for it.
    return [];
  }
}

async function openForStatus(cfg: Config): Promise<{ store?: Store; source: StatusReport['source']; path: string | null; note?: string }> {
  const { openStore } = await import('../../store/db.ts');
  // The snapshot opens as every reader's does (store/analyst.ts: read-only, no file access, settings locked).
  const { openAnalystSession } = await import('../../store/analyst.ts');
  const { StoreUnavailableError } = await import('../../store/errors.ts');
  if (existsSync(cfg.dbPath)) {
    try {
      return { store: await openStore({ dbPath: cfg.dbPath, readOnly: true, memoryLimit: cfg.storeMemoryLimit }), source: 'store', path: cfg.dbPath };
    } catch (e) {
      if (!(e instanceof StoreUnavailableError)) throw e;
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

export async function collectStatus(cfg: Config, opts: { now?: Date; lookbackDays?: number; windowDays?: number; runs?: number } = {}): Promise<StatusReport> {
  const now = opts.now ?? new Date();
  const lookbackDays = opts.lookbackDays ?? (typeof cfg.lookbackDays === 'number' ? cfg.lookbackDays : 60);
  const windowDays = opts.windowDays ?? (typeof cfg.windowDays === 'number' ? cfg.windowDays : 7);
  const { listClosedSegments } = await import('../../webhook/journal.ts');
  const { dayNumber, nightlyTasks, windowId } = await import('../../workflows/windows.ts');
  const journalDir = cfg.journalDir;
  const segments = existsSync(journalDir) ? listClosedSegments(journalDir) : [];
  const opened = await openForStatus(cfg);
  const report: StatusReport = {
    source: opened.source,
    path: opened.path,
    ...(opened.note ? { note: opened.note } : {}),
    asOf: now.toISOString().replace(/\.\d{3}Z$/, 'Z'),
    runs: [],
    windows: { lookbackDays, windowDays, done: 0, pending: [] },
    freshest: [],
    journal: { dir: journalDir, waiting: segments.length, segments },
    quarantine: [],
    alerts: [],
    orders: { rejected: 0, recentRejected: [], invalidLines: 0 },
  };
  const tasks = nightlyTasks(REPORT_KINDS, report.asOf, lookbackDays, windowDays);
  const store = opened.store;
  if (!store) {
    report.windows.pending = tasks.map((t) => ({ kind: t.kind, window: windowId(t.window) }));
    return report;
  }
  try {
    report.runs = await tryAll(
      store,
      `SELECT run_id, workflow, status, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ') AS started_at, strftime(finished_at, '%Y-%m-%dT%H:%M:%SZ') AS finished_at,
              strftime(as_of, '%Y-%m-%dT%H:%M:%SZ') AS as_of, error
         FROM runs ORDER BY finished_at DESC LIMIT ${Math.max(1, opts.runs ?? 10)}`,
    );
    // A window counts as done when every one of its days lies in a window some load covered (nightly windows
    // shift by a day each night, so their ids never repeat).
    const covered = await tryAll<{ kind: string; s: string; e: string }>(
      store,
      `SELECT kind, strftime(window_start, '%Y-%m-%d') AS s, strftime(window_end, '%Y-%m-%d') AS e FROM loads WHERE window_start IS NOT NULL
       UNION SELECT kind, strftime(window_start, '%Y-%m-%d'), strftime(window_end, '%Y-%m-%d') FROM windows_done`,
    );
    const byKind = new Map<string, Array<[number, number]>>();
    for (const c of covered) {
      const list = byKind.get(c.kind) ?? [];
      list.push([dayNumber(c.s), dayNumber(c.e)]);
      byKind.set(c.kind, list);
    }
    for (const t of tasks) {
      const spans = byKind.get(t.kind) ?? [];
      let ok = true;
      for (let d = dayNumber(t.window.from); d <= dayNumber(t.window.to) && ok; d++) ok = spans.some(([a, b]) => a <= d && d <= b);
      if (ok) report.windows.done++;
      else report.windows.pending.push({ kind: t.kind, window: windowId(t.window) });
    }
    const fresh = await tryAll<{ kind: string; latest_window_end: string | null; last_loaded_at: string | null; loads: number | string }>(
      store,
      `SELECT kind, strftime(max(window_end), '%Y-%m-%d') AS latest_window_end, strftime(max(last_loaded_at), '%Y-%m-%dT%H:%M:%SZ') AS last_loaded_at, count(*) AS loads
         FROM loads GROUP BY kind`,
    );
    report.freshest = REPORT_KINDS.map((k) => {
      const f = fresh.find((r) => r.kind === k);
      return { kind: k, latest_window_end: f?.latest_window_end ?? null, last_loaded_at: f?.last_loaded_at ?? null, loads: Number(f?.loads ?? 0) };
    });
    report.quarantine = (await tryAll<{ kind: string; rows: number | string }>(store, 'SELECT kind, count(*) AS rows FROM quarantine GROUP BY kind ORDER BY kind')).map((r) => ({
      kind: r.kind,
      rows: Number(r.rows),
    }));
    // In force: the level each series reached in the latest month evaluated for it.
    report.alerts = (
      await tryAll<{ mid: string; network: string; program: string; level: string; month: string; ratio: number | null }>(
        store,
        `SELECT s.mid, s.network, s.program, s.level, s.month, s.ratio FROM alert_states s
          WHERE s.status = 'reached'
            AND s.month = (SELECT max(t.month) FROM alert_states t WHERE t.mid = s.mid AND t.network = s.network AND t.program = s.program)
          QUALIFY row_number() OVER (PARTITION BY s.mid, s.network, s.program ORDER BY s.rank DESC) = 1
          ORDER BY s.mid, s.network, s.program`,
      )
    ).map((a) => ({ mid: a.mid, network: a.network, program: a.program, level: a.level, month: a.month, ratio_pct: a.ratio === null ? null : Math.round(Number(a.ratio) * 10_000) / 100 }));
    try {
      const { invalidOrderLines, rejectedOrders } = await import('../../store/orders.ts');
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

export function humanStatus(r: StatusReport): string {
  const out: string[] = [];
  out.push(`cbp status as of ${r.asOf} — reading the ${r.source === 'none' ? 'nothing (no store)' : `${r.source} ${r.path}`}`);
  if (r.note) out.push(`note: ${r.note}`);
  out.push('', 'Last runs:');
  out.push(r.runs.length ? renderTable(['run', 'workflow', 'status', 'finished', 'error'], r.runs.map((x) => [x.run_id, x.workflow, x.status, x.finished_at, x.error])) : '  (none recorded)');
  out.push('', `Report windows of the last ${r.windows.lookbackDays} days (${r.windows.windowDays}-day windows, MID report by month): ${r.windows.done} loaded, ${r.windows.pending.length} pending`);
  for (const p of r.windows.pending.slice(0, 12)) out.push(`  pending ${p.kind} ${p.window}`);
  if (r.windows.pending.length > 12) out.push(`  ... and ${r.windows.pending.length - 12} more`);
  out.push('', 'Freshest data per report kind:');
  out.push(renderTable(['kind', 'latest window end', 'last loaded', 'loads'], r.freshest.map((f) => [f.kind, f.latest_window_end, f.last_loaded_at, f.loads])));
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
  out.push('', 'Alerts in force:');
  out.push(r.alerts.length ? renderTable(['mid', 'network', 'program', 'level', 'month', 'ratio %'], r.alerts.map((a) => [a.mid, a.network, a.program, a.level, a.month, a.ratio_pct])) : '  none');
  return out.join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('status')
    .description('What ran, what is loaded or pending, journal backlog, quarantine and alerts in force (reads the store read-only, or the snapshot)')
    .option('--as-of <iso>', 'judge pending windows as of this time (default: now; e.g. the sandbox clock)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { asOf?: string; json?: boolean }) => {
      const at = o.asOf === undefined ? new Date() : new Date(parseInstant('--as-of', o.asOf));
      const r = await collectStatus(ctx.config(), { now: at });
      ctx.out(r, humanStatus, o.json);
    });
}
