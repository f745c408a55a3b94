// `cbp demo --temporal`: the demo's runs through a real Temporal server. A dev server (`temporal server
// start-dev`, its state in the demo folder) is started as a child process on free loopback ports, with its web
// UI; a worker runs in this process with the demo's real activities (its sandbox, its DuckDB file) on a task
// queue of its own; the cbp schedules are applied under ids of their own (paused: the demo starts their runs);
// the workflows run as a user's would: subscriptions and order pushes started by a client, history as a
// schedule backfill, events and the nightly as triggered schedule runs. close() deletes the schedules, stops
// the worker and the server; the demo calls it on success, failure and Ctrl-C alike.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Client, ScheduleExecutionResult } from '@temporalio/client';
import type { Activities, IngestResult } from '../activities/types.ts';
import { applySchedules, backfillSchedule } from '../worker/schedules.ts';
import { createWorker, type CbpWorker } from '../worker/worker.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import type { NightlyInput, NightlyResult } from '../workflows/nightly.ts';
import type { PushOrdersInput, PushOrdersResult } from '../workflows/push-orders.ts';
import type { ReconcileInput, ReconcileResult } from '../workflows/reconcile.ts';
import { connectTemporal } from './temporal.ts';
import { startDevServer, type DevServer } from './temporal-dev.ts';

export interface TemporalDemoOptions {
  /** The `temporal` binary (findTemporalCli()). */
  cli: string;
  /** The demo's folder: the server keeps its state in temporal.db there. */
  dataDir: string;
  /** The worker's activities: the demo's pipeline's, over its sandbox and DuckDB file. */
  activities: Activities;
  /**
   * A second worker's activities, as on a second host sharing the lake: it serves the shared task queue too, and the
   * ingest schedule goes to the first worker's own queue (the journal is on its host).
   */
  secondHost?: Activities;
  /** What each nightly run of the demo's schedule covers (asOf comes from the schedule). */
  nightlyInput: Omit<NightlyInput, 'asOf' | 'runId'>;
  /** Aborted on Ctrl-C: every wait gives up at once. */
  signal: AbortSignal;
}

export interface TemporalDemo {
  server: DevServer;
  dbFile: string;
  taskQueue: string;
  /** The first worker's own queue, which the ingest schedule uses, when there is a second host. */
  hostQueue?: string;
  schedules: { nightly: string; ingest: string };
  reconcileSubscriptions(input: ReconcileInput): Promise<ReconcileResult>;
  pushOrders(input: PushOrdersInput): Promise<PushOrdersResult>;
  /** A schedule backfill of the nightly over [from, to] (days); resolves with each run's result, in order. */
  backfillNights(from: string, to: string): Promise<Array<{ workflowId: string; result: NightlyResult }>>;
  triggerIngest(): Promise<{ workflowId: string; result: IngestResult }>;
  triggerNightly(): Promise<{ workflowId: string; result: NightlyResult }>;
  /** Deletes the schedules, stops the worker and the server. Safe to call more than once. */
  close(): Promise<void>;
}

/** Thrown by a wait the demo's Ctrl-C cut short. */
export class DemoInterrupted extends Error {
  constructor() {
    super('interrupted');
    this.name = 'DemoInterrupted';
  }
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(new DemoInterrupted());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new DemoInterrupted());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

const sleep = (ms: number, signal: AbortSignal) => abortable(new Promise<void>((r) => setTimeout(r, ms)), signal);

/** How long one schedule action may take to appear (a hang guard, not a speed goal). */
const ACTION_WAIT_MS = 10 * 60_000;

export async function startTemporalDemo(opts: TemporalDemoOptions): Promise<TemporalDemo> {
  const { signal } = opts;
  const dbFile = path.join(opts.dataDir, 'temporal.db');
  const id = `cbp-demo-${randomBytes(3).toString('hex')}`;
  const taskQueue = id;
  const schedules = { nightly: `${id}-nightly`, ingest: `${id}-ingest` };
  const server = await startDevServer({ cli: opts.cli, dbFile, signal });
  let client: Client | undefined;
  let worker: CbpWorker | undefined;
  let running: Promise<void> | undefined;
  // With a second host: the first worker also serves its own queue (its journal's ingest), the second the shared one.
  const hostQueue = opts.secondHost ? `${id}-host-a` : undefined;
  const extra: Array<{ worker: CbpWorker; running: Promise<void> }> = [];
  let applied = false;
  let closing: Promise<void> | undefined;
  let workerDown: Promise<never> = new Promise<never>(() => undefined);

  const close = () =>
    (closing ??= (async () => {
      if (client && applied) {
        for (const s of [schedules.nightly, schedules.ingest]) await client.schedule.getHandle(s).delete().catch(() => undefined);
      }
      for (const w of extra) {
        await Promise.resolve().then(() => w.worker.shutdown()).catch(() => undefined);
        await w.running.catch(() => undefined);
      }
      if (worker) {
        await worker.shutdown().catch(() => undefined);
        await running?.catch(() => undefined);
      }
      await client?.connection.close().catch(() => undefined);
      await server.stop();
    })());

  try {
    client = await connectTemporal({ address: server.address, namespace: server.namespace });
    // Installed only now, as the worker is made: the SDK shuts an idle runtime down once its last worker has
    // stopped, but one installed and never used would keep this process from exiting.
    // The SDK's own INFO lines (worker states, the bundle's webpack report) would drown the demo's steps; and
    // Ctrl-C is the demo's to handle (it stops the worker itself), not the SDK's.
    const { DefaultLogger, Runtime, makeTelemetryFilterString } = await import('@temporalio/worker');
    try {
      Runtime.install({
        logger: new DefaultLogger('WARN'),
        telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'WARN', other: 'WARN' }), forward: {} } },
        shutdownSignals: [],
      });
    } catch {
      // a runtime is installed already (a second demo in one process): keep it
    }
    // Not cut short by Ctrl-C (bundling the workflows from the sources takes a few seconds): a worker made
    // after the demo gave up on it would keep polling; it is shut down with the rest instead.
    worker = await createWorker({
      activities: opts.activities,
      address: server.address,
      namespace: server.namespace,
      taskQueue,
      // Ctrl-C should not keep the user waiting long; a report download is retried by Temporal anyway.
      shutdownGraceTime: '5 seconds',
      shutdownForceTime: '15 seconds',
    });
    running = worker.run();
    const more = (activities: Activities, queue: string) => createWorker({
      activities, address: server.address, namespace: server.namespace, taskQueue: queue, shutdownGraceTime: '5 seconds', shutdownForceTime: '15 seconds',
    });
    if (hostQueue) {
      const own = await more(opts.activities, hostQueue);
      extra.push({ worker: own, running: own.run() });
      const b = await more(opts.secondHost!, taskQueue);
      extra.push({ worker: b, running: b.run() });
    }
    // A worker that fails or stops before the demo's runs end fails the demo instead of leaving it waiting.
    workerDown = running.then(
      () => (closing ? new Promise<never>(() => undefined) : Promise.reject(new Error('the demo\'s Temporal worker stopped before its runs ended'))),
      (e: unknown) => Promise.reject(e),
    );
    workerDown.catch(() => undefined);
    signal.throwIfAborted();
    await applySchedules(client, {
      taskQueue,
      nightly: { scheduleId: schedules.nightly, input: opts.nightlyInput, paused: true },
      ingest: { scheduleId: schedules.ingest, paused: true, ...(hostQueue ? { taskQueue: hostQueue } : {}) },
    });
    applied = true;
  } catch (e) {
    await close();
    throw e;
  }
  const c = client;
  /**
   * A client call that Ctrl-C cancels at the gRPC level: an abandoned long poll (a run's result) would
   * otherwise retry on a connection closed meanwhile, and throw from a timer.
   */
  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    // A signal of its own per call: the SDK adds an abort listener per gRPC call and never removes it, which
    // on the demo's one signal would pile up (a poll every 200 ms).
    const own = new AbortController();
    const relay = () => own.abort(signal.reason);
    signal.addEventListener('abort', relay, { once: true });
    try {
      return await Promise.race([abortable(c.connection.withAbortSignal(own.signal, fn), signal), workerDown]);
    } finally {
      signal.removeEventListener('abort', relay);
    }
  };

  async function execute<T>(type: string, workflowId: string, args: unknown[]): Promise<T> {
    const handle = await call(() => c.workflow.start(type, { taskQueue, workflowId, args }));
    return call(() => handle.result() as Promise<T>);
  }

  /** The schedule's actions not in `seen`, oldest first. */
  async function newActions(scheduleId: string, seen: Set<string>): Promise<ScheduleExecutionResult[]> {
    const d = await call(() => c.schedule.getHandle(scheduleId).describe());
    return d.info.recentActions
      .filter((a) => a.action.type === 'startWorkflow' && !seen.has(a.action.workflow.firstExecutionRunId))
      .sort((a, b) => a.scheduledAt.getTime() - b.scheduledAt.getTime());
  }

  async function seenRuns(scheduleId: string): Promise<Set<string>> {
    const d = await call(() => c.schedule.getHandle(scheduleId).describe());
    return new Set(d.info.recentActions.map((a) => a.action.workflow.firstExecutionRunId));
  }

  /** Waits for `count` new actions of the schedule, each to its end, in order; returns their results. */
  async function awaitActions<T>(scheduleId: string, seen: Set<string>, count: number): Promise<Array<{ workflowId: string; result: T }>> {
    const out: Array<{ workflowId: string; result: T }> = [];
    let deadline = Date.now() + ACTION_WAIT_MS;
    while (out.length < count) {
      const [next] = await newActions(scheduleId, seen);
      if (!next) {
        if (Date.now() > deadline) throw new Error(`schedule ${scheduleId}: ${out.length} of ${count} runs started within ${ACTION_WAIT_MS / 60_000} min (is the worker polling ${taskQueue}?)`);
        await sleep(200, signal);
        continue;
      }
      const wf = next.action.workflow;
      seen.add(wf.firstExecutionRunId);
      // Follows the run and any continue-as-new chain to its end.
      const result = await call(() => c.workflow.getHandle(wf.workflowId, wf.firstExecutionRunId).result() as Promise<T>);
      out.push({ workflowId: wf.workflowId, result });
      deadline = Date.now() + ACTION_WAIT_MS;
    }
    return out;
  }

  let orders = 0;
  return {
    server,
    dbFile,
    taskQueue,
    ...(hostQueue ? { hostQueue } : {}),
    schedules,
    reconcileSubscriptions: (input) => execute<ReconcileResult>(WORKFLOW_TYPES.reconcileSubscriptions, `${id}-subscriptions`, [input]),
    pushOrders: (input) => execute<PushOrdersResult>(WORKFLOW_TYPES.pushOrders, `${id}-orders-${++orders}`, [input]),
    async backfillNights(from, to) {
      const seen = await seenRuns(schedules.nightly);
      await call(() => backfillSchedule(c, { scheduleId: schedules.nightly, from, to }));
      const nights = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
      return awaitActions<NightlyResult>(schedules.nightly, seen, nights);
    },
    async triggerIngest() {
      const seen = await seenRuns(schedules.ingest);
      await call(() => c.schedule.getHandle(schedules.ingest).trigger());
      const [r] = await awaitActions<IngestResult>(schedules.ingest, seen, 1);
      return r!;
    },
    async triggerNightly() {
      const seen = await seenRuns(schedules.nightly);
      await call(() => c.schedule.getHandle(schedules.nightly).trigger());
      const [r] = await awaitActions<NightlyResult>(schedules.nightly, seen, 1);
      return r!;
    },
    close,
  };
}
