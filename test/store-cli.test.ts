// cbp db / load / sql through the real command (a child process), and the snapshot they read.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { openSnapshot, publishSnapshot } from '../store/snapshot.ts';
import { runCbp, type CbpRun } from './helpers/cbp-cli.ts';
import { ROOT, chargeback, midRecord, prevention, tmpDir, writeCsv, writeJson } from './store-fixtures.ts';

function cbp(dir: string, args: string[]): Promise<CbpRun> {
  return runCbp(args, {
    cwd: dir,
    env: {
      CBP_DATA_DIR: path.join(dir, 'data'),
      CBP_DB_PATH: path.join(dir, 'data', 'cbp.duckdb'),
      CBP_SNAPSHOT_PATH: path.join(dir, 'data', 'published', 'cbp.duckdb'),
      CBP_LOG_LEVEL: 'silent',
    },
  });
}

describe('cbp db migrate', () => {
  it('applies the migrations and prints what it did, then reports the store up to date', async () => {
    const dir = tmpDir();
    const first = await cbp(dir, ['db', 'migrate', '--json']);
    expect(first.code).toBe(0);
    const r = JSON.parse(first.stdout) as { applied: Array<{ version: number }>; views: string[]; skippedViews: unknown[] };
    expect(r.applied.map((m) => m.version)).toContain(1);
    expect(r.views).toContain('int_chargebacks_joined');
    const second = await cbp(dir, ['db', 'migrate']);
    expect(second.code).toBe(0);
    expect(second.stdout).toMatch(/up to date/);
  });
});

describe('cbp load', () => {
  it('exits 2 with a usage error when a MID report is given no window', async () => {
    const dir = tmpDir();
    const f = writeJson(dir, 'mid.json', [midRecord()]);
    const r = await cbp(dir, ['load', 'mid_report', f]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--from YYYY-MM-DD --to YYYY-MM-DD/);
    expect(existsSync(path.join(dir, 'data', 'cbp.duckdb'))).toBe(false);
  });

  it('exits 2 on an unknown kind, half a window, or a file whose format cannot be told', async () => {
    const dir = tmpDir();
    const f = writeJson(dir, 'cb.json', [chargeback()]);
    expect((await cbp(dir, ['load', 'refunds', f])).code).toBe(2);
    expect((await cbp(dir, ['load', 'chargebacks', f, '--from', '2024-03-01'])).code).toBe(2);
    writeFileSync(path.join(dir, 'cb.txt'), '[]');
    const r = await cbp(dir, ['load', 'chargebacks', path.join(dir, 'cb.txt')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--format json or --format csv/);
  });

  it('loads a file through landing, keeps it as received, and publishes the snapshot', async () => {
    const dir = tmpDir();
    const f = writeCsv(dir, 'export.csv', 'mid_report', [midRecord()]);
    const r = await cbp(dir, ['load', 'mid_report', f, '--from', '2024-02-01', '--to', '2024-02-29', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { rowsLoaded: number; window: unknown; file: string; snapshot: string };
    expect(out).toMatchObject({ rowsLoaded: 1, window: { start: '2024-02-01', end: '2024-02-29' } });
    expect(path.relative(dir, out.file)).toMatch(/^data\/landing\/mid_report\/2024-02-01_2024-02-29_import-[0-9a-f]{12}\.csv$/);
    expect(existsSync(`${out.file}.meta.json`)).toBe(true);
    expect(existsSync(out.snapshot)).toBe(true);
    const q = await cbp(dir, ['sql', "SELECT network, transaction_count FROM mid_stats ORDER BY network", '--format', 'json']);
    expect(JSON.parse(q.stdout)).toEqual([
      { network: 'all', transaction_count: '200' },
      { network: 'discover', transaction_count: '0' },
      { network: 'mastercard', transaction_count: '50' },
      { network: 'visa', transaction_count: '100' },
    ]);
  });

  it('refuses a file that is not a report of that kind with a clear error, and stores nothing', async () => {
    const dir = tmpDir();
    const f = writeJson(dir, 'pv.json', [prevention()]);
    const r = await cbp(dir, ['load', 'chargebacks', f]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${f} is not a chargebacks report`);
    const notJson = path.join(dir, 'broken.json');
    writeFileSync(notJson, 'this is not json');
    const r2 = await cbp(dir, ['load', 'chargebacks', notJson]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/not a JSON report/);
    expect(readdirSync(path.join(dir, 'data', 'landing', 'chargebacks'))).toEqual([]);
    const s = await openTestStore({ dbPath: path.join(dir, 'data', 'cbp.duckdb') });
    expect(await s.all('SELECT count(*) AS n FROM loads')).toEqual([{ n: '0' }]);
    s.close();
  });
});

describe('cbp sql', () => {
  it('says to run a load first when no snapshot exists yet', async () => {
    const r = await cbp(tmpDir(), ['sql', 'SELECT 1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/No snapshot .* yet: run a load first/);
  });

  it('prints a table, CSV or JSON', async () => {
    const dir = tmpDir();
    await cbp(dir, ['load', 'chargebacks', writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2', status: 'Won', name: 'O\'Brien, "Jo"' })])]);
    const sql = 'SELECT case_number, status, name FROM chargebacks ORDER BY case_number';
    const table = await cbp(dir, ['sql', sql]);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n').slice(0, 4)).toEqual([
      'case_number | status | name',
      '------------+--------+--------------',
      'CB-1        | New    |',
      'CB-2        | Won    | O\'Brien, "Jo"',
    ]);
    expect(table.stdout).toContain('(2 rows)');
    const csv = await cbp(dir, ['sql', sql, '--format', 'csv']);
    expect(csv.stdout).toBe('case_number,status,name\nCB-1,New,\nCB-2,Won,"O\'Brien, ""Jo"""\n');
    const json = await cbp(dir, ['sql', sql, '--format', 'json']);
    expect(JSON.parse(json.stdout)).toEqual([
      { case_number: 'CB-1', status: 'New', name: null },
      { case_number: 'CB-2', status: 'Won', name: 'O\'Brien, "Jo"' },
    ]);
    expect((await cbp(dir, ['sql', sql, '--format', 'xml'])).code).toBe(2);
  });

  it('runs every worked query in sql/queries', async () => {
    const dir = tmpDir();
    await cbp(dir, ['load', 'chargebacks', writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2', status: 'Won', card_type: 'visa' })])]);
    for (const f of readdirSync(path.join(ROOT, 'sql', 'queries')).filter((x) => x.endsWith('.sql'))) {
      const r = await cbp(dir, ['sql', '--file', path.join(ROOT, 'sql', 'queries', f), '--format', 'json']);
      expect({ f, code: r.code, stderr: r.stderr }).toEqual({ f, code: 0, stderr: '' });
      expect(Array.isArray(JSON.parse(r.stdout))).toBe(true);
    }
  });
});

describe('the published snapshot', () => {
  it('is readable by another process while the writer holds the store, and shows only published loads', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'data', 'cbp.duckdb');
    const snapshotPath = path.join(dir, 'data', 'published', 'cbp.duckdb');
    const store = await openTestStore({ dbPath });
    await loadReport(store, writeJson(dir, 'a.json', [chargeback()]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    await publishSnapshot(store, { snapshotPath });
    // Loaded but not yet published: readers still see the previous snapshot.
    await loadReport(store, writeJson(dir, 'b.json', [chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-06T00:00:00Z' });
    const r = await cbp(dir, ['sql', 'SELECT count(*) AS n FROM chargebacks', '--format', 'json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual([{ n: '1' }]);
    await publishSnapshot(store, { snapshotPath });
    const r2 = await cbp(dir, ['sql', 'SELECT count(*) AS n FROM chargebacks', '--format', 'json']);
    expect(JSON.parse(r2.stdout)).toEqual([{ n: '2' }]);
    store.close();
    expect(readdirSync(path.dirname(snapshotPath))).toEqual(['cbp.duckdb']); // no temp file left behind
  });

  it('replaces the snapshot atomically: a reader holding the old copy keeps reading it', async () => {
    const dir = tmpDir();
    const snapshotPath = path.join(dir, 'pub', 'snap.duckdb');
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    await loadReport(store, writeJson(dir, 'a.json', [chargeback()]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    await publishSnapshot(store, { snapshotPath });
    const reader = await openSnapshot(snapshotPath);
    await loadReport(store, writeJson(dir, 'b.json', [chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-06T00:00:00Z' });
    await publishSnapshot(store, { snapshotPath });
    expect(await reader.all('SELECT count(*) AS n FROM chargebacks')).toEqual([{ n: '1' }]);
    reader.close();
    const again = await openSnapshot(snapshotPath);
    expect(await again.all('SELECT count(*) AS n FROM chargebacks')).toEqual([{ n: '2' }]);
    expect(await again.all('SELECT count(*) AS n FROM int_chargebacks_joined')).toEqual([{ n: '2' }]);
    await expect(again.run('DELETE FROM chargebacks')).rejects.toThrow(/read-only/i);
    again.close();
    store.close();
  });
});
