// The lake under faults (docs/lake.md "Under faults"), against a real PostgreSQL and the lake's data folder: the
// catalog crashing mid-backfill, and cbp killed at random moments of its writes. After each, a re-run completes and
// every committed row is there exactly once, as in an undisturbed run on a DuckDB file.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { addDays } from '../lib/utc.ts';
import { startSandbox, type RunningSandbox } from '../sandbox/index.ts';
import { parseScenario } from '../sandbox/scenario.ts';
import { openStore } from '../store/db.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { admin, cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { dumpStore } from './helpers/store-dump.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';
import { startCommitProxy } from './helpers/pg-commit-proxy.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TODAY = new Date().toISOString().slice(0, 10);
const TRIALS = Number(process.env.CBP_KILL_TRIALS ?? 10);
/** The built CLI where it is current: each kill pays a start-up. */
const ENTRY = cbpEntry();
const SCENARIO = parseScenario({
  seed: 3636, history_months: 2, horizon_months: 0, orders: 0, order_share: 0,
  mids: [{ mid: '860100000036', alias: 'Fault Shop', monthly_transactions: 20000, profile: 'hovering' }],
});
const RANGE = ['--from', addDays(TODAY, -12), '--to', addDays(TODAY, -3), '--kinds', 'chargebacks,prevention', '--window-days', '1', '--parallelism', '2'];

let sb: RunningSandbox;
let pg: Postgres;
let undisturbed: Record<string, string[]>;
let n = 0;

function newLake(): Record<string, string> {
  const db = `faults_${++n}`;
  pg.createDb(db);
  return { ...sandboxEnv(sb, tempDir('cbp-host-')), CBP_STORE: `ducklake:postgres:${pg.dsn(db)}`, CBP_LAKE_DATA_PATH: tempDir('cbp-lake-data-') };
}

/** The data files in a lake's data folder, committed or not. */
const parquetsIn = (env: Record<string, string>) =>
  fs.readdirSync(env.CBP_LAKE_DATA_PATH!, { recursive: true }).filter((f) => String(f).endsWith('.parquet')).length;
const lakeOf = (env: Record<string, string>) => ({ catalog: env.CBP_STORE!.slice('ducklake:postgres:'.length), dataPath: env.CBP_LAKE_DATA_PATH! });

/** A store's rows, but the log of runs (a killed run that had finished adds one). */
async function dump(o: Parameters<typeof openStore>[0]): Promise<Record<string, string[]>> {
  const s = await openStore({ ...o, readOnly: true, migrate: false });
  try {
    const { runs: _, ...rest } = await dumpStore(s);
    return rest;
  } finally {
    s.close();
  }
}
const dumpLake = (env: Record<string, string>) => dump({ dbPath: 'lake', lake: lakeOf(env) });

/** `cbp run backfill` over RANGE, killed with `signal` once `afterMs` have passed; its exit code and output. */
function backfill(env: Record<string, string>, kill?: { afterMs: number }): Promise<{ code: number | null; signal: string | null; out: string }> {
  const base = cleanEnv();
  const child = spawn(process.execPath, [ENTRY, 'run', 'backfill', ...RANGE], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const timer = kill ? setTimeout(() => child.kill('SIGKILL'), kill.afterMs) : undefined;
  return new Promise((resolve) => child.on('close', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal, out });
  }));
}

describe.skipIf(skipLake)(lakeTitle('the lake under faults'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    [sb, pg] = await Promise.all([startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO }), startPostgres()]);
    const dir = tempDir('cbp-file-');
    const r = await cbp(['run', 'backfill', ...RANGE], sandboxEnv(sb, dir));
    expect(r.code, r.stderr).toBe(0);
    undisturbed = await dump({ dbPath: path.join(dir, 'cbp.duckdb') });
    expect(undisturbed.chargebacks!.length).toBeGreaterThan(5);
  }, 180_000);
  afterAll(async () => {
    await admin(sb, 'POST', '/faults', {}).catch(() => undefined);
    await sb?.close();
    await pg?.stop();
  });

  it('fails a backfill with a clear error and exit 1 when PostgreSQL crashes mid-run; once it is back, a re-run completes with every row once', async () => {
    const env = newLake();
    expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
    // Slow downloads, so the crash falls among the windows' loads.
    await admin(sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 700 } } });
    let crashed: Promise<void> | undefined;
    // Mid-run: once the backfill has written a data file of its own (a slow machine may take seconds to open), and
    // then a while, so that the crash falls in a slow download rather than on that file's commit.
    const parquets = () => parquetsIn(env);
    const migrated = parquets();
    const run = backfill(env);
    try {
      for (let i = 0; parquets() <= migrated && i < 1200; i++) await new Promise((r) => setTimeout(r, 50));
      expect(parquets(), 'the backfill wrote no data file to crash after').toBeGreaterThan(migrated);
      await new Promise((r) => setTimeout(r, 350));
      crashed = pg.crash();
      const r = await run;
      expect(r.code, r.out.slice(-2000)).toBe(1);
      expect(r.out).toMatch(/The lake's catalog \(PostgreSQL, .*\) stopped answering( \(.*\))?: this step did not finish.*run the command again.*\[CBP_ERR_STORE_UNAVAILABLE\]/);
    } finally {
      await crashed;
      await admin(sb, 'POST', '/faults', {});
      await pg.start();
    }
    const again = await backfill(env);
    expect(again.code, again.out.slice(-2000)).toBe(0);
    expect(await dumpLake(env)).toEqual(undisturbed);
  });

  it('says a lake is damaged when a COMMIT answer was lost after PostgreSQL applied it (DuckLake removed its files): the step fails, the next reads name the file, nothing applied twice', async () => {
    const proxy = await startCommitProxy(pg.port);
    try {
      const db = `faults_${++n}`;
      pg.createDb(db);
      const env = { ...sandboxEnv(sb, tempDir('cbp-host-')), CBP_STORE: `ducklake:postgres:dbname=${db} host=127.0.0.1 port=${proxy.port} user=cbp`, CBP_LAKE_DATA_PATH: tempDir('cbp-lake-data-') };
      expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
      proxy.arm(4);
      const first = await backfill(env);
      expect(proxy.cut, first.out.slice(-1500)).toBe(1);
      expect(first.code, first.out.slice(-1500)).toBe(1);
      // The step fails as the catalog stopped answering, or at the next read of what DuckLake removed (same run).
      expect(first.out).toMatch(/\[CBP_ERR_STORE_UNAVAILABLE\]|\[CBP_ERR_STORE_DAMAGED\]/);
      const again = await backfill(env);
      expect(again.code, again.out.slice(-1500)).toBe(1);
      expect(again.out).toMatch(/The lake lists a data file that is not there \(.*\.parquet\): a commit whose answer was lost.*\[CBP_ERR_STORE_DAMAGED\]/);
    } finally {
      await proxy.close();
    }
  });

  it('gives up a statement a frozen PostgreSQL never answers, saying so and what to do, and a command then exits 1 instead of waiting', async () => {
    const env = newLake();
    expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
    const store = await openStore({ dbPath: 'lake', lake: { ...lakeOf(env), statementTimeout: 2 } });
    try {
      await store.all('SELECT count(*) FROM chargebacks');
      pg.freeze(true);
      await expect(store.all('SELECT count(*) FROM chargebacks')).rejects.toThrow(
        /A statement on the lake waited 2 s without an answer from its catalog \(PostgreSQL, .*\): this step did not finish.*CBP_LAKE_STATEMENT_TIMEOUT/);
      // The CLI: started while the catalog is frozen, it fails and ends (exit 1 or 2) on its own, saying what to check.
      const started = Date.now();
      const r = await cbp(['alerts', 'evaluate'], { ...env, CBP_LAKE_STATEMENT_TIMEOUT: '2' });
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/PostgreSQL/);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      pg.freeze(false);
      store.close();
    }
    // Once it answers, the lake is whole and works.
    expect((await cbp(['alerts', 'evaluate'], env)).code).toBe(0);
  });

  it(`keeps every committed row once when cbp is killed (kill -9) at random moments of its writes, ${TRIALS} times; upkeep then removes the orphaned files and nothing else`, async () => {
    const env = newLake();
    expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
    await admin(sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 150 } } });
    let killed = 0;
    try {
      for (let t = 0; t < TRIALS; t++) {
        // Past start-up, among the loads (a run that found every window done may end first).
        const r = await backfill(env, { afterMs: (ENTRY.endsWith('cbp.js') ? 600 : 1800) + Math.random() * 3000 });
        expect(r.code === 0 || r.signal === 'SIGKILL', r.out.slice(-2000)).toBe(true);
        if (r.signal === 'SIGKILL') killed++;
      }
    } finally {
      await admin(sb, 'POST', '/faults', {});
    }
    expect(killed, 'no run was killed').toBeGreaterThan(0);
    const done = await backfill(env);
    expect(done.code, done.out.slice(-2000)).toBe(0);
    expect(await dumpLake(env)).toEqual(undisturbed);
    // Nothing else runs: no grace needed. Only files no snapshot lists go; every file the lake lists is still there.
    const s = await openStore({ dbPath: 'lake', lake: lakeOf(env), migrate: false });
    try {
      await maintainStore(s, { keepDays: 7, graceHours: 0 });
      const listed = await s.all<{ path: string }>("SELECT data_file AS path FROM ducklake_list_files('lake', 'chargebacks')");
      for (const f of listed) expect(fs.existsSync(f.path), f.path).toBe(true);
    } finally {
      s.close();
    }
    expect(await dumpLake(env)).toEqual(undisturbed);
  });
});
