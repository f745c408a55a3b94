// The workflows on a real Temporal server with the REAL activities (issue #12): one dev server for the file
// (or TEMPORAL_ADDRESS), one sandbox whose clock stands at today's start, real DuckDB stores in temp folders.
// Each case compares what the server's runs left in the store with what the local runner (worker/local.ts,
// as `cbp run` uses it) builds from the same sandbox state in a second store, and reads every payload of the
// runs' histories (no order field, no credential, nothing over 64 KiB).
//
// CBP_RECORD_HISTORIES=1 writes the histories of these runs to test/fixtures/histories/ (the replay fixtures
// of test/temporal-replay-recorded.test.ts); see docs/orchestration.md, "Tests".
import { spawn, type ChildProcess } from 'node:child_process';
import { dumpStore } from './helpers/store-dump.ts';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities, sharedStore, storeOpener } from '../activities/index.ts';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { createServiceClients } from '../client/index.ts';
import type { Config } from '../lib/config.ts';
import { addDays } from '../lib/utc.ts';
import { startSandbox, type RunningSandbox } from '../sandbox/index.ts';
import { parseScenario } from '../sandbox/scenario.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { applySchedules, backfillSchedule, scheduleOptionsFromConfig } from '../worker/schedules.ts';
import { createWorker } from '../worker/worker.ts';
import { DEFAULT_WINDOWS_PER_RUN, type BackfillInput, type BackfillResult } from '../workflows/backfill.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import type { NightlyInput, NightlyResult } from '../workflows/nightly.ts';
import type { PushOrdersResult } from '../workflows/push-orders.ts';
import type { ReconcileResult } from '../workflows/reconcile.ts';
import { admin, cbp, configFor, FAST_RETRY, pipelineFor, WEBHOOK } from './activities-fixtures.ts';
import { startReceiver as startHookReceiver, type Receiver } from './sandbox-fixtures.ts';
import { payloadViolations, readableHistory } from './helpers/history-payloads.ts';
import { forbiddenInHistories, ORDER_MARKERS, plantedOrder, SECRET_SHAPES } from './helpers/history-rules.ts';
import { quietTemporalRuntime, timeOutHeartbeats, skipTemporal, startTemporalEnv, temporalTitle, workflowBundle } from './helpers/temporal-env.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
export const HISTORIES_DIR = path.join(ROOT, 'test', 'fixtures', 'histories');
const RECORD = process.env.CBP_RECORD_HISTORIES === '1';

/** Today (UTC): the sandbox clock stands at its start, so a triggered nightly's windows are today's. */
const TODAY = new Date().toISOString().slice(0, 10);
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

async function dumpFile(cfg: Config): Promise<Record<string, string[]>> {
  const store = await openTestStore({ dbPath: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
  try {
    return await dumpStore(store, VIEWS);
  } finally {
    store.close();
  }
}

async function withStoreFile<T>(cfg: Config, fn: (s: Store) => Promise<T>): Promise<T> {
  const store = await openTestStore({ dbPath: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit });
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

/** The local runner's store for the same work: `fn` gets the runner over a fresh store. */
async function localStore(fn: (runner: Awaited<ReturnType<typeof pipelineFor>>['runner']) => Promise<unknown>): Promise<Record<string, string[]>> {
  const cfg = configFor(sb, tempDir('cbp-local-'));
  const p = await pipelineFor(cfg);
  try {
    await fn(p.runner);
  } finally {
    await p.close();
  }
  return dumpFile(cfg);
}

// --- the server side ------------------------------------------------------------------------------------

let env: TestWorkflowEnvironment;
let sb: RunningSandbox;

interface RealWorker {
  taskQueue: string;
  cfg: Config;
  stop(): Promise<void>;
}

/** A worker in this process with the real activities (as `cbp worker` builds them) over the store of `cfg`. */
async function realWorker(cfg: Config, taskQueue = `cbp-real-${randomUUID()}`): Promise<RealWorker> {
  const store = sharedStore(storeOpener(cfg));
  const clients = createServiceClients(cfg, FAST_RETRY);
  const w = await createWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
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

async function historyOf(handle: Pick<WorkflowHandle, 'fetchHistory'>): Promise<HistoryJson> {
  return JSON.parse(historyToJSON(await handle.fetchHistory())) as HistoryJson;
}

const recorded: string[] = [];

/** Reads every payload of a run's history against the rules; with CBP_RECORD_HISTORIES=1, keeps it as a fixture. */
async function checkAndRecord(name: string | undefined, handle: Pick<WorkflowHandle, 'fetchHistory'>): Promise<HistoryJson> {
  const h = await historyOf(handle);
  expect(payloadViolations(h, { forbidden: forbiddenInHistories(sb.credentials) }), `history ${name}`).toEqual([]);
  expect(JSON.stringify(readableHistory(h)), `history ${name}`).not.toMatch(ORDER_MARKERS);
  expect(JSON.stringify(readableHistory(h)), `history ${name}`).not.toMatch(SECRET_SHAPES);
  if (RECORD && name) {
    fs.mkdirSync(HISTORIES_DIR, { recursive: true });
    fs.writeFileSync(path.join(HISTORIES_DIR, `${name}.json`), `${JSON.stringify(h, null, 1)}\n`);
    recorded.push(name);
  }
  return h;
}

const eventsOf = (h: HistoryJson, type: string) => h.events.filter((e) => e.eventType === type);
/** The activity type of each ActivityTaskStarted, with its attempt. */
function startedActivities(h: HistoryJson): Array<{ name: string; attempt: number }> {
  const scheduled = new Map<string, string>();
  for (const e of eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED')) scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes.activityType.name);
  return eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_STARTED').map((e) => ({
    name: scheduled.get(String(e.activityTaskStartedEventAttributes.scheduledEventId)) ?? '?',
    attempt: Number(e.activityTaskStartedEventAttributes.attempt ?? 1),
  }));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where Temporal warns of a run's history (it ends a run at five times as much). */
const HISTORY_WARNING = { events: 10_240, bytes: 10 * 1024 * 1024 };

/** temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED: scheduled, no worker has started it. */
const PENDING_ACTIVITY_SCHEDULED = 1;

/** Polls until `probe` gives a value (a guard against hangs: the test's own timeout ends it otherwise). */
async function until<T>(what: string, probe: () => Promise<T | undefined | false>, everyMs = 250): Promise<T> {
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
      ...sandboxEnv(sb, dir),
      CBP_WEBHOOK_USERNAME: WEBHOOK.username,
      CBP_WEBHOOK_PASSWORD: WEBHOOK.password,
      CBP_LOG_LEVEL: 'info',
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace ?? 'default',
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
async function whileDownloading(handle: WorkflowHandle, done: number): Promise<void> {
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

async function faults(config: unknown): Promise<void> {
  await admin(sb, 'POST', '/faults', config);
}

describe.skipIf(skipTemporal)(temporalTitle('real Temporal server, real activities'), () => {
  beforeAll(async () => {
    quietTemporalRuntime();
    [env, sb] = await Promise.all([startTemporalEnv(), startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO })]);
    await workflowBundle();
  }, 180_000);

  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await sb?.close();
    await env?.teardown();
    if (RECORD) process.stdout.write(`recorded histories: ${recorded.join(', ')} in ${HISTORIES_DIR}\n`);
  });

  it('runs a nightly created by applySchedules and triggered: asOf is TemporalScheduledStartTime, the store equals the local runner\'s', async () => {
    const cfg = { ...configFor(sb, tempDir()), windowDays: 7, lookbackDays: 21 };
    const w = await realWorker(cfg);
    const id = `cbp-nightly-${randomUUID()}`;
    const opts = scheduleOptionsFromConfig(cfg);
    try {
      // As `cbp schedule apply` builds them from the configuration; the ids and queue are this test's own.
      await applySchedules(env.client, {
        ...opts,
        taskQueue: w.taskQueue,
        nightly: { ...opts.nightly, scheduleId: id },
        ingest: { ...opts.ingest, scheduleId: `${id}-ingest`, paused: true },
      });
      const schedule = env.client.schedule.getHandle(id);
      await schedule.trigger();
      const action = await until('the triggered run', async () => (await schedule.describe()).info.recentActions[0]);
      const handle = env.client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId);
      const r = (await handle.result()) as NightlyResult;
      const d = await handle.describe();
      const nominal = d.typedSearchAttributes.get({ name: 'TemporalScheduledStartTime', type: 'DATETIME' } as never) as unknown as Date;
      expect(nominal).toBeInstanceOf(Date);
      expect(r.asOf).toBe(nominal.toISOString());
      // The search attribute keeps whole seconds: the schedule's time of the action, not the run's start.
      expect(r.asOf).toBe(new Date(Math.floor(action.scheduledAt.getTime() / 1000) * 1000).toISOString());
      expect(r.asOf).not.toBe(d.startTime.toISOString());
      expect(r.windows.map((x) => x.task)).toContain(`mid_report:${TODAY.slice(0, 8)}01..${TODAY}`);
      await checkAndRecord('nightly-triggered', handle);
      await schedule.delete();
      await env.client.schedule.getHandle(`${id}-ingest`).delete();
      await w.stop();

      const input: NightlyInput = { ...opts.nightly.input, asOf: r.asOf };
      const local = await localStore((runner) => runner.nightly(input));
      const temporal = await dumpFile(cfg);
      expect(temporal.chargebacks!.length).toBeGreaterThan(0);
      expect(temporal.mid_stats!.length).toBeGreaterThan(0);
      expect(temporal).toEqual(local);
    } finally {
      await w.stop();
    }
  }, 120_000);

  it('runs every nominal night of a schedule backfill across a month end once, in order; the store equals the local runner\'s; applying twice changes nothing', async () => {
    const cfg = configFor(sb, tempDir());
    const w = await realWorker(cfg);
    const id = `cbp-nightly-${randomUUID()}`;
    const input = { windowDays: 1, lookbackDays: 1, kinds: ['chargebacks' as const, 'mid_report' as const] };
    const apply = () =>
      applySchedules(env.client, {
        taskQueue: w.taskQueue,
        nightly: { scheduleId: id, input, paused: true },
        ingest: { scheduleId: `${id}-ingest`, paused: true },
      });
    // A nightly with its pipeline (events, enrichment, ratios, notices, snapshot) is slow here, so the default is
    // four nights across a month's end; CBP_REAL_NIGHTS=61 runs two months.
    const NIGHTS = Number(process.env.CBP_REAL_NIGHTS ?? 4);
    const from = addDays(`${addDays(TODAY, -60).slice(0, 8)}01`, -2);
    const to = addDays(from, NIGHTS - 1);
    try {
      expect((await apply()).map((a) => a.action)).toEqual(['created', 'created']);
      const schedule = env.client.schedule.getHandle(id);
      const ingest = env.client.schedule.getHandle(`${id}-ingest`);
      const definition = async () => {
        const [a, b] = await Promise.all([schedule.describe(), ingest.describe()]);
        return [a, b].map((x) => ({ spec: x.spec, action: x.action, policies: x.policies, state: x.state, memo: x.memo }));
      };
      const before = await definition();
      expect((await apply()).map((a) => a.action)).toEqual(['updated', 'updated']);
      expect(await definition()).toEqual(before);

      await backfillSchedule(env.client, { scheduleId: id, from, to });
      const info = await until(`all ${NIGHTS} nights`, async () => {
        const i = (await schedule.describe()).info;
        return i.numActionsTaken >= NIGHTS && i.runningActions.length === 0 ? i : undefined;
      }, 500);
      expect(info.numActionsTaken).toBe(NIGHTS);
      expect(info.numActionsSkippedOverlap).toBe(0);
      expect(info.numActionsMissedCatchupWindow).toBe(0);

      // Every run the schedule started, through visibility: one per nominal night, each completed.
      const nights = Array.from({ length: NIGHTS }, (_, i) => `${addDays(from, i)}T02:30:00.000Z`);
      const runs = await until(`visibility lists the ${NIGHTS} runs`, async () => {
        const list: Array<{ workflowId: string; runId: string; status: string; nominal: string }> = [];
        for await (const x of env.client.workflow.list({ query: `TemporalScheduledById = '${id}'` })) {
          const t = x.typedSearchAttributes.get({ name: 'TemporalScheduledStartTime', type: 'DATETIME' } as never) as unknown as Date | undefined;
          list.push({ workflowId: x.workflowId, runId: x.runId, status: x.status.name, nominal: t ? t.toISOString() : '?' });
        }
        return list.length >= NIGHTS && list.every((x) => x.status === 'COMPLETED') ? list : undefined;
      }, 500);
      expect(runs.map((x) => x.nominal).sort()).toEqual(nights);
      const first = runs.find((x) => x.nominal === nights[0])!;
      await checkAndRecord('nightly-schedule-backfill', env.client.workflow.getHandle(first.workflowId, first.runId));
      await schedule.delete();
      await ingest.delete();
      await w.stop();

      const asOfs = await withStoreFile(cfg, (s) => s.all<{ as_of: unknown }>("SELECT as_of FROM runs WHERE workflow = 'nightly' ORDER BY started_at"));
      expect(asOfs.map((x) => new Date(String(x.as_of).replace(' ', 'T') + (String(x.as_of).endsWith('Z') ? '' : 'Z')).toISOString()).sort()).toEqual(nights);

      const local = await localStore(async (runner) => {
        for (const asOf of nights) await runner.nightly({ ...input, asOf });
      });
      expect(await dumpFile(cfg)).toEqual(local);
    } finally {
      await w.stop();
    }
  }, 240_000);

  it('runs a backfill that continues as new, each run of the chain well under the history limits at the default windows per run', async () => {
    const cfg = configFor(sb, tempDir());
    const w = await realWorker(cfg);
    const from = addDays(TODAY, -400);
    const to = addDays(from, 17);
    // The input `cbp schedule backfill --workflow` builds, with 6 windows a run in place of its default: a chain of 3.
    const input: BackfillInput = { from, to, kinds: ['chargebacks'], windowDays: 1, parallelism: 6, windowsPerRun: 6 };
    try {
      const handle = await env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue: w.taskQueue, workflowId: `cbp-backfill-${randomUUID()}`, args: [input] });
      const r = (await handle.result()) as BackfillResult;
      expect(r).toMatchObject({ status: 'done', planned: 18, loaded: 18, skipped: 0, open: 0 });

      // Walk the chain from its first run: each continued as new into the next, the last completed.
      let runId: string | undefined = handle.firstExecutionRunId;
      const chain: Array<{ runId: string; events: number; status: string }> = [];
      while (runId) {
        const h = env.client.workflow.getHandle(handle.workflowId, runId);
        const d = await h.describe();
        const hist = await historyOf(h);
        chain.push({ runId, events: hist.events.length, status: d.status.name });
        const next = eventsOf(hist, 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW')[0];
        expect(d.historyLength).toBe(hist.events.length);
        // A run of the default's windows, at this run's size per window, stays under half of Temporal's warning
        // (a linear guess: what a run carries to the next, the windows left, is small beside its events).
        const scale = DEFAULT_WINDOWS_PER_RUN / input.windowsPerRun!;
        expect(hist.events.length * scale).toBeLessThan(HISTORY_WARNING.events / 2);
        expect(Buffer.byteLength(JSON.stringify(hist)) * scale).toBeLessThan(HISTORY_WARNING.bytes / 2);
        // The first and the last run are kept as fixtures; the ones between are only checked.
        await checkAndRecord(chain.length === 1 ? 'backfill-continued' : next ? undefined : 'backfill-last', h);
        runId = next?.workflowExecutionContinuedAsNewEventAttributes.newExecutionRunId;
      }
      expect(chain.length).toBe(3);
      expect(chain.slice(0, -1).every((c) => c.status === 'CONTINUED_AS_NEW')).toBe(true);
      expect(chain.at(-1)!.status).toBe('COMPLETED');
      await w.stop();
      const done = await withStoreFile(cfg, (s) => s.all<{ n: bigint }>("SELECT count(*) AS n FROM windows_done WHERE kind = 'chargebacks'"));
      expect(Number(done[0]!.n)).toBe(18);
      const runs = await withStoreFile(cfg, (s) => s.all<{ n: bigint }>("SELECT count(*) AS n FROM runs WHERE workflow = 'backfill'"));
      expect(Number(runs[0]!.n)).toBe(1);
    } finally {
      await w.stop();
    }
  }, 240_000);

  it('re-fetches a range with `cbp schedule backfill --workflow --force`; without --force the done windows are skipped', async () => {
    const dir = tempDir();
    const cfg = configFor(sb, dir);
    const w = await realWorker(cfg);
    const cliEnv = { ...sandboxEnv(sb, dir), TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: w.taskQueue, CBP_LOG_LEVEL: 'warn' };
    const from = addDays(TODAY, -20);
    const to = addDays(TODAY, -18);
    const backfill = async (...extra: string[]) => {
      const r = await cbp(['schedule', 'backfill', '--workflow', '--from', from, '--to', to, '--kinds', 'chargebacks', '--window-days', '1', '--json', ...extra], cliEnv);
      expect(r.code, r.stderr).toBe(0);
      const started = JSON.parse(r.stdout) as { workflowId: string; runId: string; input: BackfillInput };
      return { started, result: (await env.client.workflow.getHandle(started.workflowId, started.runId).result()) as BackfillResult };
    };
    try {
      const first = await backfill();
      expect(first.result).toMatchObject({ status: 'done', planned: 3, loaded: 3, skipped: 0 });
      const again = await backfill();
      expect(again.result).toMatchObject({ status: 'done', planned: 3, loaded: 0, skipped: 3 });
      const forced = await backfill('--force');
      expect(forced.started.input.force).toBe(true);
      expect(forced.result).toMatchObject({ status: 'done', planned: 3, loaded: 3, skipped: 0 });
    } finally {
      await w.stop();
    }
  }, 120_000);

  // The backfill the two worker-death cases run: a few days, one window at a time, each download slowed.
  const deathInput = (days: number): BackfillInput => ({ from: addDays(TODAY, -40), to: addDays(TODAY, -41 + days), kinds: ['chargebacks'], windowDays: 1, parallelism: 1 });

  /**
   * A backfill of `days` days started on a `cbp worker` child process of its own task queue, the sandbox's
   * chargeback downloads slowed by latencyMs; body stops that worker and starts the next (next(), stopped after
   * the body whatever happens). The faults are cleared and the child killed at the end.
   */
  async function whenTheWorkerDies(
    o: { days: number; latencyMs: number; id: string },
    body: (c: { cfg: ReturnType<typeof configFor>; input: BackfillInput; child: Awaited<ReturnType<typeof childWorker>>; handle: WorkflowHandle; next: () => Promise<RealWorker> }) => Promise<void>,
  ): Promise<void> {
    const dir = tempDir();
    const cfg = configFor(sb, dir);
    const taskQueue = `cbp-real-${randomUUID()}`;
    const input = deathInput(o.days);
    const child = await childWorker(dir, taskQueue);
    let next: RealWorker | undefined;
    try {
      await faults({ routes: { 'POST /reporting/chargebacks': { latencyMs: o.latencyMs } } });
      const handle = await env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue, workflowId: `cbp-backfill-${o.id}-${randomUUID()}`, args: [input] });
      await body({ cfg, input, child, handle, next: async () => (next = await realWorker(cfg, taskQueue)) });
    } finally {
      await faults({});
      if (child.child.exitCode === null) child.child.kill('SIGKILL');
      await next?.stop();
    }
  }

  it('lets the running download finish when `cbp worker` gets SIGTERM, and a next worker finishes the run; the store equals a clean run', async () => {
    await whenTheWorkerDies({ days: 3, latencyMs: 4000, id: 'sigterm' }, async ({ cfg, input, child, handle, next }) => {
      await whileDownloading(handle, 1);
      child.child.kill('SIGTERM');
      const exit = await child.exited;
      expect(exit, child.output()).toEqual({ code: 0, signal: null });
      await faults({});
      // The download running at SIGTERM finished within the grace time: every activity the stopping worker had
      // started completed at its first attempt (none failed, timed out or is left for a retry).
      const mid = await historyOf(handle);
      const fetches = startedActivities(mid).filter((a) => a.name === 'fetchAndLoad');
      expect(fetches.length).toBeGreaterThanOrEqual(2);
      expect(fetches.every((a) => a.attempt === 1)).toBe(true);
      expect(eventsOf(mid, 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED').length).toBe(startedActivities(mid).length);
      // Nothing the stopping worker started is pending. It may have taken the workflow task that followed, so the next
      // activity can already be scheduled, never started: left for the next worker, not for a retry.
      const pending = ((await handle.describe()).raw.pendingActivities ?? []).map((a) => ({
        name: a.activityType?.name, state: a.state, attempt: a.attempt, failed: a.lastFailure != null,
      }));
      for (const a of pending) expect(a).toMatchObject({ state: PENDING_ACTIVITY_SCHEDULED, attempt: 1, failed: false });

      const w = await next();
      const r = (await handle.result()) as BackfillResult;
      expect(r).toMatchObject({ status: 'done', planned: 3, loaded: 3 });
      await checkAndRecord('backfill-worker-sigterm', handle);
      await w.stop();
      const local = await localStore((runner) => runner.backfill(input));
      expect(await dumpFile(cfg)).toEqual(local);
    });
  }, 180_000);

  it('retries the activities of a worker killed with SIGKILL mid-backfill on a new worker; the store equals a clean run, nothing loaded twice', async () => {
    await whenTheWorkerDies({ days: 5, latencyMs: 3000, id: 'kill' }, async ({ cfg, input, child, handle, next }) => {
      await whileDownloading(handle, 2);
      child.child.kill('SIGKILL');
      expect((await child.exited).signal).toBe('SIGKILL');
      await faults({});

      // The new worker gets the killed download once its heartbeat times out (the production minute shortened on
      // the server: timeOutHeartbeats), then the rest.
      const killed = ((await handle.describe()).raw.pendingActivities ?? []).map((a) => a.activityId!);
      expect(killed).toHaveLength(1);
      await timeOutHeartbeats(env, handle, killed);
      const w = await next();
      const r = (await handle.result()) as BackfillResult;
      expect(r).toMatchObject({ status: 'done', planned: 5, loaded: 5 });
      const h = await checkAndRecord('backfill-worker-killed', handle);
      const fetches = startedActivities(h).filter((a) => a.name === 'fetchAndLoad');
      expect(fetches.filter((a) => a.attempt === 2)).toHaveLength(1);
      expect(eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT').length).toBe(0); // a retried attempt's timeout is not an event of its own
      await w.stop();

      // Nothing loaded twice: one landing file per window, loaded once, and one fetch record per window.
      const loads = await withStoreFile(cfg, (s) =>
        s.all<{ w: string; files: bigint; loads: bigint }>("SELECT CAST(window_start AS VARCHAR) AS w, count(*) AS files, sum(load_count) AS loads FROM loads WHERE kind = 'chargebacks' GROUP BY 1 ORDER BY 1"),
      );
      expect(loads.map((l) => [Number(l.files), Number(l.loads)])).toEqual(Array.from({ length: 5 }, () => [1, 1]));
      const local = await localStore((runner) => runner.backfill(input));
      expect(await dumpFile(cfg)).toEqual(local);
    });
  }, 240_000);

  it('fails fast on a wrong reporting key: one attempt, the CBP_ERR_* code and message in the failure', async () => {
    const cfg = { ...configFor(sb, tempDir()), reportingKey: 'wrong-reporting-key-for-the-test' };
    const w = await realWorker(cfg);
    try {
      const handle = await env.client.workflow.start(WORKFLOW_TYPES.backfill, {
        taskQueue: w.taskQueue,
        workflowId: `cbp-backfill-wrong-key-${randomUUID()}`,
        args: [{ from: addDays(TODAY, -30), to: addDays(TODAY, -30), kinds: ['chargebacks'], windowDays: 1 } satisfies BackfillInput],
      });
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const activity = (err as WorkflowFailedError).cause;
      expect(activity).toBeInstanceOf(ActivityFailure);
      expect((activity as ActivityFailure).activityType).toBe('fetchAndLoad');
      const app = (activity as ActivityFailure).cause as ApplicationFailure;
      expect(app).toBeInstanceOf(ApplicationFailure);
      expect(app.type).toBe('CBP_ERR_SERVICE_UNAUTHORIZED');
      expect(app.nonRetryable).toBe(true);
      expect(app.message).toMatch(/401/);
      expect(app.message).not.toContain('wrong-reporting-key-for-the-test');
      const h = await checkAndRecord('backfill-failed-wrong-key', handle);
      expect(startedActivities(h).filter((a) => a.name === 'fetchAndLoad')).toEqual([{ name: 'fetchAndLoad', attempt: 1 }]);
      expect(eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_FAILED')[0]!.activityTaskFailedEventAttributes.retryState).toBe('RETRY_STATE_NON_RETRYABLE_FAILURE');
      expect(JSON.stringify(h)).not.toContain('wrong-reporting-key-for-the-test');
      await w.stop();
      const runs = await withStoreFile(cfg, (s) => s.all<{ status: string; error: string }>('SELECT status, error FROM runs'));
      expect(runs).toEqual([{ status: 'failed', error: app.message }]);
    } finally {
      await w.stop();
    }
  }, 120_000);

  it('reconciles the subscriptions, pushes orders and ingests through the server against the sandbox', async () => {
    let hook: Receiver | undefined;
    let w: RealWorker | undefined;
    try {
      hook = await startHookReceiver();
      const cfg = configFor(sb, tempDir(), { ...WEBHOOK, url: hook.url });
      w = await realWorker(cfg);
      const run = async <T>(type: string, args: unknown[], name: string): Promise<T> => {
        const handle = await env.client.workflow.start(type, { taskQueue: w!.taskQueue, workflowId: `${name}-${randomUUID()}`, args });
        const r = (await handle.result()) as T;
        await checkAndRecord(name, handle);
        return r;
      };
      const reconcile = { webhookUrl: hook.url, email: 'ops@merchant.example', auth: { username: WEBHOOK.username } };
      const first = await run<ReconcileResult>(WORKFLOW_TYPES.reconcileSubscriptions, [reconcile], 'reconcile-subscriptions');
      expect(first.created).toHaveLength(8);
      const second = await run<ReconcileResult>(WORKFLOW_TYPES.reconcileSubscriptions, [reconcile], 'reconcile-subscriptions-unchanged');
      expect(second).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
      // The local runner, on the state the server's runs left, finds nothing to do either.
      const local = await pipelineFor(configFor(sb, tempDir(), { ...WEBHOOK, url: hook.url }));
      try {
        expect(await local.runner.reconcileSubscriptions(reconcile)).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
      } finally {
        await local.close();
      }

      // Orders full of personal data: none of it may reach the history (checked by checkAndRecord).
      const source = path.join(cfg.dataDir, 'orders.ndjson');
      fs.writeFileSync(source, `${Array.from({ length: 120 }, (_, i) => JSON.stringify(plantedOrder(i))).join('\n')}\n`);
      const pushed = await run<PushOrdersResult>(WORKFLOW_TYPES.pushOrders, [{ source, batchSize: 50 }], 'push-orders');
      expect(pushed).toMatchObject({ status: 'done', read: 120, pushed: 120, new: 120, rejected: 0, invalid: 0 });
      const again = await run<PushOrdersResult>(WORKFLOW_TYPES.pushOrders, [{ source, batchSize: 50 }], 'push-orders-unchanged');
      expect(again).toMatchObject({ status: 'done', read: 120, pushed: 0, unchanged: 120 });
      expect((await admin<unknown[]>(sb, 'GET', '/orders')).length).toBeGreaterThanOrEqual(120);

      const ingested = await run<{ segments: number }>(WORKFLOW_TYPES.ingestEvents, [{}], 'ingest-events');
      expect(ingested.segments).toBe(0);
    } finally {
      await w?.stop();
      await hook?.close();
    }
  }, 120_000);
});

describe('cbp schedule backfill --force', () => {
  it('applies to --workflow only: without it, exit 2 before anything connects', async () => {
    const r = await cbp(['schedule', 'backfill', '--from', '2026-01-01', '--to', '2026-01-31', '--force']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--force apply to --workflow only/);
  });
});
