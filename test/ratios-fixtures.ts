// Fixtures for the ratio, rule and alert tests: a real store (migrations + views) in a temp dir, and
// pinned monthly figures inserted straight into mid_stats, chargebacks and events_raw.
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../store/db.ts';
import { tempDir } from './helpers/tmp.ts';
import { openTestStore } from './helpers/store-template.ts';
import type { RatioRow } from '../contract/ratios.ts';

export async function tempStore(opts: { memoryLimit?: string; threads?: number } = {}): Promise<{ store: Store; dir: string; dbPath: string }> {
  // (made through test/helpers/tmp.ts: removed after the test file at the latest, whatever the test does)
  const dir = tempDir();
  const dbPath = path.join(dir, 'cbp.duckdb');
  const store = await openTestStore({ dbPath, memoryLimit: opts.memoryLimit, threads: opts.threads });
  return { store, dir, dbPath };
}

/**
 * Kept ratio inputs (store/ratio-inputs.ts) that differ from what the sources give, either way: of every month, or
 * of one month (YYYY-MM).
 */
export async function keptInputsDrift(store: Store, month?: string): Promise<number> {
  const range = month ? `DATE '${month}-01', DATE '${month}-01'` : "DATE '0001-01-01', DATE '9999-12-01'";
  const kept = month ? `(SELECT * FROM ratio_month_inputs WHERE month = '${month}')` : 'ratio_month_inputs';
  const [d] = await store.all<{ n: string }>(`SELECT count(*) AS n FROM (
    (SELECT * FROM ${kept} EXCEPT ALL SELECT * FROM ratio_month_inputs_between(${range}))
    UNION ALL (SELECT * FROM ratio_month_inputs_between(${range}) EXCEPT ALL SELECT * FROM ${kept}))`);
  return Number(d.n);
}

function lastDay(month: string): number {
  const [y, m] = month.split('-').map(Number);
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

export interface StatFixture {
  mid: string;
  month: string;
  network: 'visa' | 'mastercard' | 'discover' | 'american_express' | 'all';
  cb: number;
  cbAmount?: number;
  tx: number;
  txAmount?: number;
  prevTx?: number | null;
  prevTxAmount?: number | null;
  /** last day covered (default: the month's last day) */
  endDay?: number;
  /** the chargeback report was loaded over the same window, as a nightly loads both (default true) */
  cbReport?: boolean;
}

export async function insertStats(store: Store, rows: StatFixture[]): Promise<void> {
  for (const r of rows) {
    const end = `${r.month}-${String(r.endDay ?? lastDay(r.month)).padStart(2, '0')}`;
    await store.run(
      `INSERT INTO mid_stats VALUES ($mid, $start::DATE, $end::DATE, $network, $cb, $cba, $tx, $txa, NULL, NULL, $ptx, $ptxa, $seen::TIMESTAMP, 'fixture')`,
      {
        mid: r.mid, start: `${r.month}-01`, end, network: r.network, cb: r.cb, cba: r.cbAmount ?? r.cb * 10, tx: r.tx,
        txa: r.txAmount ?? r.tx * 10, ptx: r.prevTx ?? null, ptxa: r.prevTxAmount ?? null, seen: `${end} 23:00:00`,
      },
    );
    if (r.cbReport !== false) await coverChargebacks(store, `${r.month}-01`, end);
  }
}

/** Records a fetch of the chargeback report over from..to (YYYY-MM-DD), answered after its last day. */
export async function coverChargebacks(store: Store, from: string, to: string): Promise<void> {
  await store.run(
    `INSERT INTO report_fetches VALUES ('chargebacks', $from::DATE, $to::DATE, $to::DATE + INTERVAL 1 DAY, $to::DATE + INTERVAL 1 DAY, 0, 0, 'fixture')
     ON CONFLICT DO NOTHING`,
    { from, to },
  );
}

export interface ChargebackFixture {
  mid: string;
  network: string;
  /** YYYY-MM-DD */
  received: string;
  n: number;
  amount?: number;
  reasonCode?: string;
  arnPrefix?: string;
}

let seq = 0;
export async function insertChargebacks(store: Store, rows: ChargebackFixture[]): Promise<void> {
  for (const r of rows) {
    await store.run(
      `INSERT INTO chargebacks (mid, case_number, status, arn, card_type, amount, currency, reason_code, date_received, first_seen_at, last_seen_at, landing_file)
       SELECT $mid, 'case-' || $seq || '-' || i, 'New', CASE WHEN $arn IS NULL THEN NULL ELSE $arn || i END, $network, $amount, 'USD', $rc,
              $received::TIMESTAMP, now()::TIMESTAMP, now()::TIMESTAMP, 'fixture'
         FROM range($n) t(i)`,
      { mid: r.mid, seq: ++seq, arn: r.arnPrefix ?? null, network: r.network, amount: r.amount ?? 10, rc: r.reasonCode ?? '13.1', received: r.received, n: r.n },
    );
  }
}

/** n events of one type; a guid repeated across calls stands for the same prevention alert. */
/** Events as the receiver keeps them: received now, dated by the service at `at` (default: now too). */
export async function insertEvents(store: Store, type: string, payloads: Array<Record<string, unknown>>, opts: { at?: string } = {}): Promise<void> {
  for (const p of payloads) {
    await store.run(
      `INSERT INTO events_raw VALUES ($guid, $type, coalesce($at::TIMESTAMP, now()::TIMESTAMP), now()::TIMESTAMP, $payload::JSON, 'fixture', 1, now()::TIMESTAMP)`,
      { guid: `evt_${++seq}`, type, payload: JSON.stringify({ event_type: type, ...p }), at: opts.at ? opts.at.replace('Z', '') : null },
    );
  }
}

export function tc40(mid: string, guid: string, at: string, amount = 100): Record<string, unknown> {
  return { prevention_guid: guid, prevention_type: 'tc40', mid, prevention_timestamp: at, amount };
}

export function cleanup(store: Store | undefined, dir: string | undefined): void {
  try { store?.close(); } catch { /* already closed */ }
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
}

/** A hand-made ratio row: numerator and denominator counts (amounts 100 each), the rest derived; p overrides. */
export type RatioRowFixture = Partial<RatioRow> & Pick<RatioRow, 'mid' | 'network' | 'program' | 'month'> & { num: number; den: number | null };
export function ratioRow(p: RatioRowFixture): RatioRow {
  const ratio = p.den ? p.num / p.den : null;
  return {
    metric: 'count', denominator_month: p.month, numerator_amount: p.num * 100, denominator_amount: p.den === null ? null : p.den * 100,
    no_ratio_reason: p.den === null ? 'no_previous_month' : p.den === 0 ? 'zero_transactions' : null,
    is_projection: false, is_partial: false, days_covered: null, days_in_month: null,
    month_transaction_count: p.den, month_transaction_amount: p.den === null ? null : p.den * 100,
    tc40_observed_from: null, numerator_complete: true,
    ...p,
    numerator: p.num, denominator: p.den, numerator_count: p.numerator_count ?? p.num, denominator_count: p.den,
    ratio, ratio_pct: ratio === null ? null : ratio * 100, ratio_bps: ratio === null ? null : ratio * 10_000,
  } as RatioRow;
}
