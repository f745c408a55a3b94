// Query helpers over the ratio views (sql/views/40_ratios.sql, 41_ratio_quality.sql).
import type { Params, Store } from './db.ts';
import type { RatioRow } from '../contract/ratios.ts';
import { UsageError } from '../lib/errors.ts';

/** The part of a Store these helpers use (a snapshot opened read-only fits too). */
export type QueryStore = Pick<Store, 'all' | 'columns' | 'mapRows'>;

export interface RatioQuery {
  /** Only months up to this instant's UTC month (default: all). */
  asOf?: Date | string;
  /** One month, YYYY-MM. */
  month?: string;
  mid?: string;
  /** Leave out projected rows. */
  actualOnly?: boolean;
}

/**
 * The ratio rows with their TC40 coverage, every month (mart_ratios without the explanation columns, which these
 * helpers' callers judge for themselves: no reason text is written for nothing).
 */
const RATIO_ROWS = "ratio_rows_covered_between(DATE '0001-01-01', DATE '9999-12-01')";

const MONTH_RE = /^\d{4}-(0[1-9]|1[0-2])$/;

export function monthOf(at: Date | string): string {
  const d = typeof at === 'string' ? new Date(at) : at;
  if (Number.isNaN(d.getTime())) throw new UsageError(`not a date-time: ${String(at)}`);
  return d.toISOString().slice(0, 7);
}

function num(v: unknown): number | null {
  if (v === null || v === undefined) return null;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : null;
}

export function toRatioRow(r: Record<string, unknown>): RatioRow {
  return ratioRowMaker((c) => [r[c]])(0);
}

const textOf = (x: unknown): string | null => (x == null ? null : String(x));

/**
 * The maker of ratio rows from their columns' values (column(name)[i]: row i's), whether read as JSON (all) or as
 * DuckDB's values (mapRows: BIGINT a bigint, DATE a value whose String() is YYYY-MM-DD).
 */
export function ratioRowMaker(column: (name: string) => readonly unknown[]): (i: number) => RatioRow {
  const [mid, network, program, metric, month, numerator, denominator, denominatorMonth, numeratorCount, numeratorAmount, denominatorCount,
    denominatorAmount, monthTxCount, monthTxAmount, ratio, ratioPct, ratioBps, noRatioReason, isProjection, isPartial, daysCovered, daysInMonth,
    observedFrom, complete, missing, floor] = [
    'mid', 'network', 'program', 'metric', 'month', 'numerator', 'denominator', 'denominator_month', 'numerator_count', 'numerator_amount',
    'denominator_count', 'denominator_amount', 'month_transaction_count', 'month_transaction_amount', 'ratio', 'ratio_pct', 'ratio_bps',
    'no_ratio_reason', 'is_projection', 'is_partial', 'days_covered', 'days_in_month', 'tc40_observed_from', 'numerator_complete',
    'missing_sources', 'numerator_floor',
  ].map(column);
  return (i) => ({
    mid: String(mid[i]),
    network: network[i] as RatioRow['network'],
    program: program[i] as RatioRow['program'],
    metric: metric[i] as RatioRow['metric'],
    month: String(month[i]),
    numerator: num(numerator[i]),
    denominator: num(denominator[i]),
    denominator_month: textOf(denominatorMonth[i]),
    numerator_count: num(numeratorCount[i]),
    numerator_amount: num(numeratorAmount[i]),
    denominator_count: num(denominatorCount[i]),
    denominator_amount: num(denominatorAmount[i]),
    month_transaction_count: num(monthTxCount[i]),
    month_transaction_amount: num(monthTxAmount[i]),
    ratio: num(ratio[i]),
    ratio_pct: num(ratioPct[i]),
    ratio_bps: num(ratioBps[i]),
    no_ratio_reason: textOf(noRatioReason[i]),
    is_projection: isProjection[i] === true || isProjection[i] === 'true',
    is_partial: isPartial[i] === true || isPartial[i] === 'true',
    days_covered: num(daysCovered[i]),
    days_in_month: num(daysInMonth[i]),
    tc40_observed_from: textOf(observedFrom[i])?.slice(0, 10) ?? null,
    numerator_complete: complete[i] !== false && complete[i] !== 'false',
    missing_sources: missing ? textOf(missing[i]) : null,
    numerator_floor: floor ? floor[i] === true || floor[i] === 'true' : false,
  });
}

/**
 * The ratio rows a query returns (the columns of ratio_rows_covered_between; the explanation columns of mart_ratios
 * are not read), read chunk by chunk: a batch of tens of thousands of rows without an object per value or a list per
 * column of the whole result. observedFromDays: tc40_observed_from read as days since 1970-01-01 (an INTEGER: its text
 * made once, not a string or a date object per row).
 */
export async function readRatioRows(store: Pick<Store, 'mapRows'>, sql: string, params?: Params, opts: { observedFromDays?: boolean } = {}): Promise<RatioRow[]> {
  if (!opts.observedFromDays) return store.mapRows(sql, params, ratioRowMaker);
  const days = new Map<number, string>();
  const dayText = (d: number) => {
    let t = days.get(d);
    if (t === undefined) days.set(d, (t = new Date(d * 86_400_000).toISOString().slice(0, 10)));
    return t;
  };
  return store.mapRows(sql, params, (column) => {
    const make = ratioRowMaker(column);
    const observed = column('tc40_observed_from');
    return (i) => {
      const row = make(i);
      const d = observed[i];
      row.tc40_observed_from = d === null || d === undefined ? null : dayText(Number(d));
      return row;
    };
  });
}

/** The MIDs with MID report figures, sorted (the unit ratios are computed in batches of). */
export async function ratioMids(store: QueryStore, mid?: string): Promise<string[]> {
  const rows = await store.all<{ mid: string }>(
    `SELECT DISTINCT mid FROM mid_stats ${mid !== undefined ? 'WHERE mid = $mid' : ''} ORDER BY mid`,
    mid !== undefined ? { mid } : undefined,
  );
  return rows.map((r) => String(r.mid));
}

/** Splits sorted MIDs into [first, last] ranges of at most size MIDs. */
export function midRanges(mids: string[], size: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const n = Math.max(1, size);
  for (let i = 0; i < mids.length; i += n) out.push([mids[i], mids[Math.min(i + n, mids.length) - 1]]);
  return out;
}

function ratioSql(q: RatioQuery): { where: string[]; params: Record<string, string> } {
  if (q.month !== undefined && !MONTH_RE.test(q.month)) throw new UsageError(`--month must be YYYY-MM, got ${JSON.stringify(q.month)}`);
  const where: string[] = [];
  const params: Record<string, string> = {};
  if (q.asOf !== undefined) { where.push('month <= $asof'); params.asof = monthOf(q.asOf); }
  if (q.month !== undefined) { where.push('month = $month'); params.month = q.month; }
  if (q.mid !== undefined) { where.push('mid = $mid'); params.mid = q.mid; }
  if (q.actualOnly) where.push('NOT is_projection');
  return { where, params };
}

/**
 * Calls fn with the ratio rows of batchMids MIDs at a time (default 1000), each batch sorted by mid, network,
 * program, metric, month. The views push the MID range down to mid_stats, so DuckDB's memory stays bounded at any
 * number of MIDs (a single query over a large portfolio did not fit the store's limit, CBP_STORE_MEMORY_LIMIT).
 */
export async function forEachRatioBatch(
  store: QueryStore, q: RatioQuery, fn: (rows: RatioRow[]) => void | Promise<void>, batchMids = 1000,
): Promise<void> {
  const { where, params } = ratioSql(q);
  for (const [lo, hi] of midRanges(await ratioMids(store, q.mid), batchMids)) {
    const rows = await readRatioRows(store,
      `SELECT * FROM ${RATIO_ROWS} WHERE ${[...where, 'mid >= $lo', 'mid <= $hi'].join(' AND ')}
        ORDER BY mid, network, program, metric, month, is_projection`,
      { ...params, lo, hi },
    );
    await fn(rows);
  }
}

/**
 * The ratio rows, one per mid × network × program × metric × month (plus projected rows for open months).
 * Ratios are DOUBLEs computed from exact counts and amounts, never rounded here.
 */
export async function computeRatios(store: QueryStore, q: RatioQuery = {}): Promise<RatioRow[]> {
  const out: RatioRow[] = [];
  await forEachRatioBatch(store, q, (rows) => { for (const r of rows) out.push(r); });
  return out;
}

export interface CountCheckRow {
  mid: string;
  network: string;
  month: string;
  report_count: number | null;
  mid_report_count: number | null;
  difference: number | null;
  agrees: boolean;
}

/** Data quality: chargebacks counted in the chargeback report against the MID report's count. */
export async function chargebackCountCheck(store: QueryStore, q: { month?: string; mid?: string } = {}): Promise<CountCheckRow[]> {
  const where: string[] = [];
  const params: Record<string, string> = {};
  if (q.month) { where.push('month = $month'); params.month = q.month; }
  if (q.mid) { where.push('mid = $mid'); params.mid = q.mid; }
  const rows = await store.all<Record<string, unknown>>(
    `SELECT * FROM dq_chargeback_counts ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY mid, network, month`,
    Object.keys(params).length ? params : undefined,
  );
  return rows.map((r) => ({
    mid: String(r.mid),
    network: String(r.network),
    month: String(r.month),
    report_count: num(r.report_count),
    mid_report_count: num(r.mid_report_count),
    difference: num(r.difference),
    agrees: r.agrees === true,
  }));
}
