// The sources' fingerprints per month: what the ratio table and the kept ratio inputs compare to know which months
// changed. docs/ratios.md "When the table is current".
import type { Store } from './db.ts';
import { insertRows } from './insert-rows.ts';
import { SCAN_MEMORY } from '../lib/size.ts';

type ReadStore = Pick<Store, 'all'> & Partial<Pick<Store, 'capMemory'>>;

/** A fingerprint row as read (source, month, fingerprint, row_count). */
const markOf = (r: Record<string, unknown>): SourceMark => ({ source: String(r.source), month: String(r.month), fingerprint: String(r.fingerprint), row_count: Number(r.row_count) });

/** One source's fingerprint of one month (sql/migrations/013_ratio_marks.sql). */
export interface SourceMark {
  source: string;
  month: string;
  fingerprint: string;
  row_count: number;
}

/** The month of the events' capture mark: a change of it touches every month. */
export const CAPTURE_MONTH = '0000-00';

/**
 * The fingerprint of every source month as the store holds it now: the MID report's rows by window month, the
 * chargebacks by month received (with whether RDR resolved each), the TC40 reports by month of their timestamp. A sum
 * of row hashes: any row added, changed or removed changes it (up to a 2^-64 collision). With the digest of the events
 * the TC40 reports are read from (int_tc40__events): their fingerprints are those kept with the ratio inputs
 * (ratio_input_marks) when that digest is the one kept with them (ratio_input_logic.tc40_events), else computed from
 * the events, whose JSON they parse (far slower than the digest).
 */
export async function sourceMarksOf(store: ReadStore): Promise<{ marks: SourceMark[]; tc40Events: string }> {
  // Every block read once: DuckDB's cache kept small (store/db.ts capMemory), or the store's limit where that is too little.
  const scan = <T>(fn: () => Promise<T>) => (store.capMemory ? store.capMemory(SCAN_MEMORY, fn, { rerun: true }) : fn());
  const [{ d }] = await scan(() => store.all<{ d: string }>(
    `SELECT coalesce(sum(hash(event_guid, event_type, event_timestamp, received_at, payload)::HUGEINT), 0)::VARCHAR || '/' || count(*) AS d FROM int_tc40__events`,
  ));
  const tc40Events = String(d);
  let kept: SourceMark[] | null = null;
  try {
    const [logic] = await store.all<{ tc40_events: string | null }>('SELECT tc40_events FROM ratio_input_logic LIMIT 1');
    if (logic?.tc40_events === tc40Events) kept = (await readMarks(store, 'ratio_input_marks')).filter((m) => m.source === 'tc40');
  } catch {
    // A store or snapshot of an older cbp, without the column: computed below.
  }
  const rows = await scan(() => store.all<Record<string, unknown>>(`
    -- (summed per window start first, then per month: the month's text made once a window, not once a row)
    SELECT 'mid_stats' AS source, strftime(window_start, '%Y-%m') AS month, sum(fp)::VARCHAR AS fingerprint, sum(n)::BIGINT AS row_count
      FROM (SELECT window_start,
                   sum(hash(mid, window_start, window_end, network, chargeback_count, chargeback_amount, transaction_count, transaction_amount,
                            previous_month_transaction_count, previous_month_transaction_amount, seen_at)::HUGEINT) AS fp,
                   count(*) AS n
              FROM mid_stats GROUP BY window_start)
     GROUP BY ALL
    UNION ALL
    SELECT 'chargebacks', strftime(c.date_received, '%Y-%m'),
           sum(hash(c.mid, c.case_number, c.card_type, c.amount, c.reason_code, c.arn, c.date_received, NOT c.rdr_resolved)::HUGEINT)::VARCHAR,
           count(*)
      FROM int_chargebacks__counted c
     WHERE c.date_received IS NOT NULL
     GROUP BY ALL
    UNION ALL
    -- What the chargeback report is loaded for, and when events were first captured: a row's missing sources (unknown).
    SELECT 'chargeback_coverage', month, strftime(covered_to, '%Y-%m-%d'), 1 FROM int_chargeback_coverage
    UNION ALL
    -- (every month's rows say when capture began: month '0000-00' makes the next evaluation judge every month)
    SELECT 'tc40_capture', '${CAPTURE_MONTH}', strftime(cap, '%Y-%m-%d'), 1
      FROM (SELECT min(coalesce(event_timestamp, received_at))::DATE AS cap FROM events_raw) WHERE cap IS NOT NULL
    ${kept ? '' : `UNION ALL
    SELECT 'tc40', strftime(prevention_timestamp, '%Y-%m'), sum(hash(prevention_guid, mid, amount, prevention_timestamp)::HUGEINT)::VARCHAR, count(*)
      FROM int_tc40__reports WHERE prevention_timestamp IS NOT NULL GROUP BY ALL`}`));
  const marks = rows.map(markOf);
  return { marks: kept ? [...marks, ...kept] : marks, tc40Events };
}

/** The tables that keep source fingerprints: what the ratio table reflects, and what the kept ratio inputs reflect. */
export type MarksTable = 'ratio_source_marks' | 'ratio_input_marks';

/** The fingerprints a marks table keeps. */
export async function readMarks(store: ReadStore, table: MarksTable): Promise<SourceMark[]> {
  const rows = await store.all<Record<string, unknown>>(`SELECT source, month, fingerprint, row_count FROM ${table}`);
  return rows.map(markOf);
}

/** Adds fingerprints to a marks table (the caller deletes the ones they replace, in its transaction). */
export async function insertMarks(store: Pick<Store, 'run'>, table: MarksTable, marks: SourceMark[]): Promise<void> {
  await insertRows(store, table, marks.map((m) => [m.source, m.month, m.fingerprint, m.row_count]), ['source', 'month', 'fingerprint', 'row_count']);
}
