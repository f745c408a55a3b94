// The store as a DuckLake lake on a real PostgreSQL (a throwaway server of this suite, test/helpers/postgres.ts):
// the demo's history gives the same rows on a lake as on a DuckDB file, any DuckDB client reads the lake's views
// without cbp, and the settings are checked at start with the password never shown. docs/lake.md.
import net from 'node:net';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDemo } from '../cli/commands/demo.ts';
import { latestNotices, programRatiosOf } from '../store/demo-queries.ts';
import { openStore, type Store } from '../store/db.ts';
import { DEFAULT_LAKE_EXTENSIONS_DIR, lakeDialect, lakeOpenError, type LakeOptions } from '../store/lake.ts';
import { lakeSecrets } from '../lib/lake-setting.ts';
import { cbp } from './activities-fixtures.ts';
import { gofakes3, lakeRequired, lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dumpStore } from './helpers/store-dump.ts';
import { tempDir } from './helpers/tmp.ts';
import { copyDemo } from './helpers/shared-demo.ts';
import { ingestEvents } from '../store/ingest.ts';
import { recordWindowOutcome } from '../store/windows.ts';
import { recordRun } from '../store/runs.ts';
import { storeVersion } from '../store/generation.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { journalRecord } from '../webhook/server.ts';
import { openJournal } from '../webhook/journal.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

let pg: Postgres;
/** A copy of the demo's folder on a file, made by the first case (the later ones move its store into a lake). */
let onFile: { dataDir: string; dbPath: string; snapshotPath: string };
/** That store's views, every row of its tables and views (dumpStore) and its version, as the first case read them. */
let fileViews: string[];
let fileRows: Record<string, string[]>;
let fileVersion: Awaited<ReturnType<typeof storeVersion>>;
let n = 0;
/** A new, empty lake: its own database and data folder. */
function newLake(): LakeOptions & { store: string } {
  const db = `lake_${++n}`;
  pg.createDb(db);
  return { catalog: pg.dsn(db), dataPath: tempDir('cbp-lake-data-'), store: `ducklake:postgres:${pg.dsn(db)}` };
}

async function withStore<T>(o: Parameters<typeof openStore>[0], fn: (s: Store) => Promise<T>): Promise<T> {
  const s = await openStore(o);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

const viewsOf = async (s: Store) =>
  (await s.all<{ v: string }>("SELECT view_name AS v FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' AND database_name = current_database() ORDER BY 1")).map((r) => r.v);

describe('lake dialect', () => {
  it('knows a password in every spelling an error may quote it', () => {
    expect(lakeSecrets("ducklake:postgres:dbname=x password='Leak Me\\'Now-42'")).toEqual(["Leak Me\\''Now-42", "Leak Me\\'Now-42", "Leak Me''Now-42", "Leak Me'Now-42"]);
    expect(lakeSecrets('ducklake:postgres:dbname=x password=plain')).toEqual(['plain']);
  });

  it('drops ENUM types (their columns VARCHAR), keys and column compression, and nothing else', () => {
    const sql = `CREATE TYPE st AS ENUM ('a', 'b');
CREATE TABLE t (
  id VARCHAR PRIMARY KEY,
  s st NOT NULL,
  st_log VARCHAR USING COMPRESSION dictionary,
  k INTEGER UNIQUE,
  PRIMARY KEY (id, s)
);`;
    const out = lakeDialect(sql, new Set(['st']));
    expect(out).not.toMatch(/ENUM|PRIMARY|UNIQUE|COMPRESSION/);
    expect(out).toMatch(/s VARCHAR NOT NULL/);
    expect(out).toMatch(/st_log VARCHAR,/);
    expect(out).toMatch(/k INTEGER\n/);
  });

  it('says a catalog that dropped the connection while the lake opened stopped answering (exit 1, run again), one never reached is a setting (exit 2)', () => {
    const l = { catalog: "dbname=x password='s3cret'", dataPath: '/d' };
    const dropped = lakeOpenError(l, new Error('Failed to commit: Failed to execute query "COMMIT": server closed the connection unexpectedly\n\tThis probably means…'));
    expect(dropped.code).toBe('CBP_ERR_STORE_UNAVAILABLE');
    expect(dropped.message).toMatch(/stopped answering \(server closed the connection unexpectedly\).*run the command again/);
    expect(lakeOpenError(l, new Error('Failed to execute query "COMMIT": SSL SYSCALL error: EOF detected')).code).toBe('CBP_ERR_STORE_UNAVAILABLE');
    const refused = lakeOpenError(l, new Error("Unable to connect to Postgres at \"dbname=x password='s3cret'\": Connection refused"));
    expect(refused.code).toBe('CBP_ERR_CONFIG');
    expect(refused.message).not.toContain('s3cret');
    // A host:port that is no PostgreSQL closes the connection while connecting: a setting to fix.
    const notPg = lakeOpenError(l, new Error('connection to server at "127.0.0.1", port 8080 failed: server closed the connection unexpectedly'));
    expect(notPg.code).toBe('CBP_ERR_CONFIG');
  });
});

describe.skipIf(skipLake)(lakeTitle('the store on a DuckLake lake'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it('holds the same rows as a DuckDB file after the demo\'s whole story: every table, fact and mart', async () => {
    const lake = newLake();
    // The demo on the lake beside a copy of the run's demo on a file (test/helpers/shared-demo.ts).
    const dataDir = path.join(tempDir(), 'demo');
    const [demo, onLake] = await Promise.all([
      copyDemo(dataDir),
      runDemo({ dataDir: path.join(tempDir(), 'demo'), write: () => undefined, lake: { store: lake.store, dataPath: lake.dataPath } }),
    ]);
    expect(demo.code, demo.stderr).toBe(0);
    onFile = { dataDir, dbPath: path.join(dataDir, 'cbp.duckdb'), snapshotPath: path.join(dataDir, 'published', 'cbp.duckdb') };
    // What each demo printed at its end: the lake's, and the file's as its store gives it.
    const month = String(onLake.ratios[0]!.month);
    const printed = await withStore({ dbPath: onFile.dbPath, readOnly: true }, async (s) => ({ ratios: await programRatiosOf(s, month), alerts: await latestNotices(s, 20) }));
    expect({ ratios: onLake.ratios, alerts: onLake.alerts }).toEqual(printed);
    fileViews = await withStore({ dbPath: onFile.dbPath, readOnly: true }, viewsOf);
    const lakeViews = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, viewsOf);
    expect(lakeViews).toEqual(fileViews);
    const a = (fileRows = await withStore({ dbPath: onFile.dbPath, readOnly: true }, (s) => dumpStore(s, fileViews)));
    fileVersion = await withStore({ dbPath: onFile.dbPath, readOnly: true }, storeVersion);
    const b = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => dumpStore(s, fileViews));
    expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
    // Table by table, the first row that differs (a diff of thousands of rows says less).
    for (const t of Object.keys(a)) {
      const i = a[t]!.findIndex((r, k) => r !== b[t]![k]);
      expect({ table: t, rows: b[t]!.length, first: b[t]![i] ?? null }).toEqual({ table: t, rows: a[t]!.length, first: a[t]![i] ?? null });
    }
    expect(a.mart_ratios!.length).toBeGreaterThan(100);

    // Analysts read the lake in place while a worker writes (a run recorded every 50 ms): the same answers as the file's.
    const env = { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath, CBP_DATA_DIR: onLake.dataDir, CBP_THRESHOLDS_FILE: path.join(onLake.dataDir, 'thresholds.json') };
    const fileEnv = { CBP_DATA_DIR: onFile.dataDir, CBP_THRESHOLDS_FILE: path.join(onFile.dataDir, 'thresholds.json') };
    const writer = await openStore({ dbPath: 'lake', lake });
    let writing = true;
    const writes = (async () => {
      for (let i = 0; writing; i++) {
        await recordRun(writer, { runId: `busy-${i}`, workflow: 'ingest', status: 'ok', startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), summary: {} });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      const q = "SELECT mid, network, program, month, state, round(ratio_pct, 4) AS pct FROM mart_ratios WHERE metric = 'count' ORDER BY ALL";
      const [sqlLake, sqlFile] = await Promise.all([cbp(['sql', q, '--format', 'json'], env), cbp(['sql', '--snapshot', onFile.snapshotPath, q, '--format', 'json'], fileEnv)]);
      expect(sqlLake.code, sqlLake.stderr).toBe(0);
      expect(JSON.parse(sqlLake.stdout)).toEqual(JSON.parse(sqlFile.stdout));
      const [ratiosLake, ratiosFile] = await Promise.all([cbp(['ratios', '--json'], env), cbp(['ratios', '--json'], fileEnv)]);
      expect(ratiosLake.code, ratiosLake.stderr).toBe(0);
      expect(JSON.parse(ratiosLake.stdout)).toEqual(JSON.parse(ratiosFile.stdout));
      const status = await cbp(['status', '--json'], env);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ source: 'store', snapshot: { path: null, exists: false } });
      const snapshot = await cbp(['db', 'snapshot'], env);
      expect(snapshot.code).toBe(2);
      expect(snapshot.stderr).toMatch(/a lake .*has no snapshot file: analysts read the lake itself/);
      const out = tempDir();
      const exported = await cbp(['export', '--out', path.join(out, 'x'), '--format', 'csv', '--table', 'mart_chargebacks', '--json'], env);
      expect(exported.code, exported.stderr).toBe(0);
      expect(JSON.parse(exported.stdout).tables[0].rows).toBe(a.mart_chargebacks!.length);
      const report = await cbp(['report', '--out', path.join(out, 'report.html')], env);
      expect(report.code, report.stderr).toBe(0);
      // The analyst's session reads no file but the lake's own.
      const refused = await cbp(['sql', "SELECT * FROM read_text('/etc/hostname')"], env);
      expect(refused.code).toBe(2);
    } finally {
      writing = false;
      await writes;
      writer.close();
    }

    // Any DuckDB client reads every view with the lake's extensions alone: cbp's macros live in the lake's catalog.
    const plain = await DuckDBInstance.create(':memory:', { extension_directory: DEFAULT_LAKE_EXTENSIONS_DIR, autoinstall_known_extensions: 'false', autoload_known_extensions: 'true' });
    const c = await plain.connect();
    try {
      await c.run(`ATTACH 'ducklake:postgres:${lake.catalog}' AS lake (DATA_PATH '${lake.dataPath}', READ_ONLY)`);
      for (const v of fileViews) {
        const r = await c.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM lake."${v}"`);
        expect(r.getRowObjects()[0]!.n, v).toBe(a[v]!.length);
      }
    } finally {
      c.closeSync();
      plain.closeSync();
    }
    // The README's DuckDB CLI line as written, from the cbp folder, with this lake's catalog and data path.
    const tools = process.env.CBP_ANALYST_TOOLS_BIN ?? path.join(ROOT, '.tools', 'analyst', 'bin');
    const line = /^duckdb -c "SET extension_directory=.*$/m.exec(readFileSync(path.join(ROOT, 'README.md'), 'utf8'))![0]
      .replace(/ducklake:postgres:[^']*/, `ducklake:postgres:${lake.catalog}`).replace('/shared/cbp-lake', lake.dataPath);
    if (existsSync(path.join(tools, 'duckdb'))) {
      const ran = spawnSync('bash', ['-c', line], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, PATH: `${tools}${path.delimiter}${process.env.PATH}` } });
      expect({ code: ran.status, stderr: ran.stderr }).toMatchObject({ code: 0, stderr: '' });
      expect(ran.stdout).toMatch(/mid\s+│\s+network/);
    } else {
      expect(process.env.CBP_REQUIRE_ANALYST_TOOLS, `no DuckDB CLI in ${tools}: npm run analyst-tools:install`).toBeUndefined();
    }
  });

  it('takes in a file store whole with one command, and is kept up (files merged, snapshots expired) while a worker writes', async () => {
    expect(fileRows, 'the first case read the demo\'s store').toBeDefined();
    const lake = newLake();
    // The demo's rules (its thresholds file): the import judges the table by the rules in force, here the same.
    const env = { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath, CBP_THRESHOLDS_FILE: path.join(onFile.dataDir, 'thresholds.json') };
    const moved = await cbp(['db', 'import-file', onFile.dbPath, '--json'], env);
    expect(moved.code, moved.stderr).toBe(0);
    expect(JSON.parse(moved.stdout).rows).toBeGreaterThan(10_000);
    // The first case's reading of the file store stands while no command since has written to it.
    expect(await withStore({ dbPath: onFile.dbPath, readOnly: true }, storeVersion)).toEqual(fileVersion);
    const a = fileRows;
    const b = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => dumpStore(s, fileViews));
    for (const t of Object.keys(a)) expect({ table: t, rows: b[t]!.length, same: b[t]!.every((r, i) => r === a[t]![i]) }).toEqual({ table: t, rows: a[t]!.length, same: true });
    // A second import is refused: the lake holds rows.
    const again = await cbp(['db', 'import-file', onFile.dbPath], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds rows/);

    // Maintenance while a worker commits a run every 20 ms, at the least grace the command allows (nothing younger is
    // expired or deleted): nothing lost. Then, with nothing running and no grace, snapshots expired and files deleted.
    const writer = await openStore({ dbPath: 'lake', lake });
    let writing = true;
    let written = 0;
    const writes = (async () => {
      for (; writing; written++) {
        await recordRun(writer, { runId: `m-${written}`, workflow: 'ingest', status: 'ok', startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), summary: {} });
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    let kept;
    try {
      kept = await cbp(['db', 'maintain', '--keep-days', '0', '--grace-hours', '1', '--json'], env);
    } finally {
      writing = false;
      await writes;
      writer.close();
    }
    expect(kept.code, kept.stderr).toBe(0);
    const r = JSON.parse(kept.stdout);
    expect(r).toMatchObject({ lake: true });
    expect(r.expiredSnapshots).toBe(0);
    expect(written).toBeGreaterThan(0);
    expect((await cbp(['db', 'maintain', '--grace-hours', '0'], env)).code).toBe(2);
    const cleaned = await withStore({ dbPath: 'lake', lake }, (s) => maintainStore(s, { keepDays: 0, graceHours: 0 }));
    expect(cleaned.expiredSnapshots).toBeGreaterThan(0);
    expect(cleaned.deletedFiles).toBeGreaterThan(0);
    const after = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => dumpStore(s, fileViews));
    for (const t of Object.keys(a)) if (t !== 'runs') expect({ table: t, same: after[t]!.length === a[t]!.length && after[t]!.every((x, i) => x === a[t]![i]) }).toEqual({ table: t, same: true });
    const runs = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => s.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM runs WHERE run_id LIKE 'm-%'"));
    expect(runs[0]!.n).toBe(written);
  });

  it('takes writes of two hosts at once with no row lost or twice: overlapping journals ingested together, one key upserted by both', async () => {
    const lake = newLake();
    const [a, b] = [await openStore({ dbPath: 'lake', lake }), await openStore({ dbPath: 'lake', lake })];
    try {
      // Each host's receiver journaled 60 events; 30 of them reached both (the service's retry hit the other host).
      const journals = await Promise.all([0, 30].map(async (from, h) => {
        const dir = tempDir();
        const j = openJournal({ dir, checkIntervalMs: 0 });
        for (let i = from; i < from + 60; i++) {
          const event = { event_guid: `ev_${i}`, event_type: 'chargeback.result', event_timestamp: '2026-11-01T09:00:00Z', chargeback_guid: `cb_${i}`, result: 'won', host: h };
          await j.append(journalRecord(Buffer.from(JSON.stringify(event)), new Date(Date.parse('2026-11-01T10:00:00Z') + i * 1000)));
        }
        await j.close();
        return dir;
      }));
      const window = { from: '2026-10-01', to: '2026-10-31' };
      const outcome = (s: Store, records: number) => recordWindowOutcome(s, { kind: 'chargebacks', window, records, quarantined: 0, serviceTime: '2026-11-02T00:00:00Z', doneAt: '2026-11-02T00:00:00Z' });
      const [ra, rb] = await Promise.all([
        ingestEvents({ store: a, journalDir: journals[0]! }),
        ingestEvents({ store: b, journalDir: journals[1]! }),
        ...Array.from({ length: 4 }, (_, i) => outcome(i % 2 ? a : b, i)),
      ]);
      expect(ra.failed + rb.failed).toBe(0);
      expect(ra.loaded + rb.loaded).toBe(90);
      expect(ra.duplicates + rb.duplicates).toBe(30);
      const [ev] = await a.all<{ n: number; d: number }>('SELECT count(*)::INTEGER AS n, count(DISTINCT event_guid)::INTEGER AS d FROM events_raw');
      expect(ev).toEqual({ n: 90, d: 90 });
      const done = await b.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM windows_done WHERE kind = 'chargebacks'");
      expect(done[0]!.n).toBe(1);
    } finally {
      a.close();
      b.close();
    }
  });

  it.skipIf(!gofakes3 && !lakeRequired)('keeps its data in S3: a file store moved into a lake on an S3-compatible server reads the same, and nothing else of the bucket', async () => {
    expect(onFile, 'the first case made the demo\'s store').toBeDefined();
    expect(gofakes3, 'an S3-compatible server: .ci/run builds gofakes3 into .tools/go/bin').toBeDefined();
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const s3 = spawn(gofakes3!, ['-backend', 'memory', '-initialbucket', 'cbp', '-host', `127.0.0.1:${port}`], { stdio: 'ignore' });
    try {
      const lake = newLake();
      const env = {
        CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: 's3://cbp/lake/', AWS_ACCESS_KEY_ID: 'cbp-test', AWS_SECRET_ACCESS_KEY: 's3-secret-not-to-be-seen',
        AWS_REGION: 'us-east-1', AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`,
      };
      const moved = await cbp(['db', 'import-file', onFile.dbPath, '--json'], env);
      expect(moved.code, moved.stderr).toBe(0);
      const q = "SELECT count(*)::INTEGER AS n, count(DISTINCT mid)::INTEGER AS mids FROM mart_ratios";
      const [inLake, inFile] = await Promise.all([cbp(['sql', q, '--format', 'json'], env), cbp(['sql', '--snapshot', onFile.snapshotPath, q, '--format', 'json'])]);
      expect(inLake.code, inLake.stderr).toBe(0);
      expect(JSON.parse(inLake.stdout)).toEqual(JSON.parse(inFile.stdout));
      // The data are objects in the bucket, and the analyst's session reads no other object of it.
      const files = await cbp(['sql', "SELECT count(*)::INTEGER AS n FROM ducklake_list_files('lake', 'chargebacks') WHERE data_file LIKE 's3://cbp/lake/%'", '--format', 'json'], env);
      expect(files.code, files.stderr).toBe(0);
      expect(JSON.parse(files.stdout)[0].n).toBeGreaterThan(0);
      const other = await cbp(['sql', "SELECT * FROM read_parquet('s3://cbp/elsewhere/x.parquet')"], env);
      expect(other.code).toBe(2);
      expect(other.stderr + other.stdout + moved.stderr + inLake.stderr).not.toContain('s3-secret-not-to-be-seen');
    } finally {
      s3.kill('SIGKILL');
    }
  });

  it('is named at start, exit 2, when it cannot be reached or its extensions are missing; the password never shows', async () => {
    const lake = newLake();
    const secret = 'pw-n0t-to-be-seen';
    const dead = `ducklake:postgres:dbname=nothing host=127.0.0.1 port=1 user=cbp password=${secret}`;
    const shown = await cbp(['config', 'show', '--json'], { CBP_STORE: dead, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('password=***');
    expect(shown.stdout).not.toContain(secret);

    const unreachable = await cbp(['db', 'migrate'], { CBP_STORE: dead, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr).toMatch(/CBP_STORE: the lake ducklake:postgres:dbname=nothing .*password=\*\*\* .*cannot be opened/);
    expect(unreachable.stderr + unreachable.stdout).not.toContain(secret);

    // A password written with libpq's escapes: masked in every spelling (as written, unescaped, SQL-quoted).
    const escaped = await cbp(['db', 'migrate'], { CBP_STORE: `ducklake:postgres:dbname=nothing host=127.0.0.1 port=1 user=cbp password='Leak Me\\'Now-42'`, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(escaped.code).toBe(2);
    expect(escaped.stderr).toMatch(/password=\*\*\*/);
    expect(escaped.stderr + escaped.stdout).not.toMatch(/Leak|Now-42/);

    // A catalog host that takes the connection and never answers: refused at start once connect_timeout (10 s) passes.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const hung = await cbp(['db', 'migrate'], { CBP_STORE: `ducklake:postgres:dbname=x host=127.0.0.1 port=${port} user=cbp`, CBP_LAKE_DATA_PATH: lake.dataPath });
      expect(hung.code).toBe(2);
      expect(hung.stderr).toMatch(/cannot be opened: .*timeout expired/);
    } finally {
      silent.close();
    }

    const noExtensions = await cbp(['db', 'migrate'], { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath, CBP_LAKE_EXTENSIONS_DIR: tempDir() });
    expect(noExtensions.code).toBe(2);
    expect(noExtensions.stderr).toMatch(/npm run lake:install/);

    const noDataPath = await cbp(['db', 'migrate'], { CBP_STORE: lake.store });
    expect(noDataPath.code).toBe(2);
    expect(noDataPath.stderr).toMatch(/CBP_LAKE_DATA_PATH is not set/);

    const migrated = await cbp(['db', 'migrate', '--json'], { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath });
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(JSON.parse(migrated.stdout).applied.length).toBeGreaterThan(10);
  });
});
