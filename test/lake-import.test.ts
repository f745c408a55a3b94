// A file store moved into a DuckLake lake with one command (on disk and on an S3-compatible server), read by analysts
// while a worker writes, and kept up by `cbp db maintain` meanwhile. docs/lake.md.
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { storeVersion } from '../store/generation.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { recordRun } from '../store/runs.ts';
import { cbp } from './activities-fixtures.ts';
import { gofakes3, lakeRequired, lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { dumpStore } from './helpers/store-dump.ts';
import { tempDir } from './helpers/tmp.ts';
import { fileDemo, newLake, withStore, type FileDemo } from './helpers/lake-stores.ts';

let pg: Postgres;
let onFile: FileDemo;

describe.skipIf(skipLake)(lakeTitle('a file store moved into a lake'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    [pg, onFile] = await Promise.all([startPostgres(), fileDemo()]);
  }, 600_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it('takes in a file store whole with one command, and is kept up (files merged, snapshots expired) while a worker writes', async () => {
    const lake = newLake(pg);
    // The demo's rules (its thresholds file): the import judges the table by the rules in force, here the same.
    const env = { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath, CBP_THRESHOLDS_FILE: path.join(onFile.dataDir, 'thresholds.json') };
    const moved = await cbp(['db', 'import-file', onFile.dbPath, '--json'], env);
    expect(moved.code, moved.stderr).toBe(0);
    expect(JSON.parse(moved.stdout).rows).toBeGreaterThan(10_000);
    // The reading of the file store in beforeAll stands while no command since has written to it.
    expect(await withStore({ dbPath: onFile.dbPath, readOnly: true }, storeVersion)).toEqual(onFile.version);
    const a = onFile.rows;
    const fileViews = onFile.views;
    const b = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => dumpStore(s, fileViews));
    for (const t of Object.keys(a)) expect({ table: t, rows: b[t]!.length, same: b[t]!.every((r, i) => r === a[t]![i]) }).toEqual({ table: t, rows: a[t]!.length, same: true });
    // A second import is refused: the lake holds rows.
    const again = await cbp(['db', 'import-file', onFile.dbPath], env);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already holds rows/);

    // Analysts read the lake in place while a worker keeps recording runs: the same answers as the file's.
    const readEnv = { ...env, CBP_DATA_DIR: tempDir() };
    const fileEnv = { CBP_DATA_DIR: onFile.dataDir, CBP_THRESHOLDS_FILE: path.join(onFile.dataDir, 'thresholds.json') };
    const busy = await openStore({ dbPath: 'lake', lake });
    let busyOn = true;
    const busyWrites = (async () => {
      for (let i = 0; busyOn; i++) {
        await recordRun(busy, { runId: `busy-${i}`, workflow: 'ingest', status: 'ok', startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), summary: {} });
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    try {
      const q = "SELECT mid, network, program, month, state, round(ratio_pct, 4) AS pct FROM mart_ratios WHERE metric = 'count' ORDER BY ALL";
      const [sqlLake, sqlFile] = await Promise.all([cbp(['sql', q, '--format', 'json'], readEnv), cbp(['sql', '--snapshot', onFile.snapshotPath, q, '--format', 'json'], fileEnv)]);
      expect(sqlLake.code, sqlLake.stderr).toBe(0);
      expect(JSON.parse(sqlLake.stdout)).toEqual(JSON.parse(sqlFile.stdout));
      const [ratiosLake, ratiosFile] = await Promise.all([cbp(['ratios', '--json'], readEnv), cbp(['ratios', '--json'], fileEnv)]);
      expect(ratiosLake.code, ratiosLake.stderr).toBe(0);
      expect(JSON.parse(ratiosLake.stdout)).toEqual(JSON.parse(ratiosFile.stdout));
      const status = await cbp(['status', '--json'], readEnv);
      expect(status.code, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ source: 'store', snapshot: { path: null, exists: false } });
      const snapshot = await cbp(['db', 'snapshot'], readEnv);
      expect(snapshot.code).toBe(2);
      expect(snapshot.stderr).toMatch(/a lake .*has no snapshot file: analysts read the lake itself/);
      const out = tempDir();
      const exported = await cbp(['export', '--out', path.join(out, 'x'), '--format', 'csv', '--table', 'mart_chargebacks', '--json'], readEnv);
      expect(exported.code, exported.stderr).toBe(0);
      expect(JSON.parse(exported.stdout).tables[0].rows).toBe(a.mart_chargebacks!.length);
      const report = await cbp(['report', '--out', path.join(out, 'report.html')], readEnv);
      expect(report.code, report.stderr).toBe(0);
      // The analyst's session reads no file but the lake's own.
      const refused = await cbp(['sql', "SELECT * FROM read_text('/etc/hostname')"], readEnv);
      expect(refused.code).toBe(2);
    } finally {
      busyOn = false;
      await busyWrites;
      busy.close();
    }

    // Maintenance while a worker keeps committing runs, at the least grace the command allows (nothing younger is
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

  it.skipIf(!gofakes3 && !lakeRequired)('keeps its data in S3: a file store moved into a lake on an S3-compatible server reads the same, and nothing else of the bucket', async () => {
    expect(gofakes3, 'an S3-compatible server: .ci/run builds gofakes3 into .tools/go/bin').toBeDefined();
    const port = await new Promise<number>((resolve) => {
      const srv = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(p));
      });
    });
    const s3 = spawn(gofakes3!, ['-backend', 'memory', '-initialbucket', 'cbp', '-host', `127.0.0.1:${port}`], { stdio: 'ignore' });
    try {
      const lake = newLake(pg);
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
});
