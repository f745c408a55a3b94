// Several `cbp worker` processes on one task queue and one lake (issue #27), on a real Temporal dev server and a
// throwaway PostgreSQL: each worker in a working folder of its own, as if on its own host. A backfill's windows are
// spread across them; after kill -9 of one mid-download the other finishes the run, and the lake equals what the
// local runner builds alone, nothing loaded twice; `cbp status` reads the lake meanwhile.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { addDays } from '../lib/utc.ts';
import { startSandbox, type RunningSandbox } from '../sandbox/index.ts';
import { parseScenario } from '../sandbox/scenario.ts';
import { openStore } from '../store/db.ts';
import type { BackfillInput, BackfillResult } from '../workflows/backfill.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { admin, cbp, configFor, pipelineFor, WEBHOOK } from './activities-fixtures.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { dumpStore } from './helpers/store-dump.ts';
import { quietTemporalRuntime, skipTemporal, startTemporalEnv, temporalTitle } from './helpers/temporal-env.ts';
import { tempDir } from './helpers/tmp.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TODAY = new Date().toISOString().slice(0, 10);
const SCENARIO = parseScenario({
  seed: 2727, history_months: 3, horizon_months: 0, orders: 0, order_share: 0,
  mids: [{ mid: '860100000027', alias: 'Lake Shop', monthly_transactions: 1500, profile: 'hovering' }],
});

let env: TestWorkflowEnvironment;
let sb: RunningSandbox;
let pg: Postgres;
const children: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    await sleep(250);
  }
}

type History = { events: Array<Record<string, any>> };
const historyOf = async (h: WorkflowHandle): Promise<History> => JSON.parse(historyToJSON(await h.fetchHistory())) as History;

/** A `cbp worker` child with a working folder of its own, on the lake and the task queue. */
async function worker(lakeEnv: Record<string, string>, taskQueue: string): Promise<{ child: ChildProcess; exited: Promise<unknown>; output: () => string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CBP_|TEMPORAL_)/.test(k))) as Record<string, string>;
  const child = spawn(process.execPath, [path.join(ROOT, 'bin/cbp-dev.js'), 'worker'], {
    cwd: ROOT,
    env: {
      ...base, ...sandboxEnv(sb, tempDir('cbp-host-')), ...lakeEnv, CBP_WEBHOOK_USERNAME: WEBHOOK.username, CBP_WEBHOOK_PASSWORD: WEBHOOK.password,
      CBP_LOG_LEVEL: 'info', TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: taskQueue,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.on('exit', r));
  const ready = await Promise.race([until('polling', async () => /cbp worker polling/.test(out)), exited.then(() => false)]);
  if (!ready) throw new Error(`cbp worker exited before polling:\n${out}`);
  return { child, exited, output: () => out };
}

describe.skipIf(skipLake || skipTemporal)(`${lakeTitle('several workers on one lake')}, ${temporalTitle('Temporal')}`, { timeout: 600_000 }, () => {
  beforeAll(async () => {
    quietTemporalRuntime();
    [env, sb, pg] = await Promise.all([startTemporalEnv(), startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO }), startPostgres()]);
  }, 180_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await admin(sb, 'POST', '/faults', {}).catch(() => undefined);
    await sb?.close();
    await env?.teardown();
    await pg?.stop();
  });

  it('spreads a backfill over two workers; after kill -9 of one the other finishes it, and the lake equals a one-process run', async () => {
    pg.createDb('workers');
    const lake = { catalog: pg.dsn('workers'), dataPath: tempDir('cbp-lake-data-') };
    const lakeEnv = { CBP_STORE: `ducklake:postgres:${lake.catalog}`, CBP_LAKE_DATA_PATH: lake.dataPath };
    // The schema first, as `cbp db migrate` would: two workers starting together both migrate otherwise (also safe).
    expect((await cbp(['db', 'migrate'], lakeEnv)).code).toBe(0);
    const taskQueue = `cbp-lake-${randomUUID()}`;
    const [w1, w2] = await Promise.all([worker(lakeEnv, taskQueue), worker(lakeEnv, taskQueue)]);
    const input: BackfillInput = { from: addDays(TODAY, -30), to: addDays(TODAY, -25), kinds: ['chargebacks'], windowDays: 1, parallelism: 2 };
    await admin(sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 2500 } } });
    const handle = await env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue, workflowId: `cbp-lake-backfill-${randomUUID()}`, args: [input] });
    // Two downloads running at once, one on each worker (a worker's identity is pid@host); then one worker dies mid-download.
    const running = await until('a download running on each worker', async () => {
      const started = ((await handle.describe()).raw.pendingActivities ?? []).filter((a) => String(a.state) === '2' || a.state === ('PENDING_ACTIVITY_STATE_STARTED' as never));
      const on = new Set(started.map((a) => String(a.lastWorkerIdentity ?? '').split('@')[0]));
      return on.size === 2 ? on : false;
    });
    expect(running).toEqual(new Set([String(w1.child.pid), String(w2.child.pid)]));
    const status = await cbp(['status', '--json'], lakeEnv);
    expect(status.code, status.stderr).toBe(0);
    w1.child.kill('SIGKILL');
    await w1.exited;
    await admin(sb, 'POST', '/faults', {});
    const r = (await handle.result()) as BackfillResult;
    expect(r).toMatchObject({ status: 'done', planned: 6, loaded: 6 });
    // The killed download was run again (on the worker left), once.
    const h = await historyOf(handle);
    const attempts = h.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED').map((e) => Number(e.activityTaskStartedEventAttributes.attempt ?? 1));
    expect(attempts.filter((a) => a === 2)).toHaveLength(1);
    w2.child.kill('SIGTERM');
    await w2.exited;

    const store = await openStore({ dbPath: 'lake', lake, readOnly: true, migrate: false });
    let got;
    try {
      const loads = await store.all<{ files: number; loads: number }>("SELECT count(*)::INTEGER AS files, sum(load_count)::INTEGER AS loads FROM loads WHERE kind = 'chargebacks' GROUP BY window_start ORDER BY window_start");
      expect(loads).toEqual(Array.from({ length: 6 }, () => ({ files: 1, loads: 1 })));
      got = await dumpStore(store);
    } finally {
      store.close();
    }
    const cfg = configFor(sb, tempDir('cbp-local-'));
    const p = await pipelineFor(cfg);
    try {
      await p.runner.backfill(input);
    } finally {
      await p.close();
    }
    const file = await openStore({ dbPath: cfg.dbPath, readOnly: true });
    try {
      expect(got).toEqual(await dumpStore(file));
    } finally {
      file.close();
    }
  });
});
