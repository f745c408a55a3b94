// What the lake-and-Temporal test files share (lake-workers, lake-hosts): a real Temporal dev server, a sandbox and a
// throwaway PostgreSQL for the file, `cbp worker` children each in a working folder of its own (as on its own host),
// and waits that fail saying what they waited for, with the workers' last output.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll } from 'vitest';
import { sandboxEnv } from '../../cli/sandbox-env.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/index.ts';
import { parseScenario } from '../../sandbox/scenario.ts';
import { admin, WEBHOOK } from '../activities-fixtures.ts';
import { startPostgres, type Postgres } from './postgres.ts';
import { quietTemporalRuntime, startTemporalEnv } from './temporal-env.ts';
import { tempDir } from './tmp.ts';
import { cbpEntry, cleanEnv } from './cbp-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TODAY = new Date().toISOString().slice(0, 10);
const SCENARIO = parseScenario({
  seed: 2727, history_months: 3, horizon_months: 0, orders: 0, order_share: 0,
  mids: [{ mid: '860100000027', alias: 'Lake Shop', monthly_transactions: 1500, profile: 'hovering' }],
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface LakeWorld {
  env: TestWorkflowEnvironment;
  sb: RunningSandbox;
  pg: Postgres;
}

const children: ChildProcess[] = [];
/** The workers' output so far, shown when a wait runs out. */
const outputs: Array<() => string> = [];

/** The file's servers, started in beforeAll and stopped (with every worker left) in afterAll. */
export function lakeWorld(): LakeWorld {
  const w = {} as LakeWorld;
  beforeAll(async () => {
    quietTemporalRuntime();
    [w.env, w.sb, w.pg] = await Promise.all([startTemporalEnv(), startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO }), startPostgres()]);
  }, 180_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    // A fork runs the next file with these modules loaded: its waits show its own workers' output.
    children.length = 0;
    outputs.length = 0;
    await admin(w.sb, 'POST', '/faults', {}).catch(() => undefined);
    await w.sb?.close();
    await w.env?.teardown();
    await w.pg?.stop();
  });
  return w;
}

/** Polls until probe gives a value; past 4 minutes, fails with what it waited for and the workers' last output. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const end = Date.now() + 240_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`waited 4 minutes for ${what}; the workers said:\n${outputs.map((o) => o().slice(-3000)).join('\n---\n')}`);
    await sleep(250);
  }
}

/** A promise, or past `ms` a failure saying what was awaited, with the workers' last output. */
export async function within<T>(what: string, p: Promise<T>, ms = 240_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${ms / 1000} s for ${what}; the workers said:\n${outputs.map((o) => o().slice(-4000)).join('\n---\n')}`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

export type History = { events: Array<Record<string, any>> };
export const historyOf = async (h: WorkflowHandle): Promise<History> => JSON.parse(historyToJSON(await h.fetchHistory())) as History;

/** A `cbp worker` child (with `args`) with a working folder of its own, on the lake and the task queue. */
export async function worker(w: LakeWorld, lakeEnv: Record<string, string>, taskQueue: string, host: Record<string, string> = {}, args: string[] = []): Promise<{ child: ChildProcess; exited: Promise<unknown>; output: () => string }> {
  const child = spawn(process.execPath, [cbpEntry(), 'worker', ...args], {
    cwd: ROOT,
    env: {
      ...cleanEnv(), ...sandboxEnv(w.sb, tempDir('cbp-host-')), ...lakeEnv, CBP_WEBHOOK_USERNAME: WEBHOOK.username, CBP_WEBHOOK_PASSWORD: WEBHOOK.password,
      CBP_LOG_LEVEL: 'info', TEMPORAL_ADDRESS: w.env.address, TEMPORAL_NAMESPACE: w.env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: taskQueue,
      CBP_WORKER_METRICS_ADDR: '127.0.0.1:0', ...host,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  outputs.push(() => out);
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.on('exit', r));
  const ready = await Promise.race([until('polling', async () => /cbp worker polling/.test(out)), exited.then(() => false)]);
  if (!ready) throw new Error(`cbp worker exited before polling:\n${out}`);
  return { child, exited, output: () => out };
}
