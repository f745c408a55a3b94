// Fixtures for the store tests: report records written as JSON and CSV files, and table dumps to compare.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'csv-stringify/sync';
import { CHARGEBACK_COLUMNS, MID_CSV_COLUMNS, PREVENTION_COLUMNS, flattenMidRecord } from '../contract/reporting.ts';
import type { Store } from '../store/db.ts';

export const ROOT = fileURLToPath(new URL('..', import.meta.url));

export { tempDir as tmpDir } from './helpers/tmp.ts';

export type Rec = Record<string, unknown>;

export function chargeback(over: Rec = {}): Rec {
  return {
    case_number: 'CB-1',
    status: 'New',
    arn: '74000000000000000000001',
    mid: 'MID-1',
    card_number: '555555******4444',
    card_type: 'mastercard',
    amount: 94.76,
    currency: 'USD',
    reason_code: '4837',
    reason: 'No cardholder authorization',
    date_received: '2024-03-02 10:15:00',
    transaction_date: '2024-02-20',
    order_id: '',
    name: '',
    tracking_number: '',
    ...over,
  };
}

export function prevention(over: Rec = {}): Rec {
  return {
    arn: '74000000000000000000009',
    alert_case_id: 'pre_540385dce935441baca73ae04d319c35',
    statuses: ['New', 'Pending'],
    mid: 'MID-1',
    merchant_descriptor: 'SHOP*EXAMPLE',
    source_partner: 'Ethoca',
    bin: '411111',
    last_four: '1111',
    amount: '25.00',
    currency: 'USD',
    date_received: '2024-03-03T08:00:00Z',
    transaction_date: '2024-03-01',
    order_id: 'ORD-9',
    name: 'Jane Doe',
    ...over,
  };
}

const stats = (n: number) => ({
  chargeback_amount_ratio: n ? 0.01 : null,
  chargeback_amount: 10 * n,
  chargeback_count: n,
  chargeback_ratio: n ? 0.02 : null,
  transaction_amount: 1000 * n,
  transaction_count: 50 * n,
});

export function midRecord(over: Rec = {}): Rec {
  return {
    mid: 'MID-1',
    alias: 'Example shop',
    gateways: ['gw-1', 'gw-2'],
    ...stats(4),
    visa: stats(2),
    master_card: { ...stats(1), previous_month_transaction_amount: 900, previous_month_transaction_count: 45 },
    discover: stats(0),
    ...over,
  };
}

export function writeJson(dir: string, name: string, records: Rec[]): string {
  const f = path.join(dir, name);
  writeFileSync(f, JSON.stringify(records, null, 1));
  return f;
}

const cell = (v: unknown) => (v === null || v === undefined ? '' : Array.isArray(v) ? v.join(';') : String(v));

export function writeCsv(dir: string, name: string, kind: 'chargebacks' | 'prevention' | 'mid_report', records: Rec[]): string {
  const cols = kind === 'chargebacks' ? [...CHARGEBACK_COLUMNS] : kind === 'prevention' ? [...PREVENTION_COLUMNS] : MID_CSV_COLUMNS;
  const rows = records.map((r) => (kind === 'mid_report' ? flattenMidRecord(r) : r)).map((r) => cols.map((c) => cell(r[c])));
  const f = path.join(dir, name);
  writeFileSync(f, stringify([cols, ...rows]));
  return f;
}

export const DATA_TABLES = [
  'chargebacks',
  'chargeback_status_history',
  'prevention_alerts',
  'prevention_status_history',
  'mid_stats',
  'mids',
  'quarantine',
];

/** Every data table's rows, sorted, as JSON text: two stores with equal dumps hold the same data. */
export async function dump(store: Store, tables = DATA_TABLES, exclude: string[] = []): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of tables) {
    const cols = (await store.all<{ column_name: string }>(`SELECT column_name FROM duckdb_columns() WHERE table_name = '${t}' AND schema_name = 'main' ORDER BY column_index`))
      .map((r) => r.column_name)
      .filter((c) => !exclude.includes(c));
    const rows = await store.all(`SELECT ${cols.map((c) => `"${c}"`).join(', ')} FROM ${t} ORDER BY ALL`);
    out[t] = JSON.stringify(rows);
  }
  return out;
}

/** Puts one event into events_raw as the ingest would (payload with its envelope fields). */
export async function addEvent(s: Store, guid: string, type: string, payload: Rec, at = '2024-03-02T11:00:00Z'): Promise<void> {
  await s.run(
    `INSERT INTO events_raw VALUES ($1, $2, $3::TIMESTAMP, $3::TIMESTAMP, $4::JSON, 'seg-1', 1, now()::TIMESTAMP)`,
    [guid, type, at.replace('T', ' ').replace('Z', ''), JSON.stringify({ event_guid: guid, event_type: type, event_timestamp: at, ...payload })],
  );
}
