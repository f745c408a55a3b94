// The store as a DuckLake lake on a real PostgreSQL (a throwaway server of this file, test/helpers/postgres.ts): the
// demo's history gives the same rows on a lake as on a DuckDB file, and any DuckDB client reads the lake's views
// without cbp. docs/lake.md. Moving a file store in, upkeep and S3: lake-import.test.ts; settings: lake-settings.test.ts.
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDemo } from '../cli/commands/demo.ts';
import { latestNotices, programRatiosOf } from '../store/demo-queries.ts';
import { DEFAULT_LAKE_EXTENSIONS_DIR, LAKE_DISABLED_OPTIMIZERS } from '../store/lake.ts';
import { statementWatch, type Store } from '../store/db.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { loadRules } from '../rules/thresholds.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dumpStore } from './helpers/store-dump.ts';
import { tempDir } from './helpers/tmp.ts';
import { fileDemo, newLake, viewsOf, withStore } from './helpers/lake-stores.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
let pg: Postgres;

describe.skipIf(skipLake)(lakeTitle('the store on a DuckLake lake'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it('holds the same rows as a DuckDB file after the demo\'s whole story: every table, fact and mart', async () => {
    const lake = newLake(pg);
    // The demo on the lake beside a copy of the run's demo on a file (test/helpers/shared-demo.ts).
    const [onFile, onLake] = await Promise.all([
      fileDemo(),
      runDemo({ dataDir: path.join(tempDir(), 'demo'), write: () => undefined, lake: { store: lake.store, dataPath: lake.dataPath } }),
    ]);
    // What each demo printed at its end: the lake's, and the file's as its store gives it.
    const month = String(onLake.ratios[0]!.month);
    const printed = await withStore({ dbPath: onFile.dbPath, readOnly: true }, async (s) => ({ ratios: await programRatiosOf(s, month), alerts: await latestNotices(s, 20) }));
    expect({ ratios: onLake.ratios, alerts: onLake.alerts }).toEqual(printed);
    const fileViews = onFile.views;
    const lakeViews = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, viewsOf);
    expect(lakeViews).toEqual(fileViews);
    const a = onFile.rows;
    const b = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => dumpStore(s, fileViews));
    expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
    // Table by table, the first row that differs (a diff of thousands of rows says less).
    for (const t of Object.keys(a)) {
      const i = a[t]!.findIndex((r, k) => r !== b[t]![k]);
      expect({ table: t, rows: b[t]!.length, first: b[t]![i] ?? null }).toEqual({ table: t, rows: a[t]!.length, first: a[t]![i] ?? null });
    }
    expect(a.mart_ratios!.length).toBeGreaterThan(100);
    // A lake publishes no file: its publish step names the store by the id read from the lake.
    const published = await withStore({ dbPath: 'lake', lake, readOnly: true, migrate: false }, (s) => publishSnapshot(s, { snapshotPath: 'unused' }));
    expect(published).toMatchObject({ lake: true, bytes: 0, published: false, generation: null, storeId: expect.stringMatching(/^[0-9a-f-]{36}$/) });

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
    // A lake's planner setting (store/lake.ts) outlives a judgement, which adds its own for a statement (last: it changes the rules).
    const off = (s: Store) => s.all<{ off: string }>("SELECT current_setting('disabled_optimizers') AS off").then((r) => r[0]!.off);
    // Its ratio rows are written on one of its two threads at the default limit: a lake's also holds a Parquet row group.
    const threads: string[] = [];
    statementWatch.begin = (sql) => ((/^SET threads = \d+$/.test(sql) && threads.push(sql)), () => {});
    const judged = await withStore({ dbPath: 'lake', lake, migrate: false, threads: 2 }, async (s) => [await off(s), (await refreshRatios(s, loadRules(), { full: true })).rows, await off(s)])
      .finally(() => { statementWatch.begin = undefined; });
    expect(judged).toEqual([LAKE_DISABLED_OPTIMIZERS, expect.any(Number), LAKE_DISABLED_OPTIMIZERS]);
    expect(new Set(threads)).toEqual(new Set(['SET threads = 1']));
  });
});
