// What `cbp report` reads (report/ draws it): the disputes, the data quality and the freshness of each
// source, over an analyst session on the published snapshot. The ratios come from store/ratios.ts's
// forEachRatioBatch, the reader `cbp ratios` uses, so the report's ratios are the same numbers.
// Every figure is returned as it comes from the query (no rounding here): the report shows them rounded and
// keeps them unrounded in its data island, which test/report-data.test.ts compares with these queries.
import type { Store } from './db.ts';
import { UsageError } from '../lib/errors.ts';

type ReadStore = Pick<Store, 'all'>;

/** What to read: the months [from, to] (YYYY-MM, inclusive) and, optionally, only some MIDs. */
export interface ReportScope {
  from: string;
  to: string;
  mids?: string[];
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

/** The WHERE clause of chargebacks received in the scope's months (and of its MIDs), and its parameters. */
function chargebackWhere(scope: ReportScope): { where: string; params: Record<string, string> } {
  const params: Record<string, string> = { from: scope.from, to: scope.to };
  let where = `date_received IS NOT NULL AND strftime(date_received, '%Y-%m') BETWEEN $from AND $to`;
  if (scope.mids?.length) {
    where += ` AND mid IN (${scope.mids.map((_, i) => `$mid${i}`).join(', ')})`;
    scope.mids.forEach((m, i) => { params[`mid${i}`] = m; });
  }
  return { where, params };
}

export interface ReportVolume {
  mid_stats: number;
  chargebacks: number;
  prevention_alerts: number;
  events: number;
  /** the latest month with MID report figures (YYYY-MM), else with chargebacks, else null */
  latest_month: string | null;
}

/** How much the snapshot holds, and its latest month: an empty store gets a message instead of a report. */
export async function reportVolume(store: ReadStore): Promise<ReportVolume> {
  const [r] = await store.all<Record<string, unknown>>(
    `SELECT (SELECT count(*) FROM mid_stats) AS mid_stats,
            (SELECT count(*) FROM chargebacks) AS chargebacks,
            (SELECT count(*) FROM prevention_alerts) AS prevention_alerts,
            (SELECT count(*) FROM events_raw) AS events,
            coalesce((SELECT strftime(max(window_start), '%Y-%m') FROM mid_stats WHERE network <> 'all'),
                     (SELECT strftime(max(date_received), '%Y-%m') FROM chargebacks)) AS latest_month`,
  );
  return {
    mid_stats: num(r.mid_stats), chargebacks: num(r.chargebacks), prevention_alerts: num(r.prevention_alerts), events: num(r.events),
    latest_month: r.latest_month == null ? null : String(r.latest_month),
  };
}

/** The MIDs named that the snapshot knows (MID report figures or chargebacks), sorted. */
export async function knownMids(store: ReadStore, mids: string[]): Promise<string[]> {
  if (mids.length === 0) return [];
  const params = Object.fromEntries(mids.map((m, i) => [`m${i}`, m]));
  const list = mids.map((_, i) => `$m${i}`).join(', ');
  const rows = await store.all<{ mid: string }>(
    `SELECT mid FROM mid_stats WHERE mid IN (${list}) UNION SELECT mid FROM chargebacks WHERE mid IN (${list}) ORDER BY mid`,
    params,
  );
  return rows.map((r) => String(r.mid));
}

/** Refuses (exit 2) MIDs the snapshot does not know: `cbp report --mid` and `cbp ratios --mid` say it alike. */
export async function checkKnownMids(store: ReadStore, mids: string[]): Promise<void> {
  const known = new Set(await knownMids(store, mids));
  const unknown = mids.filter((m) => !known.has(m));
  if (unknown.length) {
    throw new UsageError(`--mid: no figures or chargebacks for ${unknown.map((m) => JSON.stringify(m)).join(', ')} in the snapshot; check the MID (the dim_mids view lists every MID the snapshot knows)`);
  }
}

export interface ReasonCodeRow {
  network: string;
  reason_code: string;
  reason: string | null;
  cases: number;
  amount: number;
}

/** Chargebacks received in the scope per network × reason code: cases and amount (reporting currency). */
export async function reasonCodes(store: ReadStore, scope: ReportScope): Promise<ReasonCodeRow[]> {
  const { where, params } = chargebackWhere(scope);
  const rows = await store.all<Record<string, unknown>>(
    `SELECT coalesce(card_type::VARCHAR, '(unknown)') AS network, coalesce(reason_code, '(none)') AS reason_code,
            any_value(reason) AS reason, count(*) AS cases, coalesce(sum(amount), 0)::DOUBLE AS amount
       FROM chargebacks WHERE ${where}
      GROUP BY ALL ORDER BY network, cases DESC, reason_code`,
    params,
  );
  return rows.map((r) => ({
    network: String(r.network), reason_code: String(r.reason_code), reason: r.reason == null ? null : String(r.reason),
    cases: num(r.cases), amount: num(r.amount),
  }));
}

export interface WinRateRow {
  network: string;
  month: string;
  cases: number;
  won: number;
  lost: number;
  /** won ÷ (won + lost), null when none was decided */
  win_rate: number | null;
}

/** Per network and month received: cases, won, lost and the win rate of the decided ones. */
export async function winRates(store: ReadStore, scope: ReportScope): Promise<WinRateRow[]> {
  const { where, params } = chargebackWhere(scope);
  const rows = await store.all<Record<string, unknown>>(
    `SELECT coalesce(card_type::VARCHAR, '(unknown)') AS network, strftime(date_received, '%Y-%m') AS month, count(*) AS cases,
            count(*) FILTER (WHERE status = 'Won') AS won, count(*) FILTER (WHERE status = 'Lost') AS lost
       FROM chargebacks WHERE ${where}
      GROUP BY ALL ORDER BY network, month`,
    params,
  );
  return rows.map((r) => {
    const won = num(r.won);
    const lost = num(r.lost);
    return { network: String(r.network), month: String(r.month), cases: num(r.cases), won, lost, win_rate: won + lost > 0 ? won / (won + lost) : null };
  });
}

/** The statuses the report shows apart; any other (Pre-Arbitration, Result Unobtainable) counts as Other. */
export const REPORT_STATUSES = ['New', 'Pending', 'Won', 'Lost', 'Did Not Fight', 'Other'] as const;

export interface StatusMonthRow {
  month: string;
  status: (typeof REPORT_STATUSES)[number];
  cases: number;
}

/** Chargebacks received each month by the status they have now (the snapshot's). */
export async function statusesByMonth(store: ReadStore, scope: ReportScope): Promise<StatusMonthRow[]> {
  const { where, params } = chargebackWhere(scope);
  const rows = await store.all<Record<string, unknown>>(
    `SELECT strftime(date_received, '%Y-%m') AS month,
            CASE WHEN status IN ('New', 'Pending', 'Won', 'Lost', 'Did Not Fight') THEN status::VARCHAR ELSE 'Other' END AS status,
            count(*) AS cases
       FROM chargebacks WHERE ${where}
      GROUP BY ALL ORDER BY month, status`,
    params,
  );
  return rows.map((r) => ({ month: String(r.month), status: String(r.status) as StatusMonthRow['status'], cases: num(r.cases) }));
}

export interface OrderAgeRow {
  order_age: string;
  /** smallest age in days of the bucket (sorts the buckets; null for unknown) */
  from_days: number | null;
  cases: number;
  amount: number;
  won: number;
  lost: number;
}

/** Buckets of days from the transaction to the chargeback's receipt (as sql/queries/disputes_by_order_age.sql). */
export const ORDER_AGE_BUCKETS = [
  { label: '0-7 days', from: 0 }, { label: '8-30 days', from: 8 }, { label: '31-60 days', from: 31 },
  { label: '61-120 days', from: 61 }, { label: 'over 120 days', from: 121 },
] as const;

/** Chargebacks received in the scope by order age (days from transaction to receipt); unknown age apart. */
export async function disputesByOrderAge(store: ReadStore, scope: ReportScope): Promise<OrderAgeRow[]> {
  const { where, params } = chargebackWhere(scope);
  const rows = await store.all<Record<string, unknown>>(
    `WITH aged AS (SELECT status, amount, date_diff('day', transaction_date, date_received) AS age FROM chargebacks WHERE ${where})
     SELECT CASE WHEN age IS NULL THEN '(unknown)' WHEN age < 8 THEN '0-7 days' WHEN age < 31 THEN '8-30 days'
                 WHEN age < 61 THEN '31-60 days' WHEN age < 121 THEN '61-120 days' ELSE 'over 120 days' END AS order_age,
            CASE WHEN age IS NULL THEN NULL WHEN age < 8 THEN 0 WHEN age < 31 THEN 8 WHEN age < 61 THEN 31 WHEN age < 121 THEN 61 ELSE 121 END AS from_days,
            count(*) AS cases, coalesce(sum(amount), 0)::DOUBLE AS amount,
            count(*) FILTER (WHERE status = 'Won') AS won, count(*) FILTER (WHERE status = 'Lost') AS lost
       FROM aged GROUP BY ALL ORDER BY from_days NULLS LAST`,
    params,
  );
  return rows.map((r) => ({
    order_age: String(r.order_age), from_days: numOrNull(r.from_days), cases: num(r.cases), amount: num(r.amount), won: num(r.won), lost: num(r.lost),
  }));
}

export interface MatchRateRow {
  entity: string;
  report_rows: number;
  report_rows_matched: number;
  report_match_rate: number | null;
  event_cases: number;
  event_cases_matched: number;
  event_match_rate: number | null;
}

/** mart_event_match_rates as it is (the whole snapshot: it has no month or MID). */
export async function matchRates(store: ReadStore): Promise<MatchRateRow[]> {
  const rows = await store.all<Record<string, unknown>>('SELECT * FROM mart_event_match_rates ORDER BY entity');
  return rows.map((r) => ({
    entity: String(r.entity), report_rows: num(r.report_rows), report_rows_matched: num(r.report_rows_matched),
    report_match_rate: numOrNull(r.report_match_rate), event_cases: num(r.event_cases), event_cases_matched: num(r.event_cases_matched),
    event_match_rate: numOrNull(r.event_match_rate),
  }));
}

export interface QuarantineRow {
  kind: string;
  /** the first issue of the row's reason, without the value it got (values differ row by row) */
  reason: string;
  rows: number;
}

/** Quarantined rows per report kind and reason (the reason's first issue, its value left out). */
export async function quarantineByReason(store: ReadStore): Promise<QuarantineRow[]> {
  const rows = await store.all<Record<string, unknown>>(
    `SELECT kind, regexp_replace(split_part(reason, '; ', 1), ',\\s*got\\b.*$', '') AS reason, count(*) AS rows
       FROM quarantine GROUP BY ALL ORDER BY rows DESC, kind, reason`,
  );
  return rows.map((r) => ({ kind: String(r.kind), reason: String(r.reason), rows: num(r.rows) }));
}

export interface FreshnessRow {
  /** chargebacks, prevention, mid_report (the report kinds), events */
  source: string;
  /** the newest instant in the data (UTC ISO 8601): received date, window end, event time */
  newest_data: string | null;
  /** when cbp last loaded it (UTC ISO 8601): a report's load, an event's arrival at the receiver */
  last_loaded_at: string | null;
  rows: number;
}

const iso = (col: string) => `strftime(${col}, '%Y-%m-%dT%H:%M:%SZ')`;

/** Per source: the newest data, the latest load, and how many rows. */
export async function freshness(store: ReadStore): Promise<FreshnessRow[]> {
  const rows = await store.all<Record<string, unknown>>(
    `WITH l AS (SELECT kind, max(last_loaded_at) AS loaded FROM loads GROUP BY kind)
     SELECT 'chargebacks' AS source, (SELECT ${iso('max(date_received)')} FROM chargebacks) AS newest_data,
            (SELECT ${iso('loaded')} FROM l WHERE kind = 'chargebacks') AS last_loaded_at, (SELECT count(*) FROM chargebacks) AS rows
     UNION ALL
     SELECT 'prevention', (SELECT ${iso('max(date_received)')} FROM prevention_alerts),
            (SELECT ${iso('loaded')} FROM l WHERE kind = 'prevention'), (SELECT count(*) FROM prevention_alerts)
     UNION ALL
     SELECT 'mid_report', (SELECT ${iso('max(window_end)')} FROM mid_stats),
            (SELECT ${iso('loaded')} FROM l WHERE kind = 'mid_report'), (SELECT count(*) FROM mid_stats)
     UNION ALL
     SELECT 'events', (SELECT ${iso('max(event_timestamp)')} FROM events_raw),
            (SELECT ${iso('max(received_at)')} FROM events_raw), (SELECT count(*) FROM events_raw)`,
  );
  return rows.map((r) => ({
    source: String(r.source), newest_data: r.newest_data == null ? null : String(r.newest_data),
    last_loaded_at: r.last_loaded_at == null ? null : String(r.last_loaded_at), rows: num(r.rows),
  }));
}
