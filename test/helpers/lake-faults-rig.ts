// What the lake fault tests share: a sandbox and a PostgreSQL of the test file's, new lakes on it, and
// `cbp run backfill` over a short range as a child process that can be killed.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect } from 'vitest';
import { sandboxEnv } from '../../cli/sandbox-env.ts';
import { addDays } from '../../lib/utc.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/index.ts';
import { parseScenario } from '../../sandbox/scenario.ts';
import { openStore } from '../../store/db.ts';
import { admin, cbp } from '../activities-fixtures.ts';
import { startPostgres, type Postgres } from './postgres.ts';
import { dumpStore } from './store-dump.ts';
import { tempDir } from './tmp.ts';
import { cbpEntry, cleanEnv } from './cbp-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TODAY = new Date().toISOString().slice(0, 10);
/** The built CLI where it is current: each kill pays a start-up. */
export const ENTRY = cbpEntry();
const SCENARIO = parseScenario({
  seed: 3636, history_months: 2, horizon_months: 0, orders: 0, order_share: 0,
  mids: [{ mid: '860100000036', alias: 'Fault Shop', monthly_transactions: 20000, profile: 'hovering' }],
});
export const RANGE = ['--from', addDays(TODAY, -12), '--to', addDays(TODAY, -3), '--kinds', 'chargebacks,prevention', '--window-days', '1', '--parallelism', '2'];

export interface Rig { sb: RunningSandbox; pg: Postgres }

export async function startRig(): Promise<Rig> {
  const [sb, pg] = await Promise.all([startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO }), startPostgres()]);
  return { sb, pg };
}

export async function stopRig(rig: Partial<Rig>): Promise<void> {
  if (rig.sb) await admin(rig.sb, 'POST', '/faults', {}).catch(() => undefined);
  await rig.sb?.close();
  await rig.pg?.stop();
}

let n = 0;
/** A new lake's settings (its own database and data folder) with the sandbox's; `port` reaches PostgreSQL another way. */
export function newLake(rig: Rig, port?: number): Record<string, string> {
  const db = `faults_${++n}`;
  rig.pg.createDb(db);
  const dsn = port === undefined ? rig.pg.dsn(db) : `dbname=${db} host=127.0.0.1 port=${port} user=cbp`;
  return { ...sandboxEnv(rig.sb, tempDir('cbp-host-')), CBP_STORE: `ducklake:postgres:${dsn}`, CBP_LAKE_DATA_PATH: tempDir('cbp-lake-data-') };
}

/** The data files in a lake's data folder, committed or not. */
export const parquetsIn = (env: Record<string, string>) =>
  fs.readdirSync(env.CBP_LAKE_DATA_PATH!, { recursive: true }).filter((f) => String(f).endsWith('.parquet')).length;
export const lakeOf = (env: Record<string, string>) => ({ catalog: env.CBP_STORE!.slice('ducklake:postgres:'.length), dataPath: env.CBP_LAKE_DATA_PATH! });

/** A store's rows, but the log of runs (a killed run that had finished adds one). */
export async function dump(o: Parameters<typeof openStore>[0]): Promise<Record<string, string[]>> {
  const s = await openStore({ ...o, readOnly: true, migrate: false });
  try {
    const { runs: _, ...rest } = await dumpStore(s);
    return rest;
  } finally {
    s.close();
  }
}
export const dumpLake = (env: Record<string, string>) => dump({ dbPath: 'lake', lake: lakeOf(env) });

/** `cbp run backfill` over RANGE, killed with SIGKILL once `afterMs` have passed; its exit code and output. */
export function backfill(env: Record<string, string>, kill?: { afterMs: number }): Promise<{ code: number | null; signal: string | null; out: string }> {
  const child = spawn(process.execPath, [ENTRY, 'run', 'backfill', ...RANGE], { cwd: ROOT, env: { ...cleanEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const timer = kill ? setTimeout(() => child.kill('SIGKILL'), kill.afterMs) : undefined;
  return new Promise((resolve) => child.on('close', (code, signal) => {
    clearTimeout(timer);
    resolve({ code, signal, out });
  }));
}

/**
 * The rig of a test file (started before its tests, stopped after them) and the rows of an undisturbed backfill of
 * RANGE on a DuckDB file, which every fault's outcome must equal.
 */
export function useRig(): { rig: () => Rig; undisturbed: () => Record<string, string[]> } {
  let rig: Rig | undefined;
  let undisturbed: Record<string, string[]> | undefined;
  beforeAll(async () => {
    rig = await startRig();
    const dir = tempDir('cbp-file-');
    const r = await cbp(['run', 'backfill', ...RANGE], sandboxEnv(rig.sb, dir));
    expect(r.code, r.stderr).toBe(0);
    undisturbed = await dump({ dbPath: path.join(dir, 'cbp.duckdb') });
    expect(undisturbed.chargebacks!.length).toBeGreaterThan(5);
  }, 180_000);
  afterAll(async () => {
    await stopRig(rig ?? {});
  });
  return { rig: () => rig!, undisturbed: () => undisturbed! };
}
