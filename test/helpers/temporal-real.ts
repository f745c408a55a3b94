// What test/temporal-server-real.test.ts and test/temporal-worker-stop.test.ts share: one dev server (or
// TEMPORAL_ADDRESS) and one sandbox per test file (useRealServer), workers with the real activities, the stores
// compared with the local runner's, the histories' checks, and `cbp worker` as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, expect } from 'vitest';
import { createActivities, sharedStore, storeOpener } from '../../activities/index.ts';
import { sandboxEnv } from '../../cli/sandbox-env.ts';
import { createServiceClients } from '../../client/index.ts';
import type { Config } from '../../lib/config.ts';
import { addDays } from '../../lib/utc.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/index.ts';
import { parseScenario } from '../../sandbox/scenario.ts';
import type { Store } from '../../store/db.ts';
import { createWorker } from '../../worker/worker.ts';
import type { BackfillInput } from '../../workflows/backfill.ts';
import { WORKFLOW_TYPES } from '../../workflows/names.ts';
import { admin, configFor, FAST_RETRY, pipelineFor, WEBHOOK } from '../activities-fixtures.ts';
import { cbpEntry, cleanEnv } from './cbp-cli.ts';
import { payloadViolations, readableHistory } from './history-payloads.ts';
import { forbiddenInHistories, ORDER_MARKERS, SECRET_SHAPES } from './history-rules.ts';
import { dumpStore } from './store-dump.ts';
import { openTestStore } from './store-template.ts';
import { quietTemporalRuntime, startTemporalEnv, workflowBundle } from './temporal-env.ts';
import { tempDir } from './tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const HISTORIES_DIR = path.join(ROOT, 'test', 'fixtures', 'histories');
const RECORD = process.env.CBP_RECORD_HISTORIES === '1';

/** Today (UTC): the sandbox clock stands at its start, so a triggered nightly's windows are today's. */
export const TODAY = new Date().toISOString().slice(0, 10);
/** A small world: one MID, 14 months of history before today's month, no unrelated orders. */
const SCENARIO = parseScenario({
  seed: 1212,
  history_months: 14,
  horizon_months: 0,
  orders: 0,
  order_share: 0,
  mids: [{ mid: '860100000012', alias: 'Real Server Shop', monthly_transactions: 1500, profile: 'hovering' }],
});

// --- the store, as compared between a server run and the local runner ------------------------------------

const VIEWS = ['chargeback_status_history'];

export async function dumpFile(cfg: Config): Promise<Record<string, string[]>> {
  const store = await openTestStore({ dbPath: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
  try {
    return await dumpStore(store, VIEWS);
  } finally {
    store.close();
  }
}

export async function withStoreFile<T>(cfg: Config, fn: (s: Store) => Promise<T>): Promise<T> {
  const store = await openTestStore({ dbPath: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

/** The local runner's store for the same work: `fn` gets the runner over a fresh store. */
export async function localStore(fn: (runner: Awaited<ReturnType<typeof pipelineFor>>['runner']) => Promise<unknown>): Promise<Record<string, string[]>> {
  const cfg = configFor(rig.sb, tempDir('cbp-local-'));
  const p = await pipelineFor(cfg);
  try {
    await fn(p.runner);
  } finally {
    await p.close();
  }
  return dumpFile(cfg);
}

// --- the server side ------------------------------------------------------------------------------------

/** The file's server and sandbox: set before its tests by useRealServer(), read inside a test. */
export const rig = {} as { env: TestWorkflowEnvironment; sb: RunningSandbox };

export interface RealWorker {
  taskQueue: string;
  cfg: Config;
  stop(): Promise<void>;
}

/** A worker in this process with the real activities (as `cbp worker` builds them) over the store of `cfg`. */
export async function realWorker(cfg: Config, taskQueue = `cbp-real-${randomUUID()}`): Promise<RealWorker> {
  const store = sharedStore(storeOpener(cfg));
  const clients = createServiceClients(cfg, FAST_RETRY);
  const w = await createWorker({
    connection: rig.env.nativeConnection,
    namespace: rig.env.namespace ?? 'default',
    taskQueue,
    activities: createActivities({ config: cfg, store: store.get, clients }),
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '10 seconds',
  });
  const running = w.run();
  let stopped = false;
  return {
    taskQueue,
    cfg,
    async stop() {
      if (stopped) return;
      stopped = true;
      await w.shutdown();
      await running;
      await clients.close().catch(() => undefined);
      store.close();
    },
  };
}

type HistoryJson = { events: Array<Record<string, any>> };

export async function historyOf(handle: Pick<WorkflowHandle, 'fetchHistory'>): Promise<HistoryJson> {
  return JSON.parse(historyToJSON(await handle.fetchHistory())) as HistoryJson;
}

const recorded: string[] = [];

/** Reads every payload of a run's history against the rules; with CBP_RECORD_HISTORIES=1, keeps it as a fixture. */
export async function checkAndRecord(name: string | undefined, handle: Pick<WorkflowHandle, 'fetchHistory'>): Promise<HistoryJson> {
  const h = await historyOf(handle);
  expect(payloadViolations(h, { forbidden: forbiddenInHistories(rig.sb.credentials) }), `history ${name}`).toEqual([]);
  expect(JSON.stringify(readableHistory(h)), `history ${name}`).not.toMatch(ORDER_MARKERS);
  expect(JSON.stringify(readableHistory(h)), `history ${name}`).not.toMatch(SECRET_SHAPES);
  if (RECORD && name) {
    fs.mkdirSync(HISTORIES_DIR, { recursive: true });
    fs.writeFileSync(path.join(HISTORIES_DIR, `${name}.json`), `${JSON.stringify(h, null, 1)}\n`);
    recorded.push(name);
  }
  return h;
}

export const eventsOf = (h: HistoryJson, type: string) => h.events.filter((e) => e.eventType === type);
/** The activity type of each ActivityTaskStarted, with its attempt. */
export function startedActivities(h: HistoryJson): Array<{ name: string; attempt: number }> {
  const scheduled = new Map<string, string>();
  for (const e of eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')) scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType.name);
  return eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_STARTED').map((e) => ({
    name: scheduled.get(String(e.activityTaskStartedEventAttributes.scheduledEventId)) ?? '?',
    attempt: Number(e.activityTaskStartedEventAttributes.attempt ?? 1),
  }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where Temporal warns of a run's history (it ends a run at five times as much). */
export const HISTORY_WARNING = { events: 10_240, bytes: 10 * 1024 * 1024 };

/** temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED: scheduled, no worker has started it. */
export const PENDING_ACTIVITY_SCHEDULED = 1;

/** Polls until `probe` gives a value (a guard against hangs: the test's own timeout ends it otherwise). */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, everyMs = 250): Promise<T> {
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    await sleep(everyMs);
  }
  throw new Error(`never: ${what}`);
}

// --- `cbp worker` as a child process ------------------------------------------------------------------------

interface ChildWorker {
  child: ChildProcess;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `cbp worker`, pointed at the dev server, the sandbox and the store of `cfg`'s folder. */
async function childWorker(dir: string, taskQueue: string): Promise<ChildWorker> {
  const base = cleanEnv();
  const child = spawn(process.execPath, [cbpEntry(), 'worker'], {
    cwd: ROOT,
    env: {
      ...base,
      ...sandboxEnv(rig.sb, dir),
      CBP_WEBHOOK_USERNAME: WEBHOOK.username,
      CBP_WEBHOOK_PASSWORD: WEBHOOK.password,
      CBP_LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: rig.env.address,
      TEMPORAL_NAMESPACE: rig.env.namespace ?? 'default',
      TEMPORAL_TASK_QUEUE: taskQueue,
      // Metrics on, as by default, on a port of its own: workers of parallel test files never share one.
      CBP_WORKER_METRICS_ADDR: '127.0.0.1:0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  children.push(child);
  const ready = await Promise.race([until('the worker polls', async () => /cbp worker polling/.test(out)), exited.then(() => false as const)]);
  if (!ready) throw new Error(`cbp worker exited before polling:\n${out}`);
  return { child, output: () => out, exited };
}
const children: ChildProcess[] = [];

/** Waits until the run's only running activity is a started fetchAndLoad (the download under way), and `done` fetches finished. */
export async function whileDownloading(handle: WorkflowHandle, done: number): Promise<void> {
  const fetched = async () => startedActivities(await historyOf(handle)).filter((a) => a.name === 'fetchAndLoad').length;
  await until(`a fetchAndLoad running after ${done} finished`, async () => {
    // History before and after the describe: a download that completed in between is not the one running.
    const before = await fetched();
    const d = await handle.describe();
    const pending = d.raw.pendingActivities ?? [];
    if (pending.length !== 1) return false;
    const p = pending[0]!;
    if (p.activityType?.name !== 'fetchAndLoad' || String(p.state) !== String(2) && p.state !== ('PENDING_ACTIVITY_STATE_STARTED' as never)) return false;
    return before > done && (await fetched()) === before;
  });
}

export async function faults(config: unknown): Promise<void> {
  await admin(rig.sb, 'POST', '/faults', config);
}

// --- a worker that dies mid-backfill ------------------------------------------------------------------------

// The backfill the two worker-death cases run: a few days, one window at a time, each download slowed.
const deathInput = (days: number): BackfillInput => ({ from: addDays(TODAY, -40), to: addDays(TODAY, -41 + days), kinds: ['chargebacks'], windowDays: 1, parallelism: 1 });

/**
 * A backfill of `days` days started on a `cbp worker` child process of its own task queue, the sandbox's
 * chargeback downloads slowed by latencyMs; body stops that worker and starts the next (next(), stopped after
 * the body whatever happens). The faults are cleared and the child killed at the end.
 */
export async function whenTheWorkerDies(
  o: { days: number; latencyMs: number; id: string },
  body: (c: { cfg: ReturnType<typeof configFor>; input: BackfillInput; child: Awaited<ReturnType<typeof childWorker>>; handle: WorkflowHandle; next: () => Promise<RealWorker> }) => Promise<void>,
): Promise<void> {
  const dir = tempDir();
  const cfg = configFor(rig.sb, dir);
  const taskQueue = `cbp-real-${randomUUID()}`;
  const input = deathInput(o.days);
  const child = await childWorker(dir, taskQueue);
  let next: RealWorker | undefined;
  try {
    await faults({ routes: { 'POST /reporting/chargebacks': { latencyMs: o.latencyMs } } });
    const handle = await rig.env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue, workflowId: `cbp-backfill-${o.id}-${randomUUID()}`, args: [input] });
    await body({ cfg, input, child, handle, next: async () => (next = await realWorker(cfg, taskQueue)) });
  } finally {
    await faults({});
    if (child.child.exitCode === null) child.child.kill('SIGKILL');
    await next?.stop();
  }
}

/**
 * Registers on the current describe: the server, the sandbox (its clock at today's start) and the workflow bundle
 * before its tests; after them, the `cbp worker` children killed, both closed, and the recorded histories listed.
 */
export function useRealServer(): void {
  beforeAll(async () => {
    quietTemporalRuntime();
    [rig.env, rig.sb] = await Promise.all([startTemporalEnv(), startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO })]);
    await workflowBundle();
  }, 180_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await rig.sb?.close();
    await rig.env?.teardown();
    if (RECORD) process.stdout.write(`recorded histories: ${recorded.join(', ')} in ${HISTORIES_DIR}\n`);
  });
}
