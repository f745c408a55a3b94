// cbp export as a user runs it: the published snapshot's marts and facts as Parquet or CSV, partitioned by
// month, read back by DuckDB; an --out that holds someone else's files is refused and left as it was.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { openSnapshotSession, runAnalystQuery } from '../store/analyst.ts';
import { openTestStore } from './helpers/store-template.ts';
import { EXPORT_TABLES, exportedColumns } from '../store/export.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { insertChargebacks, insertEvents, insertStats, tc40 } from './ratios-fixtures.ts';
import { cbp as runCbp, cbpProcess, type CliRun } from './activities-fixtures.ts';
import { tmpDir } from './store-fixtures.ts';

let dir: string;
let dbPath: string;
let snapshotPath: string;

/** The CLI (test/activities-fixtures.ts), on this test's store and snapshot, in its folder. */
function cbp(args: string[], env: Record<string, string> = {}, run = runCbp): Promise<CliRun> {
  return run(args, { CBP_DATA_DIR: path.join(dir, 'data'), CBP_DB_PATH: dbPath, CBP_SNAPSHOT_PATH: snapshotPath, CBP_LOG_LEVEL: 'silent', ...env }, dir);
}

/** Rows of a query in an in-memory DuckDB (a reader of the export, not cbp), all values as text. */
async function duck(sql: string): Promise<string[][]> {
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  try {
    return (await conn.runAndReadAll(sql)).getRowsJson().map((r) => r.map((v) => (v === null ? null : String(v)))) as string[][];
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}

/** Files under dir, relative, sorted. */
function files(d: string, rel = ''): string[] {
  return readdirSync(path.join(d, rel), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(d, path.join(rel, e.name)) : [path.join(rel, e.name)],
  ).sort();
}

/** Folders under d that hold nothing, relative. */
function emptyFolders(d: string, rel = ''): string[] {
  const entries = readdirSync(path.join(d, rel), { withFileTypes: true });
  if (rel && entries.length === 0) return [rel];
  return entries.flatMap((e) => (e.isDirectory() ? emptyFolders(d, path.join(rel, e.name)) : []));
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;

beforeAll(async () => {
  dir = tmpDir();
  dbPath = path.join(dir, 'data', 'cbp.duckdb');
  snapshotPath = path.join(dir, 'data', 'published', 'cbp.duckdb');
  const store = await openTestStore({ dbPath });
  try {
    await insertStats(store, [
      { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 10, tx: 20_000 },
      { mid: 'm1', network: 'mastercard', month: '2026-02', cb: 400, tx: 25_000 },
    ]);
    await insertChargebacks(store, [
      { mid: 'm1', network: 'mastercard', received: '2026-01-31 23:59:59', n: 3 },
      { mid: 'm1', network: 'mastercard', received: '2026-02-01 00:00:00', n: 5 },
    ]);
    await insertEvents(store, 'prevention.new', [tc40('m1', 'pre_1', '2026-02-01T03:47:10Z')]);
    await evaluateAlerts(store, { asOf: '2026-03-05T00:00:00Z', rules: loadRules() });
    await publishSnapshot(store, { snapshotPath });
  } finally {
    store.close();
  }
});

describe('cbp export', () => {
  it('writes every table as Parquet, by month where it has a date, with a manifest, and DuckDB reads back the snapshot\'s rows', async () => {
    const out = path.join(dir, 'exports', 'all');
    const r = await cbp(['export', '--out', out, '--json']);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    const manifest = JSON.parse(r.stdout) as { tables: Array<{ name: string; rows: number; files: string[] }>; format: string };
    expect(manifest.format).toBe('parquet');
    expect(manifest.tables.map((t) => t.name)).toEqual(EXPORT_TABLES.map((t) => t.name));
    expect(JSON.parse(readFileSync(path.join(out, 'cbp-export.json'), 'utf8'))).toMatchObject({ cbpExport: 1, tables: manifest.tables });
    expect(files(path.join(out, 'mart_chargebacks'))).toEqual(['month=2026-01/data_0.parquet', 'month=2026-02/data_0.parquet']);
    expect(files(path.join(out, 'dim_mids'))).toEqual(['data.parquet']);
    expect(manifest.tables.find((t) => t.name === 'mart_chargebacks')).toMatchObject({ rows: 8 });
    // Every file on disk is in the manifest, and nothing else is in --out.
    expect(files(out)).toEqual(['cbp-export.json', ...manifest.tables.flatMap((t) => t.files)].sort());

    const snap = await openSnapshotSession(snapshotPath);
    try {
      for (const t of ['mart_chargebacks', 'mart_ratios', 'alerts', 'dim_mids']) {
        // Amounts (DECIMAL in the snapshot) come as DOUBLE: pandas would read a Parquet DECIMAL as Python Decimal objects.
        const want = (await runAnalystQuery(snap, `SELECT COLUMNS(*)::VARCHAR FROM (SELECT ${await exportedColumns(snap, t)} FROM ${t}) ORDER BY ALL`)).getRowsJson();
        const cols = (await runAnalystQuery(snap, `SELECT * FROM ${t} LIMIT 0`)).columnNames().map((c) => `"${c}"`).join(', ');
        const got = await duck(`SELECT COLUMNS(*)::VARCHAR FROM (SELECT ${cols} FROM read_parquet(${q(path.join(out, t, '**', '*.parquet'))})) ORDER BY ALL`);
        expect({ t, rows: got }).toEqual({ t, rows: want });
        expect(want.length).toBeGreaterThan(0);
      }
    } finally {
      snap.close();
    }
    const types = await duck(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(${q(path.join(out, 'mart_chargebacks', '**', '*.parquet'))}))`);
    expect(types.filter(([, ty]) => /DECIMAL/.test(ty!))).toEqual([]);
    expect(types).toContainEqual(['amount', 'DOUBLE']);
    const months = await duck(`SELECT month, count(*) FROM read_parquet(${q(path.join(out, 'mart_chargebacks', '**', '*.parquet'))}) GROUP BY ALL ORDER BY 1`);
    expect(months).toEqual([['2026-01', '3'], ['2026-02', '5']]);
  });

  it('writes CSV for the tables and UTC days asked for, and replaces its own previous export whole', async () => {
    const out = path.join(dir, 'exports', 'csv');
    const first = await cbp(['export', '--format', 'csv', '--out', out, '--table', 'mart_chargebacks,mart_ratios']);
    expect(first.code).toBe(0);
    expect(first.stdout).toMatch(/exported to .* \(csv\)/);
    expect(files(out).filter((f) => f.startsWith('mart_chargebacks'))).toEqual(['mart_chargebacks/month=2026-01/data_0.csv', 'mart_chargebacks/month=2026-02/data_0.csv']);
    const again = await cbp(['export', '--format', 'csv', '--out', out, '--table', 'mart_chargebacks', '--from', '2026-02-01', '--to', '2026-02-28', '--json']);
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(again.stdout)).toMatchObject({ replaced: true, from: '2026-02-01', to: '2026-02-28', tables: [{ name: 'mart_chargebacks', rows: 5 }] });
    expect(files(out)).toEqual(['cbp-export.json', 'mart_chargebacks/month=2026-02/data_0.csv']);
    const rows = await duck(`SELECT count(*), min(date_received) FROM read_csv(${q(path.join(out, 'mart_chargebacks', '**', '*.csv'))})`);
    expect(rows).toEqual([['5', '2026-02-01 00:00:00']]);
    expect(readdirSync(path.dirname(out)).filter((e) => e.startsWith('.'))).toEqual([]); // no staging folder left
  });

  it('says so when the ratio table it writes is behind the data (a refresh cut short), and writes it as it is', async () => {
    const behind = path.join(dir, 'behind.duckdb');
    cpSync(snapshotPath, behind);
    const s = await openTestStore({ dbPath: behind, migrate: false });
    await s.run('UPDATE ratio_mart_state SET complete = FALSE');
    s.close();
    const r = await cbp(['export', '--snapshot', behind, '--out', path.join(dir, 'out-behind'), '--table', 'mart_ratios', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/cbp export: mart_ratios was written as it is, behind the data: .*cbp alerts evaluate/);
    expect(JSON.parse(r.stdout).ratiosBehind).toMatch(/cbp alerts evaluate/);
    const fresh = await cbp(['export', '--out', path.join(dir, 'out-fresh'), '--table', 'mart_ratios', '--json']);
    expect(JSON.parse(fresh.stdout).ratiosBehind).toBeNull();
    expect(fresh.stderr).not.toMatch(/behind/);
  });

  it('refuses an --out holding files cbp did not write (exit 2), and deletes nothing', async () => {
    const foreign = path.join(dir, 'exports', 'mine');
    mkdirSync(foreign, { recursive: true });
    writeFileSync(path.join(foreign, 'notes.txt'), 'my notes');
    const r = await cbp(['export', '--out', foreign]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--out .*mine is not empty and holds no cbp export .*cbp never deletes files it did not write/);
    expect(files(foreign)).toEqual(['notes.txt']);

    const previous = path.join(dir, 'exports', 'previous');
    expect((await cbp(['export', '--out', previous, '--table', 'dim_mids'])).code).toBe(0);
    writeFileSync(path.join(previous, 'dim_mids', 'my-analysis.parquet'), 'mine');
    const r2 = await cbp(['export', '--out', previous, '--table', 'dim_mids']);
    expect(r2.code).toBe(2);
    expect(r2.stderr).toMatch(/files cbp did not write \(dim_mids\/my-analysis\.parquet\)/);
    expect(readFileSync(path.join(previous, 'dim_mids', 'my-analysis.parquet'), 'utf8')).toBe('mine');
    expect(existsSync(path.join(previous, 'dim_mids', 'data.parquet'))).toBe(true);
    expect(readdirSync(path.join(dir, 'exports')).filter((e) => e.startsWith('.'))).toEqual([]);
  });

  it('writes a dated table with no rows as one file of no rows, which a reader of its folder reads as an empty table, and replaces that export (accepting the empty folder an earlier cbp left)', async () => {
    const out = path.join(dir, 'exports', 'again');
    const first = await cbp(['export', '--out', out, '--json']);
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 0, stderr: '' });
    const tables = (JSON.parse(first.stdout) as { tables: Array<{ name: string; rows: number; partitionedBy: string | null }> }).tables;
    const none = tables.filter((t) => t.rows === 0 && t.partitionedBy === 'month').map((t) => t.name);
    expect(none).toContain('int_order_validations_joined');
    expect(emptyFolders(out)).toEqual([]);
    for (const t of none) {
      expect(files(path.join(out, t)), t).toEqual(['data.parquet']);
      const read = await duck(`SELECT count(*), count(month) FROM read_parquet(${q(path.join(out, t, '**', '*.parquet'))})`);
      expect(read, t).toEqual([['0', '0']]);
    }
    // What an earlier cbp wrote for a table with no rows: an empty folder its manifest does not name.
    rmSync(path.join(out, 'int_order_validations_joined'), { recursive: true });
    mkdirSync(path.join(out, 'int_order_validations_joined'));
    const again = await cbp(['export', '--out', out, '--json']);
    expect({ code: again.code, stderr: again.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(again.stdout)).toMatchObject({ replaced: true });
    expect(emptyFolders(out)).toEqual([]);
    // Days that leave dated tables empty (those above at least), twice.
    for (let i = 0; i < 2; i++) {
      const days = await cbp(['export', '--out', out, '--from', '2026-02-01', '--to', '2026-02-28', '--json']);
      expect({ code: days.code, stderr: days.stderr }).toEqual({ code: 0, stderr: '' });
      const m = JSON.parse(days.stdout) as { tables: Array<{ rows: number; partitionedBy: string | null; files: string[] }> };
      expect(m.tables.filter((t) => t.partitionedBy && t.rows === 0).length).toBeGreaterThanOrEqual(none.length);
      expect(files(out)).toEqual(['cbp-export.json', ...m.tables.flatMap((t) => t.files)].sort());
      expect(emptyFolders(out)).toEqual([]);
    }
    expect(readdirSync(path.join(dir, 'exports')).filter((e) => e.startsWith('.'))).toEqual([]);
  });

  it('removes what an export of the same --out killed mid-way left beside it, and nothing else', async () => {
    const parent = path.join(dir, 'killed');
    const out = path.join(parent, 'out');
    mkdirSync(parent);
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!; // a process that has ended
    const marker = (pid: number) => ({ '.cbp-export-staging': JSON.stringify({ cbpExportStaging: 1, pid, host: os.hostname() }) });
    const make = (name: string, content: Record<string, string>) => {
      for (const [f, text] of Object.entries(content)) {
        mkdirSync(path.dirname(path.join(parent, name, f)), { recursive: true });
        writeFileSync(path.join(parent, name, f), text);
      }
      return name;
    };
    const partial = { 'mart_chargebacks/month=2026-01/data_0.parquet': 'half a file' };
    const stale = make('.out.cbp-export-a1B2c3', { ...marker(gone), ...partial });
    const leftAlone = [
      make('.out.cbp-export-d4E5f6', { ...marker(process.pid), ...partial }), // an export still running
      make('.out.cbp-export-g7H8i9', { 'notes.txt': 'no marker: not known to be cbp\'s' }),
      make('.other.cbp-export-j1K2l3', { ...marker(gone), ...partial }), // another --out's
      make('.out.cbp-export-toolong1', { ...marker(gone), ...partial }), // not a name cbp makes
      make('.out.cbp-old-p4Q5r6', { 'cbp-export.json': '{"cbpExport":1,"tables":[]}', 'x.csv': 'not in its manifest' }),
    ];
    // A process of its own: the marker of this test's pid stands for an export still running.
    const r = await cbp(['export', '--out', out, '--table', 'dim_mids'], {}, cbpProcess);
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(existsSync(path.join(parent, stale))).toBe(false);
    expect(readdirSync(parent).sort()).toEqual(['out', ...leftAlone].sort());
    expect(files(path.join(parent, '.out.cbp-export-g7H8i9'))).toEqual(['notes.txt']);

    // A replaced export left whole beside --out (killed before its removal): removed once --out exists.
    cpSync(out, path.join(parent, '.out.cbp-old-s7T8u9'), { recursive: true });
    const again = await cbp(['export', '--out', out, '--table', 'dim_mids'], {}, cbpProcess);
    expect(again.code).toBe(0);
    expect(readdirSync(parent).sort()).toEqual(['out', ...leftAlone].sort());
  });

  it('follows an --out that is a symbolic link to a folder, writing where it points and keeping the link', async () => {
    const real = path.join(dir, 'linked', 'real');
    mkdirSync(real, { recursive: true });
    const link = path.join(dir, 'linked', 'link');
    symlinkSync(real, link);
    for (let i = 0; i < 2; i++) {
      const r = await cbp(['export', '--out', link, '--table', 'dim_mids', '--json']);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
      expect(JSON.parse(r.stdout)).toMatchObject({ outDir: link, replaced: i === 1 });
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      expect(files(real)).toEqual(['cbp-export.json', 'dim_mids/data.parquet']);
      expect(readdirSync(path.dirname(link)).sort()).toEqual(['link', 'real']);
    }
    const dangling = path.join(dir, 'linked', 'dangling');
    symlinkSync(path.join(dir, 'linked', 'nowhere'), dangling);
    const d = await cbp(['export', '--out', dangling, '--table', 'dim_mids']);
    expect(d.code).toBe(2);
    expect(d.stderr).toMatch(/--out .*dangling is a symbolic link to .*nowhere, which does not exist/);
  });

  it('reads the snapshot, never the working store: it runs while a writer holds the store', async () => {
    const writer = await openTestStore({ dbPath });
    try {
      const r = await cbp(['export', '--out', path.join(dir, 'exports', 'while-writing'), '--table', 'mart_ratios']);
      expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    } finally {
      writer.close();
    }
  });

  it('says what is wrong with a missing or empty snapshot, a table it does not know and a bad day, and writes nothing', async () => {
    const out = path.join(dir, 'exports', 'never');
    const missing = await cbp(['export', '--out', out], { CBP_SNAPSHOT_PATH: path.join(dir, 'nowhere.duckdb') });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/No snapshot at .*nowhere\.duckdb yet: run a load first/);

    const emptyStore = await openTestStore({ dbPath: path.join(dir, 'empty.duckdb') });
    const emptySnap = path.join(dir, 'empty-published.duckdb');
    await publishSnapshot(emptyStore, { snapshotPath: emptySnap });
    emptyStore.close();
    const empty = await cbp(['export', '--out', out, '--snapshot', emptySnap]);
    expect(empty.code).toBe(1);
    expect(empty.stderr).toMatch(/holds no rows in mart_chargebacks, .* yet: load reports first .* Nothing was written/);

    const none = await cbp(['export', '--out', out, '--from', '2030-01-01']);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/No rows from 2030-01-01 in .*nothing was written/);

    const unknown = await cbp(['export', '--out', out, '--table', 'events_raw']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--table: unknown "events_raw"; expected one or more of mart_chargebacks, /);
    expect((await cbp(['export', '--out', out, '--from', '2026-02-30'])).code).toBe(2);
    expect((await cbp(['export', '--out', out, '--from', '2026-03-01', '--to', '2026-02-01'])).code).toBe(2);
    expect((await cbp(['export', '--out', out, '--format', 'xlsx'])).code).toBe(2);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(path.join(dir, 'exports')).filter((e) => e.startsWith('.'))).toEqual([]);
  });

  it('lists the tables it writes in --help', async () => {
    const r = await cbp(['export', '--help']);
    expect(r.code).toBe(0);
    for (const t of EXPORT_TABLES) expect(r.stdout).toContain(t.name);
  });
});

describe('the export session', () => {
  it('may write into its staging folder only, and cannot change that', async () => {
    const stage = path.join(dir, 'stage');
    mkdirSync(stage);
    const session = await openSnapshotSession(snapshotPath, { writableDir: stage });
    try {
      await session.run(`COPY (SELECT 1 AS x) TO ${q(path.join(stage, 'ok.csv'))}`);
      expect(existsSync(path.join(stage, 'ok.csv'))).toBe(true);
      await expect(runAnalystQuery(session, `COPY (SELECT 1 AS x) TO ${q(path.join(dir, 'outside.csv'))}`)).rejects.toThrow(/COPY \.\.\. TO is not allowed/);
      await expect(runAnalystQuery(session, `COPY (SELECT 1 AS x) TO ${q(path.join(stage, '..', 'up.csv'))}`)).rejects.toThrow(/COPY \.\.\. TO is not allowed/);
      await expect(runAnalystQuery(session, `SET allowed_directories = [${q(dir)}]`)).rejects.toThrow(/settings cannot be changed/);
      await expect(runAnalystQuery(session, "SELECT * FROM read_text('/etc/passwd')")).rejects.toThrow(/reading other files/);
      expect(existsSync(path.join(dir, 'outside.csv'))).toBe(false);
      expect(existsSync(path.join(dir, 'up.csv'))).toBe(false);
    } finally {
      session.close();
    }
  });
});
