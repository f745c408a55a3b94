// Every value in the snapshot reads the same from any DuckDB client, whatever its TimeZone: the views
// parse the service's date-times as UTC themselves instead of through the reader's session zone.
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../store/db.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { insertChargebacks, insertEvents, insertStats, tc40 } from './ratios-fixtures.ts';
import { tmpDir } from './store-fixtures.ts';

const ZONES = ['UTC', 'America/New_York', 'Asia/Kolkata'];

let dir: string;
let store: Store;
let snapshotPath: string;

/** Events and report rows right at month boundaries, in every date-time spelling the views parse. */
async function seed(s: Store): Promise<void> {
  await insertStats(s, [
    { mid: 'v1', network: 'visa', month: '2026-01', cb: 10, tx: 1_000 },
    { mid: 'v1', network: 'visa', month: '2026-02', cb: 10, tx: 1_000 },
  ]);
  await insertChargebacks(s, [{ mid: 'v1', network: 'visa', received: '2026-02-01 00:30:00', n: 2 }]);
  // A TC40 of 03:47:10 UTC on February 1st is February's VAMP numerator in every zone; one without a zone is UTC too.
  await insertEvents(s, 'prevention.new', [
    tc40('v1', 'pre_feb_z', '2026-02-01T03:47:10Z'),
    tc40('v1', 'pre_feb_plain', '2026-02-01 02:00:00'),
    tc40('v1', 'pre_jan_offset', '2026-02-01T03:00:00+05:30'),
    tc40('v1', 'pre_jan_end', '2026-01-31T23:59:59Z'),
  ]);
  await insertEvents(s, 'chargeback.new', [
    { chargeback_guid: 'cb_1', case_number: 'case-1-0', mid: 'v1', processor_transaction_date: '2026-02-01T01:00:00Z', chargeback_date: '2026-02-01' },
    { chargeback_guid: 'cb_2', case_number: 'case-1-1', mid: 'v1', processor_transaction_date: '2026-03-01 00:15:00', chargeback_date: '2026-03-01' },
  ]);
  await insertEvents(s, 'chargeback.responded', [
    { chargeback_guid: 'cb_1', case_number: 'case-1-0', mid: 'v1', dnf_reason: 'late', dnf_timestamp: '2026-03-01T00:00:01Z' },
  ]);
  await insertEvents(s, 'order_validation.new', [
    { order_validation_guid: 'ov_1', order_validation_timestamp: '2026-04-01 00:00:00', transaction_timestamp: '2026-03-31T22:00:00-05:00' },
  ]);
  await insertEvents(s, 'prevention.match', [
    { prevention_guid: 'pre_x', prevention_case_number: 'pc_1', prevention_type: 'ethoca', prevention_timestamp: '2026-05-01 01:00:00', transaction_timestamp: '2026-04-30T23:30:00Z', mid: 'v1' },
  ]);
}

/** Every table's and view's full contents, all columns as text, in a stable order, read under one TimeZone. */
async function readAll(file: string, zone: string): Promise<Record<string, string[][]>> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  const conn = await instance.connect();
  try {
    await conn.run(`SET TimeZone = '${zone}'`);
    const names = (await conn.runAndReadAll(
      `SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' UNION ALL
       SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' ORDER BY 1`,
    )).getRowsJson().map((r) => String(r[0]));
    const out: Record<string, string[][]> = {};
    for (const name of names) {
      const r = await conn.runAndReadAll(`SELECT COLUMNS(*)::VARCHAR FROM "${name}" ORDER BY ALL`);
      out[name] = r.getRowsJson() as string[][];
    }
    return out;
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

beforeAll(async () => {
  dir = tmpDir();
  store = await openStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  await seed(store);
  snapshotPath = path.join(dir, 'published', 'cbp.duckdb');
  await publishSnapshot(store, { snapshotPath });
});

afterAll(() => store?.close());

describe('the snapshot read from another time zone', () => {
  it('gives every table and view the same contents under UTC, America/New_York and Asia/Kolkata', async () => {
    const [utc, ...others] = await Promise.all(ZONES.map((z) => readAll(snapshotPath, z)));
    expect(Object.keys(utc)).toContain('mart_ratios');
    expect(utc.stg_events__prevention_new.length).toBe(4);
    for (const [i, other] of others.entries()) {
      for (const name of Object.keys(utc)) expect({ zone: ZONES[i + 1], name, rows: other[name] }).toEqual({ zone: ZONES[i + 1], name, rows: utc[name] });
    }
  });

  it('keeps an event of 03:47:10 UTC on February 1st in February\'s VAMP numerator for a reader in New York', async () => {
    const ny = await readAll(snapshotPath, 'America/New_York');
    const months = Object.fromEntries(ny.int_tc40__monthly.map((r) => [r[1], r[2]]));
    // February: 03:47:10Z and the plain 02:00:00 (UTC); January: 23:59:59Z and 03:00+05:30 (21:30 UTC on Jan 31).
    expect(months).toEqual({ '2026-01': '2', '2026-02': '2' });
    const ts = Object.fromEntries(ny.stg_events__prevention_new.map((r) => [r[3], r[6]]));
    expect(ts).toMatchObject({ pre_feb_z: '2026-02-01 03:47:10', pre_feb_plain: '2026-02-01 02:00:00', pre_jan_offset: '2026-01-31 21:30:00' });
  });

  it('holds no column of a zone-aware type that a reader\'s session would shift', async () => {
    const instance = await DuckDBInstance.create(snapshotPath, { access_mode: 'READ_ONLY' });
    const conn = await instance.connect();
    try {
      const r = await conn.runAndReadAll(
        "SELECT table_name || '.' || column_name FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal AND data_type LIKE 'TIMESTAMP WITH TIME ZONE%' ORDER BY 1",
      );
      expect(r.getRowsJson()).toEqual([]);
    } finally {
      conn.closeSync();
      instance.closeSync();
    }
  });

  it('reaches a store migrated before the fix: opening it replaces the old views', async () => {
    const old = await openStore({ dbPath: path.join(dir, 'old.duckdb') });
    await seed(old);
    // The view text as it was: parsed through the reader's session zone.
    await old.run('CREATE OR REPLACE MACRO stg_events_ts(p, f) AS TRY_CAST(stg_events_str(p, f) AS TIMESTAMPTZ)::TIMESTAMP');
    await old.run('DROP TABLE schema_views'); // the cbp of then kept no record of the views it made
    old.close();
    const reopened = await openStore({ dbPath: path.join(dir, 'old.duckdb') });
    const oldSnap = path.join(dir, 'published', 'old.duckdb');
    await publishSnapshot(reopened, { snapshotPath: oldSnap });
    reopened.close();
    const [utc, ny] = await Promise.all(['UTC', 'America/New_York'].map((z) => readAll(oldSnap, z)));
    expect(ny.stg_events__prevention_new).toEqual(utc.stg_events__prevention_new);
    expect(ny.int_chargebacks_joined).toEqual(utc.int_chargebacks_joined);
  });
});

describe('stg_utc_timestamp', () => {
  const SPELLINGS = [
    '2026-02-01T03:47:10Z', '2026-02-01 03:47:10', '2026-02-01T03:47:10', '2026-02-01T03:47:10+05:00', '2026-02-01T03:47:10-0800',
    '2026-02-01T03:47:10.123456Z', '2026-02-01', '2026-02-01 03:47:10 UTC', '2026-02-01 03:47:10 America/New_York', '2026-02-01T03:47:10+05:30',
    '2026-02-01T03:47:10-08', '2026-02-01 03:47', '2026-02-01T03:47:10.5+01:00', '2026-2-1 3:47:10', ' 2026-02-01T03:47:10Z ',
    '2026-02-01T03:47:10 +00:00', '2026-02-01 03:47:10 EST', 'garbage', '2026-02-30T00:00:00Z', '2026-02-01T24:00:00Z',
    '2026-02-01 03:47:10+02', '2026-03-08 02:30:00', '2026-02-01T03:47:10 Z', '2026-02-01 03:47:10 Asia/Kolkata', '2026-02-01 03:47:10 UTC UTC',
    'infinity', '-infinity', 'epoch', '2026-02-01T03:47:10Z UTC', '2026-02-01T03:47:10+14:00', '2026-02-01  03:47:10',
    '2026-02-01 03:47Z', '2026-02-01T03:47', '2026-02-01T03:47:10.123+0530', '2026-02-01 03:47:10 Etc/GMT+5', '2026-02-01 03:47:10.123 UTC',
    // The spec's spelling, read without a zone cast (its fast path), and its neighbours that are not.
    '2026-12-31T23:59:59Z', '0001-01-01T00:00:00Z', '2024-02-29T12:00:00.5Z', '2026-02-01T03:47:60Z', '2026-02-01T03:47:10.1234567Z', '2026-02-01T03:47:10z',
  ];

  it('gives what the loader\'s cast gives in its UTC session, for every spelling, in every reader\'s zone', async () => {
    const values = SPELLINGS.map((s, i) => `(${i}, '${s}')`).join(', ');
    const read = async (zone: string, expr: string, rows: string) => {
      await store.run(`SET TimeZone = '${zone}'`);
      try {
        return (await store.all<{ v: string | null }>(`SELECT (${expr})::VARCHAR AS v FROM (VALUES ${rows}) t(i, s) ORDER BY i`)).map((r) => r.v);
      } finally {
        await store.run("SET TimeZone = 'UTC'");
      }
    };
    // The loader (store/ingest.ts) casts through TIMESTAMPTZ in a UTC session; one value at a time, because
    // DuckDB 1.5's cast carries a named zone (" America/New_York") over to the zone-less texts after it in
    // the same vector. stg_utc_timestamp reads every zone-less text as UTC, so the mixed list is no problem.
    const loader: Array<string | null> = [];
    for (const [i, s] of SPELLINGS.entries()) loader.push(...(await read('UTC', 'TRY_CAST(s AS TIMESTAMPTZ)::TIMESTAMP', `(${i}, '${s}')`)));
    expect(loader.filter((v) => v !== null).length).toBeGreaterThan(25);
    for (const zone of ZONES) expect({ zone, v: await read(zone, 'stg_utc_timestamp(s)', values) }).toEqual({ zone, v: loader });
  });
});
