// Representment deadlines in the store: the open cases and their due dates (sql/views/60_dispute_outcomes.sql
// mart_disputes_open), the service's day they are judged on, and the `due` notices raised (alerts + due_notices).
// What to raise is decided by alerts/due.ts; delivery is the outbox's, as for every notice.
import type { DuckDBValue } from '@duckdb/node-api';
import type { Store } from './db.ts';
import { NOTICE_COLS } from './alert-record.ts';
import type { Notice } from './alerts.ts';
import { upsertSql } from './upsert.ts';
import { jsonList, jsonParam, jsonRows } from './insert-rows.ts';
import { sqlTimestamp } from '../lib/utc.ts';

type ReadStore = Pick<Store, 'all'>;

/** An open case with a due date, and the days left on the day asked about (negative: overdue). */
export interface DueCase {
  mid: string;
  case_number: string;
  status: string;
  network: string | null;
  amount: number | null;
  currency: string | null;
  reason_code: string | null;
  /** YYYY-MM-DD */
  date_received: string | null;
  due_date: string;
  days_left: number;
  overdue: boolean;
}

/**
 * The service's day (YYYY-MM-DD, UTC): the day of the latest service clock any report fetch saw (report_fetches,
 * windows_done; store/windows.ts). Null when no fetch recorded one (reports loaded by hand only).
 */
export async function serviceDay(store: ReadStore): Promise<string | null> {
  const [r] = await store.all<{ d: string | null }>(
    `SELECT strftime(max(t), '%Y-%m-%d') AS d FROM (
       SELECT max(service_time) AS t FROM report_fetches UNION ALL SELECT max(service_time) FROM windows_done)`,
  );
  return r?.d ?? null;
}

/** Open cases with a due date, soonest first (overdue first), on day `today`; within: only those due in that many days. */
export async function dueCases(store: ReadStore, q: { today: string; within?: number; mid?: string }): Promise<DueCase[]> {
  const params: Record<string, string | number> = { today: q.today };
  let where = 'due_date IS NOT NULL';
  if (q.within !== undefined) { where += " AND date_diff('day', $today::DATE, due_date) <= $within"; params.within = q.within; }
  if (q.mid) { where += ' AND mid = $mid'; params.mid = q.mid; }
  const rows = await store.all<Record<string, unknown>>(
    `SELECT mid, case_number, status::VARCHAR AS status, card_type::VARCHAR AS network, amount::DOUBLE AS amount, currency, reason_code,
            strftime(date_received, '%Y-%m-%d') AS date_received, strftime(due_date, '%Y-%m-%d') AS due_date,
            date_diff('day', $today::DATE, due_date) AS days_left
       FROM mart_disputes_open WHERE ${where}
      ORDER BY days_left, mid, case_number`,
    params,
  );
  return rows.map((r) => ({
    mid: String(r.mid), case_number: String(r.case_number), status: String(r.status),
    network: (r.network as string | null) ?? null, amount: r.amount === null ? null : Number(r.amount), currency: (r.currency as string | null) ?? null,
    reason_code: (r.reason_code as string | null) ?? null, date_received: (r.date_received as string | null) ?? null,
    due_date: String(r.due_date), days_left: Number(r.days_left), overdue: Number(r.days_left) < 0,
  }));
}

/** Open cases without a due date (no chargeback.new event received for them): they cannot be listed by deadline. */
export async function openWithoutDueDate(store: ReadStore, mid?: string): Promise<number> {
  const [r] = await store.all<{ n: number | bigint }>(
    `SELECT count(*) AS n FROM mart_disputes_open WHERE due_date IS NULL ${mid ? 'AND mid = $mid' : ''}`,
    mid ? { mid } : undefined,
  );
  return Number(r?.n ?? 0);
}

/** The notice ids of due notices already raised. */
export async function raisedDueNotices(store: ReadStore): Promise<Set<string>> {
  return new Set((await store.all<{ notice_id: string }>('SELECT notice_id FROM due_notices')).map((r) => r.notice_id));
}

export interface DueNoticeRow {
  notice: Notice;
  case_number: string;
  due_date: string;
  days_left: number;
}


/** Rows written per statement: one upsert of many rows (a transaction of hundreds of single-row upserts ran out of memory). */
const CHUNK = 100;

/**
 * Records due notices (a row of alerts each, and its case in due_notices), in one transaction; a notice id already
 * stored is left as it is, so raising the same notice twice records it once.
 */
export async function recordDueNotices(store: Store, rows: DueNoticeRow[]): Promise<void> {
  if (rows.length === 0) return;
  const noticeCasts = NOTICE_COLS.map((c) => (c === 'created_at' ? '::TIMESTAMP' : ['ratio_threshold', 'numerator', 'denominator', 'ratio', 'ratio_pct', 'ratio_bps'].includes(c) ? '::DOUBLE'
    : ['is_projection', 'is_partial', 'notify'].includes(c) ? '::BOOLEAN' : ''));
  const caseCols = ['notice_id', 'mid', 'case_number', 'due_date', 'days_left', 'created_at'] as const;
  const caseCasts = ['', '', '', '::DATE', '::INTEGER', '::TIMESTAMP'];
  await store.transaction(async (s) => {
    for (let i = 0; i < rows.length; i += CHUNK) {
      const part = rows.slice(i, i + CHUNK);
      const notices = part.map((r) => NOTICE_COLS.map((c) => (c === 'created_at' ? sqlTimestamp(new Date(r.notice.created_at)) : (r.notice as unknown as Record<string, DuckDBValue>)[c] ?? null)));
      await s.run(upsertSql(s, { into: 'alerts', columns: NOTICE_COLS, rows: jsonRows(NOTICE_COLS.length, noticeCasts), key: ['notice_id'] }), [jsonParam(notices)]);
      const cases = part.map((r) => [r.notice.notice_id, r.notice.mid, r.case_number, r.due_date, r.days_left, sqlTimestamp(new Date(r.notice.created_at))]);
      await s.run(upsertSql(s, { into: 'due_notices', columns: caseCols, rows: jsonRows(caseCols.length, caseCasts), key: ['notice_id'] }), [jsonParam(cases)]);
    }
  });
}

/** The case of each of these due notices (notice_id → case_number, due_date). */
export async function dueNoticeCases(store: ReadStore, ids: string[]): Promise<Map<string, { case_number: string; due_date: string }>> {
  const out = new Map<string, { case_number: string; due_date: string }>();
  if (ids.length === 0) return out;
  const rows = await store.all<Record<string, unknown>>(
    `SELECT notice_id, case_number, strftime(due_date, '%Y-%m-%d') AS due_date FROM due_notices WHERE notice_id IN (${jsonRows(1)})`,
    [jsonList(ids)],
  );
  for (const r of rows) out.set(String(r.notice_id), { case_number: String(r.case_number), due_date: String(r.due_date) });
  return out;
}
