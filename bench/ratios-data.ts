// The ratio benchmarks' data, generated inside DuckDB (range()) as a load would leave it: per MID and month,
// mid_stats rows of 4 networks (2 % of MIDs run hot, about 2-4 %, the rest about 0.4 %), one Visa dispute and one
// Mastercard fraud chargeback, and TC40 events for a tenth of the MIDs. Month k is 2024-01 + k. Used by
// bench/ratio-engine.bench.ts, bench/nightly-scale.bench.ts and test/alerts-differential.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import type { Store } from '../store/db.ts';
import { upsertSql } from '../store/upsert.ts';

/** MIDs 0 .. mids-1, months k from firstMonth (default 0) up to months (excluded). */
export async function generateRatioData(store: Pick<Store, 'run' | 'lake'>, o: { mids: number; months: number; firstMonth?: number }): Promise<void> {
  const mids = o.mids;
  const months = o.months;
  await generateMidStats(store, o);
  await store.run(`
    INSERT INTO chargebacks (mid, case_number, status, card_type, amount, reason_code, date_received, first_seen_at, last_seen_at, landing_file)
    SELECT 'mid' || lpad(m::VARCHAR, 6, '0'), 'c' || m || '-' || k || '-' || net, 'New', net, 100, rc,
           (DATE '2024-01-01' + to_months(k) + INTERVAL 3 DAY)::TIMESTAMP, now()::TIMESTAMP, now()::TIMESTAMP, 'bench'
    FROM range(${mids}) a(m), range(${o.firstMonth ?? 0}, ${months}) b(k), (VALUES ('visa', '10.4'), ('mastercard', '4837')) n(net, rc)`);
  await generateTc40Events(store, o);
  // The chargeback report fetched for every month, answered after its end, as a nightly's fetches leave it.
  await store.run(upsertSql(store, {
    into: 'report_fetches',
    columns: ['kind', 'window_start', 'window_end', 'service_time', 'fetched_at', 'records', 'quarantined', 'run_id'],
    rows: `SELECT 'chargebacks', ms, last_day(ms), last_day(ms) + INTERVAL 1 DAY, last_day(ms) + INTERVAL 1 DAY, 0, 0, 'bench'
             FROM (SELECT (DATE '2024-01-01' + to_months(k))::DATE AS ms FROM range(${o.firstMonth ?? 0}, ${months}) b(k))`,
    key: ['kind', 'window_start', 'window_end'],
  }));
}

/**
 * A nightly's load after `months` closed months: the next month to date (1st .. 20th) for every MID, its chargebacks
 * and TC40 events. Returns the time the nightly runs as of (the 20th).
 */
export async function loadMonthToDate(store: Pick<Store, 'run' | 'lake'>, o: { mids: number; months: number }): Promise<Date> {
  const m = new Date(Date.UTC(2024, o.months, 1)).toISOString().slice(0, 7);
  await generateRatioData(store, { mids: o.mids, months: o.months + 1, firstMonth: o.months });
  await store.run(`UPDATE mid_stats SET window_end = DATE '${m}-20', transaction_count = transaction_count * 20 // 30,
    chargeback_count = chargeback_count * 20 // 30 WHERE window_start = DATE '${m}-01'`);
  return new Date(`${m}-20T06:00:00Z`);
}

/** The MID report's figures alone: per MID, month and network (2 % of MIDs run hot, about 2-4 %, the rest about 0.4 %). */
export async function generateMidStats(store: Pick<Store, 'run'>, o: { mids: number; months: number; firstMonth?: number }): Promise<void> {
  const mids = o.mids;
  const months = o.months;
  // Month k starts at 2024-01 + k.
  await store.run(`
    INSERT INTO mid_stats
    SELECT 'mid' || lpad(m::VARCHAR, 6, '0'), ms, last_day(ms), net,
           cb, cb * 40, tx, tx * 50, NULL, NULL,
           CASE WHEN net = 'mastercard' THEN tx END, CASE WHEN net = 'mastercard' THEN tx * 50 END,
           last_day(ms)::TIMESTAMP, 'bench'
    FROM (
      SELECT m, (DATE '2024-01-01' + to_months(k))::DATE AS ms, net,
             (5000 + (hash(m, k, net) % 5000))::BIGINT AS tx,
             CASE WHEN m % 50 = 0 THEN (150 + hash(m, k) % 250)::BIGINT ELSE (hash(m, k, net, 1) % 40)::BIGINT END AS cb
      FROM range(${mids}) a(m), range(${o.firstMonth ?? 0}, ${months}) b(k), (VALUES ('visa'), ('mastercard'), ('discover'), ('american_express')) n(net)
    )`);
}

/**
 * TC40 fraud reports (prevention.new events) for a tenth of the MIDs, one per month, each sent and received when
 * the report was made (the 6th of its month): events were captured all along, so every month's VAMP numerator is
 * complete.
 */
export async function generateTc40Events(store: Pick<Store, 'run'>, o: { mids: number; months: number; firstMonth?: number }): Promise<void> {
  const mids = o.mids;
  const months = o.months;
  await store.run(`
    INSERT INTO events_raw
    SELECT 'evt_' || m || '_' || k, 'prevention.new',
           (DATE '2024-01-01' + to_months(k) + INTERVAL 5 DAY)::TIMESTAMP, (DATE '2024-01-01' + to_months(k) + INTERVAL 5 DAY)::TIMESTAMP,
           json_object('prevention_guid', 'pre_' || m || '_' || k, 'prevention_type', 'tc40', 'mid', 'mid' || lpad(m::VARCHAR, 6, '0'),
                       'prevention_timestamp', strftime(DATE '2024-01-01' + to_months(k) + INTERVAL 5 DAY, '%Y-%m-%dT%H:%M:%SZ'), 'amount', 25),
           'bench', 1, now()::TIMESTAMP
    FROM range(0, ${mids}, 10) a(m), range(${o.firstMonth ?? 0}, ${months}) b(k)`);
}

/** A MID report file (JSON, as the service sends it) of month k for MIDs 0 .. mids-1: the four networks' figures. */
export function writeMidReport(dir: string, mids: number, k: number): string {
  const net = (m: number, n: number) => {
    const tx = 5_000 + ((m * 7 + n * 13 + k) % 50) * 100;
    const cb = (m * 3 + n + k) % 40;
    return { transaction_count: tx, transaction_amount: tx * 40, chargeback_count: cb, chargeback_amount: cb * 40, chargeback_ratio: cb / tx, chargeback_amount_ratio: cb / tx };
  };
  const records = Array.from({ length: mids }, (_, m) => {
    const nets = [0, 1, 2, 3].map((n) => net(m, n));
    const sum = (k: 'transaction_count' | 'transaction_amount' | 'chargeback_count' | 'chargeback_amount') => nets.reduce((a, x) => a + x[k], 0);
    const tx = sum('transaction_count');
    const cb = sum('chargeback_count');
    return {
      mid: `mid${String(m).padStart(6, '0')}`, transaction_count: tx, transaction_amount: sum('transaction_amount'), chargeback_count: cb,
      chargeback_amount: sum('chargeback_amount'), chargeback_ratio: cb / tx, chargeback_amount_ratio: cb / tx,
      visa: nets[0], master_card: nets[1], discover: nets[2], american_express: nets[3],
    };
  });
  const file = path.join(dir, `mid-report-${k}.json`);
  fs.writeFileSync(file, JSON.stringify(records));
  return file;
}
