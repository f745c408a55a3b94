// What `cbp status` reads from the store (or the snapshot): the run log, the loads log, the quarantine and the
// alert levels in force.
// Each reader gives nothing, rather than failing, on an older store or snapshot that lacks its table.
import { latestMartMonth } from './ratios-shown.ts';
import type { Store } from './db.ts';

type ReadStore = Pick<Store, 'all' | 'columns' | 'mapRows'>;

async function rowsOrNone<T>(store: ReadStore, sql: string, params?: Record<string, string>): Promise<T[]> {
  try {
    return await store.all<T>(sql, params);
  } catch {
    // An older store or snapshot without this table: nothing to show for it.
    return [];
  }
}

export interface RunLine {
  run_id: string;
  workflow: string;
  status: string;
  started_at: string;
  finished_at: string;
  as_of: string | null;
  error: string | null;
}

/** The last `limit` runs recorded (at least one), latest finished first, times as UTC ISO 8601 (seconds). */
export async function recentRuns(store: ReadStore, limit: number): Promise<RunLine[]> {
  return rowsOrNone<RunLine>(
    store,
    `SELECT run_id, workflow, status, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ') AS started_at, strftime(finished_at, '%Y-%m-%dT%H:%M:%SZ') AS finished_at,
            strftime(as_of, '%Y-%m-%dT%H:%M:%SZ') AS as_of, error
       FROM runs ORDER BY runs.finished_at DESC, runs.started_at DESC LIMIT ${Math.max(1, Math.trunc(limit))}`,
  );
}

/** Per report kind with loads: the latest load (UTC ISO 8601, seconds) and how many loads there were. */
export async function loadsByKind(store: ReadStore): Promise<Array<{ kind: string; last_loaded_at: string | null; loads: number }>> {
  const rows = await rowsOrNone<{ kind: string; last_loaded_at: string | null; loads: number | string }>(
    store,
    `SELECT kind, strftime(max(last_loaded_at), '%Y-%m-%dT%H:%M:%SZ') AS last_loaded_at, count(*) AS loads FROM loads GROUP BY kind`,
  );
  return rows.map((r) => ({ kind: r.kind, last_loaded_at: r.last_loaded_at, loads: Number(r.loads) }));
}

/** Quarantined rows per report kind, by kind. */
export async function quarantineByKind(store: ReadStore): Promise<Array<{ kind: string; rows: number }>> {
  const rows = await rowsOrNone<{ kind: string; rows: number | string }>(store, 'SELECT kind, count(*) AS rows FROM quarantine GROUP BY kind ORDER BY kind');
  return rows.map((r) => ({ kind: r.kind, rows: Number(r.rows) }));
}

/**
 * The alerts in force: the level each series (mid × network × program) reached in the latest month evaluated
 * for it (the highest rank, should it hold two), by mid, network, program.
 */
export async function alertsInForce(store: ReadStore): Promise<Array<{ mid: string; network: string; program: string; level: string; month: string; ratio: number | null }>> {
  return rowsOrNone(
    store,
    `SELECT s.mid, s.network, s.program, s.level, s.month, s.ratio FROM alert_states s
      WHERE s.status = 'reached'
        AND s.month = (SELECT max(t.month) FROM alert_states t WHERE t.mid = s.mid AND t.network = s.network AND t.program = s.program)
      QUALIFY row_number() OVER (PARTITION BY s.mid, s.network, s.program ORDER BY s.rank DESC) = 1
      ORDER BY s.mid, s.network, s.program`,
  );
}

/** A series at a level or in the watch band, as the ratio table judges it. */
export interface RatioStateLine {
  mid: string;
  network: string;
  program: string;
  metric: string;
  month: string;
  state: 'watch' | 'level';
  level: string | null;
  next_level: string | null;
  closeness: number | null;
  reason: string | null;
  region: string | null;
  region_source: string | null;
}

/**
 * The watch states and levels of the ratio table's latest month (observed rows, not
 * projections): one row per mid × network × program (its metric at a level first, then the closest), levels
 * first, then the closest to the next threshold. `month` is null when no evaluation recorded any row.
 */
export async function ratioStatesOfLatestMonth(store: ReadStore): Promise<{ month: string | null; rows: RatioStateLine[] }> {
  const month = await latestMartMonth(store).catch(() => null);
  if (month === null) return { month: null, rows: [] };
  const rows = await rowsOrNone<RatioStateLine>(
    store,
    `SELECT mid, network, program, metric, month, state, level, next_level, closeness, reason, region, region_source
       FROM mart_ratios
      WHERE month = $month AND NOT is_projection AND state IN ('watch', 'level')
      QUALIFY row_number() OVER (PARTITION BY mid, network, program ORDER BY state = 'level' DESC, closeness DESC NULLS LAST, metric) = 1
      ORDER BY state = 'level' DESC, closeness DESC NULLS LAST, mid, network, program`,
    { month },
  );
  return { month, rows: rows.map((r) => ({ ...r, closeness: r.closeness === null ? null : Number(r.closeness) })) };
}

/**
 * The series of a month the kept ratio table says are unknown (a source their figures need is not loaded), counted
 * by what is missing (missing_sources: the source and the command that loads it), most series first.
 */
export async function unknownRowsOf(store: ReadStore, month: string): Promise<{ series: number; missing: Array<{ missing: string; series: number }> }> {
  const rows = await rowsOrNone<{ missing: string; series: number | bigint }>(
    store,
    `SELECT missing, count(DISTINCT (mid, network, program))::INTEGER AS series
       FROM (SELECT mid, network, program, unnest(string_split(missing_sources, '; ')) AS missing
               FROM mart_ratios WHERE month = $month AND NOT is_projection AND state = 'unknown')
      GROUP BY missing ORDER BY series DESC, missing`,
    { month },
  );
  const [all] = await rowsOrNone<{ n: number }>(
    store,
    `SELECT count(DISTINCT (mid, network, program))::INTEGER AS n FROM mart_ratios WHERE month = $month AND NOT is_projection AND state = 'unknown'`,
    { month },
  );
  return { series: Number(all?.n ?? 0), missing: rows.map((r) => ({ missing: String(r.missing), series: Number(r.series) })) };
}

/** The service's clock as last seen: its time at our `now`, the offset from ours, and the fetch it was read at. */
export interface ServiceClock {
  now: string;
  offsetMs: number;
  seenAt: string;
}

/**
 * The service's clock now, by the offset between its time and ours at the latest report fetch (report_fetches:
 * service_time from its Date header, fetched_at ours): a sandbox's clock ends where its demo left it. Null when
 * nothing was fetched (or on a store older than migration 008): then our clock is all there is.
 */
export async function serviceClock(store: ReadStore, now: Date): Promise<ServiceClock | null> {
  const [r] = await rowsOrNone<{ service_time: string; fetched_at: string }>(
    store,
    `SELECT strftime(service_time, '%Y-%m-%dT%H:%M:%S.%gZ') AS service_time, strftime(fetched_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS fetched_at
       FROM report_fetches ORDER BY report_fetches.fetched_at DESC, report_fetches.service_time DESC LIMIT 1`,
  );
  if (!r) return null;
  const offsetMs = Date.parse(r.service_time) - Date.parse(r.fetched_at);
  if (!Number.isFinite(offsetMs)) return null;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { now: iso(now.getTime() + offsetMs), offsetMs, seenAt: iso(Date.parse(r.service_time)) };
}
