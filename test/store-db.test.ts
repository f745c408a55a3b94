import { cpSync, appendFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { fastColumn } from '../store/db-chunks.ts';
import { readMigrations } from '../store/migrate.ts';
import { MigrationChangedError } from '../store/errors.ts';
import { loadReport } from '../store/load.ts';
import { ROOT, chargeback, prevention, tmpDir, writeJson } from './store-fixtures.ts';
import { CHARGEBACK_STATUSES } from '../contract/reporting.ts';
import { CARD_BRANDS } from '../contract/common.ts';

describe('store schema', () => {
  it('applies each migration once, in order, and records it with its checksum', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'nested', 'cbp.duckdb');
    const files = readMigrations(path.join(ROOT, 'sql', 'migrations'));
    const first = await openStore({ dbPath });
    expect(first.migration!.applied.map((m) => m.version)).toEqual(files.map((f) => f.version));
    const rows = await first.all<{ version: number; checksum: string }>('SELECT version, checksum FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.checksum)).toEqual(files.map((f) => f.checksum));
    first.close();
    const second = await openStore({ dbPath });
    expect(second.migration!.applied).toEqual([]);
    expect(second.migration!.alreadyApplied).toBe(files.length);
    expect((await second.all('SELECT * FROM schema_migrations')).length).toBe(files.length);
    second.close();
  });

  it('refuses a store whose applied migration was changed, and says which', async () => {
    const dir = tmpDir();
    const migrationsDir = path.join(dir, 'migrations');
    cpSync(path.join(ROOT, 'sql', 'migrations'), migrationsDir, { recursive: true });
    const dbPath = path.join(dir, 'cbp.duckdb');
    (await openStore({ dbPath, migrationsDir })).close();
    appendFileSync(path.join(migrationsDir, '001_reports.sql'), '\n-- edited\n');
    const err = await openStore({ dbPath, migrationsDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationChangedError);
    expect((err as Error).message).toMatch(/001_reports\.sql was changed after it was applied/);
  });

  it('keeps the checksum a migration whose comments were edited later was applied with, and refuses a change to its statements', async () => {
    const dir = tmpDir();
    const migrationsDir = path.join(dir, 'migrations');
    cpSync(path.join(ROOT, 'sql', 'migrations'), migrationsDir, { recursive: true });
    const dbPath = path.join(dir, 'cbp.duckdb');
    const s = await openStore({ dbPath, migrationsDir });
    // The checksum of the file as it landed, as every store made before the edit recorded it.
    const [r] = await s.all<{ checksum: string }>('SELECT checksum FROM schema_migrations WHERE version = 18');
    expect(r!.checksum).toBe('d1a3e9c2ca554f3aff2ad011aafc50b85e6b5cf6028a8a5bcfc120ba2078087f');
    s.close();
    const file = path.join(migrationsDir, '018_ratio_mart_narrow.sql');
    appendFileSync(file, '\n-- another comment\n\n');
    (await openStore({ dbPath, migrationsDir })).close();
    appendFileSync(file, 'SELECT 1;\n');
    const err = await openStore({ dbPath, migrationsDir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationChangedError);
    expect((err as Error).message).toMatch(/018_ratio_mart_narrow\.sql was changed: only its comments may differ/);
  });

  it('refuses a store whose schema a newer cbp wrote, naming both migration numbers', async () => {
    const dbPath = path.join(tmpDir(), 'cbp.duckdb');
    const s = await openStore({ dbPath });
    await s.run("INSERT INTO schema_migrations VALUES (999, 'future', 'x', now()::TIMESTAMP)");
    s.close();
    const known = Math.max(...readMigrations(path.join(ROOT, 'sql', 'migrations')).map((m) => m.version));
    const err = await openStore({ dbPath }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MigrationChangedError);
    expect((err as Error).message).toBe(`This store's schema is at migration 999, newer than this cbp knows (${known}): a newer cbp wrote it. Upgrade cbp here.`);
  });

  it('rolls back a migration that fails, leaving it unrecorded', async () => {
    const dir = tmpDir();
    const migrationsDir = path.join(dir, 'migrations');
    cpSync(path.join(ROOT, 'sql', 'migrations'), migrationsDir, { recursive: true });
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path.join(migrationsDir, '900_broken.sql'), 'CREATE TABLE half_done (x INTEGER);\nSELECT * FROM no_such_table;\n');
    const dbPath = path.join(dir, 'cbp.duckdb');
    await expect(openStore({ dbPath, migrationsDir })).rejects.toThrow(/no_such_table/);
    const s = await openStore({ dbPath, migrationsDir: path.join(ROOT, 'sql', 'migrations') });
    expect(await s.all("SELECT * FROM duckdb_tables() WHERE table_name = 'half_done'")).toEqual([]);
    expect(await s.all('SELECT * FROM schema_migrations WHERE version = 900')).toEqual([]);
    s.close();
  });

  it('stores status and card brand as ENUMs whose values are the contract\'s, keeping rows loaded before 007', async () => {
    const dir = tmpDir();
    const migrationsDir = path.join(dir, 'migrations');
    cpSync(path.join(ROOT, 'sql', 'migrations'), migrationsDir, { recursive: true });
    rmSync(path.join(migrationsDir, '007_enum_columns.sql'));
    const dbPath = path.join(dir, 'cbp.duckdb');
    const old = await openStore({ dbPath, migrationsDir });
    await loadReport(old, writeJson(dir, 'a.json', [chargeback(), chargeback({ case_number: 'CB-2', status: 'Won', card_type: 'visa' })]), { kind: 'chargebacks', seenAt: '2024-03-01T00:00:00Z' });
    await loadReport(old, writeJson(dir, 'b.json', [chargeback({ status: 'Lost' })]), { kind: 'chargebacks', seenAt: '2024-03-02T00:00:00Z' });
    const before = await old.all('SELECT * FROM chargeback_status_history ORDER BY ALL');
    const cases = await old.all('SELECT * FROM chargebacks ORDER BY ALL');
    old.close();
    const s = await openStore({ dbPath });
    expect(await s.all('SELECT * FROM chargeback_status_history ORDER BY ALL')).toEqual(before);
    expect(await s.all('SELECT * FROM chargebacks ORDER BY ALL')).toEqual(cases);
    const enums = await s.all<{ name: string; vals: string[] }>(
      "SELECT type_name AS name, enum_range(NULL::chargeback_status)::VARCHAR[] AS a, enum_range(NULL::card_brand)::VARCHAR[] AS b FROM duckdb_types() WHERE type_name = 'chargeback_status'",
    );
    // Declared in byte order, so an ENUM sorts exactly as the text did.
    const byteOrder = (xs: readonly string[]) => [...xs].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1));
    expect(enums[0]).toMatchObject({ a: byteOrder(CHARGEBACK_STATUSES), b: byteOrder(CARD_BRANDS) });
    const STATUS_ENUM = "ENUM('Did Not Fight', 'Lost', 'New', 'Pending', 'Pre-Arbitration', 'Result Unobtainable', 'Won')";
    const types = await s.all("SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE column_name IN ('status', 'card_type') AND table_name LIKE 'chargeback%' ORDER BY ALL");
    expect(types).toEqual([
      { table_name: 'chargeback_status_history', column_name: 'status', data_type: STATUS_ENUM },
      { table_name: 'chargeback_status_log', column_name: 'status', data_type: STATUS_ENUM },
      { table_name: 'chargebacks', column_name: 'card_type', data_type: 'ENUM(\'american_express\', \'diners\', \'discover\', \'elo\', \'jcb\', \'mastercard\', \'paypal\', \'visa\')' },
      { table_name: 'chargebacks', column_name: 'status', data_type: STATUS_ENUM },
    ]);
    // Orderings are those of text: a tie on seen_at broken by status, min and max.
    expect(await s.all("SELECT min(status) AS lo, max(status) AS hi, string_agg(status, ',' ORDER BY status) AS o FROM (VALUES ('Pending'), ('Did Not Fight'), ('Won'), ('Lost')) v(x), LATERAL (SELECT x::chargeback_status AS status)")).toEqual([
      { lo: 'Did Not Fight', hi: 'Won', o: 'Did Not Fight,Lost,Pending,Won' },
    ]);
    // What analysts write keeps working: text comparisons (even with no such value), functions, coalesce.
    expect(await s.all("SELECT count(*) FILTER (WHERE status = 'Lost') AS lost, count(*) FILTER (WHERE status = 'lost') AS none, max(lower(status) || '/' || coalesce(card_type, '(unknown)')) AS t FROM chargebacks")).toEqual([
      { lost: '1', none: '0', t: 'won/visa' },
    ]);
    s.close();
  });

  it('migration 008 drops the done marks no window could have earned (its last day not over when marked) and starts the generation counter', async () => {
    const dir = tmpDir();
    const migrationsDir = path.join(dir, 'migrations');
    cpSync(path.join(ROOT, 'sql', 'migrations'), migrationsDir, { recursive: true });
    for (const m of readMigrations(migrationsDir)) if (m.version >= 8) rmSync(path.join(migrationsDir, m.file));
    const dbPath = path.join(dir, 'cbp.duckdb');
    const old = await openStore({ dbPath, migrationsDir });
    // As a cbp before issue #10 left them after `backfill --from 2026-01-01 --to 2026-06-30` on 2026-01-05.
    const mark = (id: string, end: string) =>
      old.run(`INSERT INTO windows_done VALUES ('chargebacks', '${id}', DATE '${id.slice(0, 10)}', DATE '${end}', 0, 0, NULL, NULL, TIMESTAMP '2026-01-05 10:00:00')`);
    await mark('2025-12-29..2026-01-04', '2026-01-04');
    await mark('2026-01-05..2026-01-11', '2026-01-11');
    await mark('2026-06-29..2026-06-30', '2026-06-30');
    old.close();
    const s = await openStore({ dbPath });
    expect(await s.all("SELECT window_id, service_time FROM windows_done ORDER BY 1")).toEqual([{ window_id: '2025-12-29..2026-01-04', service_time: null }]);
    const [g] = await s.all<{ generation: string }>('SELECT generation FROM store_generation');
    expect(Number(g.generation)).toBeGreaterThanOrEqual(1);
    s.close();
  });

  it('makes the views again when their files changed or one is missing from the store, or `db migrate` asks; not on every open', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    const viewsDir = path.join(dir, 'views');
    cpSync(path.join(ROOT, 'sql', 'views'), viewsDir, { recursive: true });
    // When the views were last made (schema_views), after an open, and whether mart_chargebacks is there.
    const open = async (o: { remakeViews?: boolean; then?: string } = {}) => {
      const s = await openStore({ dbPath, viewsDir, remakeViews: o.remakeViews });
      const [m] = await s.all<{ at: string }>('SELECT applied_at::VARCHAR AS at FROM schema_views');
      const has = s.migration!.views.includes('mart_chargebacks');
      if (o.then) await s.run(o.then);
      s.close();
      return { at: m!.at, has };
    };
    const first = await open();
    expect(first.has).toBe(true);
    expect(await open()).toEqual(first); // the same files, the same views: kept
    const forced = await open({ remakeViews: true }); // cbp db migrate
    expect(forced.at).not.toBe(first.at);
    await open({ then: 'DROP VIEW mart_chargebacks' }); // by hand
    const healed = await open();
    expect(healed).toMatchObject({ has: true });
    expect(healed.at).not.toBe(forced.at);
    appendFileSync(path.join(viewsDir, '99_extra.sql'), 'CREATE OR REPLACE VIEW extra_view AS SELECT 1 AS x;\n');
    const s1 = await openStore({ dbPath, viewsDir });
    expect(s1.migration!.views).toContain('extra_view'); // files changed
    s1.close();
  });

  it('makes the views in layers', async () => {
    const s = await openStore({ dbPath: path.join(tmpDir(), 'cbp.duckdb') });
    const views = s.migration!.views;
    for (const v of ['stg_reports__chargebacks', 'int_chargebacks_joined', 'int_prevention_alerts_joined', 'int_rdr_cases_joined',
      'int_order_validations_joined', 'fct_chargeback_status_changes', 'dim_mids', 'mart_event_match_rates', 'mart_chargebacks',
      'mart_disputes_open', 'int_prevention_cases_unioned', 'mart_prevention_outcomes', 'mart_disputes_by_vintage']) {
      expect(views).toContain(v);
    }
    expect(s.migration!.skippedViews).toEqual([]);
    s.close();
  });
});

async function addEvent(s: Awaited<ReturnType<typeof openStore>>, guid: string, type: string, payload: Record<string, unknown>, at = '2024-03-02T11:00:00Z') {
  await s.run(
    `INSERT INTO events_raw VALUES ($1, $2, $3::TIMESTAMP, $3::TIMESTAMP, $4::JSON, 'seg-1', 1, now()::TIMESTAMP)`,
    [guid, type, at.replace('T', ' ').replace('Z', ''), JSON.stringify({ event_guid: guid, event_type: type, event_timestamp: at, ...payload })],
  );
}

describe('report rows joined with their events', () => {
  it('returns every report row, without events, while events_raw is empty', async () => {
    const dir = tmpDir();
    const s = await openStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    await loadReport(s, writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    const rows = await s.all<{ has_events: boolean; chargeback_guid: string | null }>('SELECT * FROM int_chargebacks_joined');
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.has_events === false && r.chargeback_guid === null)).toBe(true);
    const [rate] = await s.all<{ report_rows: string; report_rows_matched: string; event_match_rate: null }>(
      "SELECT * FROM mart_event_match_rates WHERE entity = 'chargebacks'",
    );
    expect(rate).toMatchObject({ report_rows: '2', report_rows_matched: '0', event_match_rate: null });
    s.close();
  });

  it('joins a chargeback with its new, match, result and dnf events on mid + case_number', async () => {
    const dir = tmpDir();
    const s = await openStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    await loadReport(s, writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    const base = { case_number: 'CB-1', mid: 'MID-1', chargeback_guid: 'chb_1', amount: '94.76', due_date: '2024-03-20', reason_description: 'Fraud', processor_transaction_id: 'ptx-1', alternate_transaction_id: 'alt-1' };
    await addEvent(s, 'e1', 'chargeback.new', base);
    await addEvent(s, 'e2', 'chargeback.match', { ...base, order_guid: 'ord_1', order_id: 'ORDER-1', crm_account_guid: 'crm_1' }, '2024-03-02T12:00:00Z');
    await addEvent(s, 'e3', 'chargeback.result', { case_number: 'CB-1', mid: 'MID-1', chargeback_guid: 'chb_1', result: 'won' }, '2024-03-10T00:00:00Z');
    await addEvent(s, 'e4', 'chargeback.dnf', { case_number: 'CB-1', mid: 'MID-1', chargeback_guid: 'chb_1', dnf_reason: 'Low amount', dnf_timestamp: '2024-03-11 00:00:00' }, '2024-03-11T00:00:00Z');
    // the same case number under another merchant account is another case
    await addEvent(s, 'e5', 'chargeback.new', { ...base, mid: 'MID-OTHER', chargeback_guid: 'chb_9' });
    const [row] = await s.all<Record<string, unknown>>("SELECT * FROM int_chargebacks_joined WHERE case_number = 'CB-1'");
    expect(row).toMatchObject({
      chargeback_guid: 'chb_1',
      order_id: 'ORDER-1',
      order_guid: 'ord_1',
      due_date: '2024-03-20',
      reason_description: 'Fraud',
      processor_transaction_id: 'ptx-1',
      alternate_transaction_id: 'alt-1',
      result: 'won',
      dnf_reason: 'Low amount',
      has_new_event: true,
      has_match_event: true,
    });
    const [rate] = await s.all<Record<string, unknown>>("SELECT * FROM mart_event_match_rates WHERE entity = 'chargebacks'");
    expect(rate).toMatchObject({ report_rows: '2', report_rows_matched: '1', report_match_rate: 0.5, event_cases: '2', event_cases_matched: '1', event_match_rate: 0.5 });
    s.close();
  });

  it('joins a prevention alert with its events on prevention_case_number = alert_case_id', async () => {
    const dir = tmpDir();
    const s = await openStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    await loadReport(s, writeJson(dir, 'pv.json', [prevention({ mid: '' })]), { kind: 'prevention', seenAt: '2024-03-05T00:00:00Z' });
    const p = { prevention_case_number: 'pre_540385dce935441baca73ae04d319c35', prevention_guid: 'prv_1', prevention_type: 'ethoca', mid: 'MID-7', amount: 25 };
    await addEvent(s, 'p1', 'prevention.new', p);
    await addEvent(s, 'p2', 'prevention.match', { ...p, order_guid: 'ord_7', order_id: 'ORD-7', crm_account_guid: 'crm' });
    const [row] = await s.all<Record<string, unknown>>('SELECT * FROM int_prevention_alerts_joined');
    expect(row).toMatchObject({ prevention_guid: 'prv_1', prevention_type: 'ethoca', order_guid: 'ord_7', mid: 'MID-7', has_match_event: true });
    const [rate] = await s.all<Record<string, unknown>>("SELECT * FROM mart_event_match_rates WHERE entity = 'prevention'");
    expect(rate).toMatchObject({ report_match_rate: 1, event_match_rate: 1 });
    await addEvent(s, 'r1', 'rdr.new', { rdr_guid: 'rdr_1', rdr_case_number: 'R-1', rdr_resolution: 'accepted', amount: 5 });
    await addEvent(s, 'r2', 'rdr.match', { rdr_guid: 'rdr_1', rdr_case_number: 'R-1', rdr_resolution: 'Accepted', amount: 5, order_guid: 'ord_r' });
    await addEvent(s, 'o1', 'order_validation.new', { order_validation_guid: 'ov_1', amount: 3 });
    expect(await s.all('SELECT rdr_guid, order_guid, has_new_event, has_match_event FROM int_rdr_cases_joined')).toEqual([
      { rdr_guid: 'rdr_1', order_guid: 'ord_r', has_new_event: true, has_match_event: true },
    ]);
    expect(await s.all('SELECT order_validation_guid, has_new_event, has_match_event FROM int_order_validations_joined')).toEqual([
      { order_validation_guid: 'ov_1', has_new_event: true, has_match_event: false },
    ]);
    s.close();
  });
});

describe('Store.all', () => {
  it("gives each row as DuckDB's reader does (getRowObjectsJson), whatever the columns' types and names", async () => {
    const store = await openStore({ dbPath: path.join(tmpDir(), 'cbp.duckdb') });
    try {
      // Several chunks; every kind of value the store holds; a name repeated, one with a quote, one that is "__proto__";
      // texts repeated (net), and more distinct ones (s: 4,000 of them) than Store.all shares one string for.
      const sql = `SELECT range AS i, range::INTEGER AS n, (range / 7)::DECIMAL(18, 4) AS dec, range::DOUBLE / 3 AS d,
                          CASE range % 4 WHEN 0 THEN 'NaN'::DOUBLE WHEN 1 THEN 'Infinity'::DOUBLE WHEN 2 THEN NULL ELSE -range::FLOAT END AS odd,
                          (['b', 'a'])[range % 2 + 1]::ENUM('a', 'b') AS e, (range % 100)::UTINYINT AS u,
                          CASE WHEN range % 5 = 0 THEN NULL ELSE 'm' || range END AS s, range % 2 = 0 AS b,
                          (['visa', 'mastercard', NULL])[range % 3 + 1] AS net,
                          DATE '2024-01-01' + range::INTEGER AS day, TIMESTAMP '2024-01-01 00:00:00' + to_seconds(range) AS at,
                          [range, range + 1] AS list, {'k': range} AS st, range AS i, 'x' AS "we""ird", 1 AS "__proto__"
                     FROM range(5000) ORDER BY range`;
      const rows = await store.all<Record<string, unknown>>(sql);
      const { DuckDBInstance } = await import('@duckdb/node-api');
      const raw = await (await DuckDBInstance.create(':memory:')).connect();
      try {
        // (The reader's objects lack the "__proto__" column: it sets their prototype, which a number leaves as it was.)
        expect(rows.map(({ ['__proto__']: _p, ...rest }) => rest)).toEqual((await raw.runAndReadAll(sql)).getRowObjectsJson());
      } finally {
        raw.closeSync();
      }
      expect(rows.length).toBe(5000);
      expect(Object.keys(rows[7])).toEqual(['i', 'n', 'dec', 'd', 'odd', 'e', 'u', 's', 'b', 'net', 'day', 'at', 'list', 'st', 'i:1', 'we"ird', '__proto__']);
      expect(rows.slice(0, 4).map((r) => r.odd)).toEqual(['NaN', 'Infinity', null, -3]);
      expect(Object.getPrototypeOf(rows[7])).toBe(Object.prototype);
      expect(Object.hasOwn(rows[7], '__proto__')).toBe(true);
      expect(rows[7]).toMatchObject({ i: '7', n: 7, dec: '1.0000', s: 'm7', b: false, net: 'mastercard', day: '2024-01-08', list: ['7', '8'], st: { k: '7' } });
      expect(await store.all('SELECT 1 AS x WHERE $n > 1', { n: 0 })).toEqual([]);
    } finally {
      store.close();
    }
  });
});

describe('Store.mapRows, Store.releaseMemory and Store.capMemory', () => {
  it('maps every row of a result of several chunks, values as columns gives them', async () => {
    const store = await openStore({ dbPath: path.join(tmpDir(), 'cbp.duckdb') });
    try {
      const sql = `SELECT range AS i, range::DOUBLE / 3 AS d, CASE WHEN range % 7 = 0 THEN NULL ELSE 'm' || range END AS s, range % 2 = 0 AS b
                     FROM range(5000) ORDER BY range`;
      const rows = await store.mapRows(sql, undefined, (column) => {
        const [i, d, s, b, none] = ['i', 'd', 's', 'b', 'nowhere'].map(column);
        return (r) => ({ i: i[r], d: d[r], s: s[r], b: b[r], none: none[r] });
      });
      const cols = await store.columns(sql);
      expect(rows.length).toBe(5000);
      expect(rows.map((r) => r.i)).toEqual(cols.column('i'));
      expect(rows.map((r) => r.d)).toEqual(cols.column('d'));
      expect(rows.map((r) => r.s)).toEqual(cols.column('s'));
      expect(rows.map((r) => r.b)).toEqual(cols.column('b'));
      expect(rows[4999]).toEqual({ i: 4999n, d: 4999 / 3, s: 'm4999', b: false, none: undefined });
      expect(await store.mapRows('SELECT 1 AS x WHERE $n > 1', { n: 0 }, (column) => (r) => column('x')[r])).toEqual([]);
    } finally {
      store.close();
    }
  });

  it('reads the columns it reads straight from memory as DuckDB\'s reader does, NULLs, booleans and ENUMs (up to 70,000 values) included', async () => {
    const store = await openStore({ dbPath: path.join(tmpDir(), 'cbp.duckdb') });
    try {
      const nul = (e: string) => `CASE WHEN range % 5 = 3 THEN NULL ELSE ${e} END`;
      const cols: Record<string, string> = {
        d: nul("CASE range % 4 WHEN 0 THEN 'NaN'::DOUBLE WHEN 1 THEN -range / 7 ELSE range * 1e300 END"),
        f: nul('range::FLOAT / 3'), i: nul('(range - 2500)::INTEGER'), si: nul('(range % 30000 - 15000)::SMALLINT'), ti: nul('(range % 250 - 125)::TINYINT'),
        ui: nul('range::UINTEGER * 100000'), us: nul('(range % 60000)::USMALLINT'), ut: nul('(range % 250)::UTINYINT'), b: nul('range % 3 = 0'),
        e8: nul("(['b', 'a', 'c'])[range % 3 + 1]::ENUM('a', 'b', 'c')"),
        e16: nul("('w' || (range % 300))::e_mid"), e32: nul("('v' || (range % 70000))::e_big"),
        v: nul("'text ' || range"), g: nul('range::BIGINT * 3'),
      };
      // (an ENUM of 300 values is held in 16 bits, one of 70,000 in 32)
      await store.run("CREATE TYPE e_mid AS ENUM (SELECT 'w' || x FROM range(300) t(x)); CREATE TYPE e_big AS ENUM (SELECT 'v' || x FROM range(70000) t(x))");
      const sql = `SELECT ${Object.entries(cols).map(([k, e]) => `${e} AS ${k}`).join(', ')} FROM range(5000) ORDER BY range`;
      const names = Object.keys(cols);
      const rows = await store.mapRows(sql, undefined, (column) => {
        const values = names.map(column);
        return (r) => values.map((v) => v[r]);
      });
      const reference = await store.columns(sql);
      expect(rows.length).toBe(5000);
      names.forEach((n, j) => expect([n, rows.map((r) => r[j])]).toEqual([n, reference.column(n)]));
      expect(rows[3].every((v) => v === null)).toBe(true);
      // Every fixed-width column was read from memory (the reference above went through getItem); text and BIGINT not.
      const result = await store.conn.run(sql);
      const chunk = result.getChunk(1);
      const types = result.columnTypes();
      expect(names.filter((n, j) => fastColumn(chunk, j, types[j], chunk.rowCount) !== undefined)).toEqual(names.filter((n) => n !== 'v' && n !== 'g'));
      expect(fastColumn(chunk, names.indexOf('e32'), types[names.indexOf('e32')], chunk.rowCount)).toEqual(reference.column('e32').slice(2048, 4096));
      expect(rows[6]).toEqual([6e300, 2, -2494, -14994, -119, 600000, 6, 6, true, 'b', 'w6', 'v6', 'text 6', 18n]);
    } finally {
      store.close();
    }
  });

  it('gives back the blocks DuckDB cached, the memory limit as it was; not inside a transaction, nor on a locked session', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    const store = await openStore({ dbPath, memoryLimit: '200MB' });
    const cached = async () => Number((await store.all<{ b: string }>("SELECT sum(memory_usage_bytes) AS b FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"))[0].b);
    const limit = async () => (await store.all<{ l: string }>("SELECT current_setting('memory_limit') AS l"))[0].l;
    try {
      await store.run("CREATE TABLE big AS SELECT range AS x, md5(range::VARCHAR) AS s FROM range(3000000)");
      await store.run('CHECKPOINT');
      await store.all('SELECT max(s), max(x) FROM big');
      const before = await limit();
      expect(await cached()).toBeGreaterThan(32 * 1024 * 1024);
      expect(await store.transaction(async (s) => s.releaseMemory())).toBe(false);
      expect(await store.transaction(async (s) => s.releaseMemory('allocator'))).toBe(false);
      // Only what the allocator holds: the cached blocks stay.
      expect(await store.releaseMemory('allocator')).toBe(true);
      expect(await cached()).toBeGreaterThan(32 * 1024 * 1024);
      expect(await limit()).toBe(before);
      expect(await store.releaseMemory()).toBe(true);
      expect(await cached()).toBeLessThan(16 * 1024 * 1024);
      expect(await limit()).toBe(before);
      // Read again from the file, whole.
      expect(await store.all('SELECT count(DISTINCT s)::INTEGER AS n FROM big')).toEqual([{ n: 3000000 }]);
    } finally {
      store.close();
    }
    const { openAnalystSession } = await import('../store/analyst.ts');
    const session = await openAnalystSession(dbPath);
    try {
      expect(await session.releaseMemory()).toBe(false);
      expect(await session.releaseMemory('allocator')).toBe(false);
      expect(await session.all('SELECT count(*)::INTEGER AS n FROM big')).toEqual([{ n: 3000000 }]);
    } finally {
      session.close();
    }
  });

  it('lowers the memory limit for a scan and restores it, a release inside keeping the lower one; as it is where it cannot', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    const store = await openStore({ dbPath, memoryLimit: '200MB' });
    const limit = async (s = store) => (await s.all<{ l: string }>("SELECT current_setting('memory_limit') AS l"))[0].l;
    try {
      await store.run('CREATE TABLE big AS SELECT range AS x, md5(range::VARCHAR) AS s FROM range(3000000); CHECKPOINT');
      const before = await limit();
      const peak = await store.capMemory(64e6, async () => {
        const seen = [await limit()];
        // Every block of the table read once, within the lower limit.
        expect(await store.all('SELECT count(DISTINCT s)::INTEGER AS n FROM big')).toEqual([{ n: 3000000 }]);
        expect(await store.releaseMemory()).toBe(true);
        seen.push(await limit());
        return seen;
      });
      expect(peak).toEqual(['61.0 MiB', '61.0 MiB']);
      expect(await limit()).toBe(before);
      // Above the store's own limit, or above an outer cap: nothing changes; a lower one inside lowers it, then the
      // outer holds again. Inside a transaction nothing changes either: a statement out of memory there would end it.
      expect(await store.capMemory(400e6, limit)).toBe(before);
      expect(await store.capMemory(32e6, () => store.capMemory(64e6, limit))).toBe('30.5 MiB');
      expect(await store.capMemory(64e6, async () => [await store.capMemory(32e6, limit), await limit()])).toEqual(['30.5 MiB', '61.0 MiB']);
      expect(await store.transaction((s) => s.capMemory(64e6, () => limit(s)))).toBe(before);
      expect(await limit()).toBe(before);
      // A read out of memory under the cap fails as DuckDB says, the limit restored; with `rerun` it runs again outside
      // the cap, under an outer cap's limit (a list of 2,000,000 numbers, which no spill makes smaller than the cap).
      const list = (s = store) => s.all<{ n: number }>('SELECT len(list(range))::INTEGER AS n FROM range(2000000)');
      await expect(store.capMemory(8e6, list)).rejects.toThrow(/^Out of Memory Error/);
      expect(await limit()).toBe(before);
      expect(await store.capMemory(8e6, list, { rerun: true })).toEqual([{ n: 2000000 }]);
      expect(await store.capMemory(64e6, () => store.capMemory(8e6, async () => [await list(), await limit()], { rerun: true }))).toEqual([[{ n: 2000000 }], '61.0 MiB']);
      expect(await limit()).toBe(before);
      expect(await store.transaction((s) => s.capMemory(8e6, () => list(s)))).toEqual([{ n: 2000000 }]);
      // Another caller's transaction waits for the cap to end: it never runs under the lower limit.
      let go!: () => void;
      const held = new Promise<void>((r) => { go = r; });
      const capped = store.capMemory(64e6, async () => { await held; return limit(); });
      const other = store.transaction((s) => limit(s));
      go();
      expect(await capped).toBe('61.0 MiB');
      expect(await other).toBe(before);
      // A failing scan restores the limit too.
      await expect(store.capMemory(64e6, () => store.all('SELECT * FROM no_such_table'))).rejects.toThrow(/no_such_table/);
      expect(await limit()).toBe(before);
    } finally {
      store.close();
    }
    const { openAnalystSession } = await import('../store/analyst.ts');
    const session = await openAnalystSession(dbPath);
    try {
      const locked = await limit(session);
      expect(await session.capMemory(64e6, () => limit(session))).toBe(locked);
    } finally {
      session.close();
    }
  });
});
