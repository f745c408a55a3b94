// The cbp Temporal worker: a factory (nothing connects at import) with a graceful shutdown.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Duration } from '@temporalio/common';
import type { Activities } from '../activities/types.ts';
import type { Config } from '../lib/config.ts';
import { temporalActivities, type ActivityObserver } from './activity-errors.ts';

export const WORKER_DEFAULTS = {
  taskQueue: 'cbp',
  namespace: 'default',
  address: '127.0.0.1:7233',
  /** Running activities get this long to finish after SIGINT/SIGTERM (the SDK's default is 0: cancel at once). */
  shutdownGraceTime: '30 seconds',
  /** Then the worker stops regardless. */
  shutdownForceTime: '2 minutes',
  /** DuckDB has one writer: store activities queue behind each other, so more slots buy little. */
  maxConcurrentActivityTaskExecutions: 4,
} as const;

const HERE = fileURLToPath(import.meta.url);
/** The workflow bindings beside this module: workflows/temporal.ts in the sources, dist/workflows/temporal.js when built. */
export const WORKFLOWS_PATH = path.join(path.dirname(HERE), '..', 'workflows', `temporal${path.extname(HERE)}`);
/**
 * The bundle `npm run build` writes beside the compiled code (dist/workflow-bundle.js), so `cbp worker` starts
 * without bundling. Undefined in the sources: a worker run from them (tests, tsx) bundles at start, and so
 * always runs the workflows as they are, never a bundle built from older code.
 */
export const PREBUILT_BUNDLE_PATH = HERE.endsWith('.ts') ? undefined : path.join(path.dirname(HERE), '..', 'workflow-bundle.js');

/** The workflow code a worker runs: the given bundle, else the prebuilt one when there is one, else workflows/temporal at start. */
export function workflowSource(given?: { code: string } | { codePath: string }, prebuilt = PREBUILT_BUNDLE_PATH): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (given) return { workflowBundle: given };
  if (prebuilt && existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  return { workflowsPath: WORKFLOWS_PATH };
}

/** Where the workflow code of a worker comes from, in words (the `cbp worker` banner). */
export function describeWorkflowSource(given?: { code: string } | { codePath: string }, prebuilt = PREBUILT_BUNDLE_PATH): string {
  const src = workflowSource(given, prebuilt);
  const rel = (p: string) => path.relative(process.cwd(), p) || p;
  if (src.workflowBundle) return 'codePath' in src.workflowBundle ? `${rel(src.workflowBundle.codePath)} (prebuilt bundle)` : 'a bundle given in code';
  return `bundled at start from ${rel(src.workflowsPath!)}`;
}

export interface CreateWorkerOptions {
  /** The real activity implementations (wrapped here so their errors carry codes to Temporal). */
  activities: Activities;
  taskQueue?: string;
  namespace?: string;
  /** An open connection; otherwise one is made to `address`. */
  connection?: NativeConnection;
  address?: string;
  /** Temporal Cloud API key. */
  apiKey?: string;
  /** mTLS client certificate and key (PEM contents). */
  tls?: { cert: Buffer; key: Buffer };
  /** A prebuilt bundle (bundleWorkflowCode); default: dist/workflow-bundle.js when built, else bundle workflows/temporal at start. */
  workflowBundle?: { code: string } | { codePath: string };
  shutdownGraceTime?: Duration;
  shutdownForceTime?: Duration;
  maxConcurrentActivityTaskExecutions?: number;
  /** Told of every activity run as it ends (worker/metrics.ts counts them). */
  observe?: ActivityObserver;
  /** Extra Worker options, applied last. */
  extra?: Partial<WorkerOptions>;
}

/** The Worker options, without connecting: what createWorker passes to Worker.create. */
export function workerOptions(opts: CreateWorkerOptions, connection: NativeConnection): WorkerOptions {
  return {
    connection,
    namespace: opts.namespace ?? WORKER_DEFAULTS.namespace,
    taskQueue: opts.taskQueue ?? WORKER_DEFAULTS.taskQueue,
    activities: temporalActivities(opts.activities, { observe: opts.observe }),
    ...workflowSource(opts.workflowBundle),
    shutdownGraceTime: opts.shutdownGraceTime ?? WORKER_DEFAULTS.shutdownGraceTime,
    shutdownForceTime: opts.shutdownForceTime ?? WORKER_DEFAULTS.shutdownForceTime,
    maxConcurrentActivityTaskExecutions: opts.maxConcurrentActivityTaskExecutions ?? WORKER_DEFAULTS.maxConcurrentActivityTaskExecutions,
    ...opts.extra,
  };
}

export async function connect(opts: Pick<CreateWorkerOptions, 'address' | 'apiKey' | 'tls'>): Promise<NativeConnection> {
  return NativeConnection.connect({
    address: opts.address ?? WORKER_DEFAULTS.address,
    ...(opts.apiKey ? { apiKey: opts.apiKey } : {}),
    ...(opts.tls ? { tls: { clientCertPair: { crt: opts.tls.cert, key: opts.tls.key } } } : opts.apiKey ? { tls: true } : {}),
  });
}

export interface CbpWorker {
  worker: Worker;
  /** Resolves when the worker has stopped (after shutdown() or SIGINT/SIGTERM, which the SDK handles). */
  run(): Promise<void>;
  /** Stop polling, let running activities finish within the grace time, then close the connection if ours. */
  shutdown(): Promise<void>;
}

export async function createWorker(opts: CreateWorkerOptions): Promise<CbpWorker> {
  const owned = !opts.connection;
  const connection = opts.connection ?? (await connect(opts));
  let worker: Worker;
  try {
    worker = await Worker.create(workerOptions(opts, connection));
  } catch (e) {
    if (owned) await connection.close();
    throw e;
  }
  let running: Promise<void> | undefined;
  const closeOwned = async () => {
    if (owned) await connection.close().catch(() => undefined);
  };
  return {
    worker,
    run() {
      running ??= worker.run().finally(closeOwned);
      return running;
    },
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      if (running) await running;
      else await closeOwned();
    },
  };
}

export interface TemporalTarget {
  address: string;
  namespace: string;
  taskQueue: string;
  apiKey?: string;
  tls?: { cert: Buffer; key: Buffer };
}

/** Where Temporal is, from TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, TEMPORAL_API_KEY, TEMPORAL_TLS_*. */
export function temporalTargetFromConfig(cfg: Config): TemporalTarget {
  const { temporalTlsCert: cert, temporalTlsKey: key } = cfg;
  return {
    address: cfg.temporalAddress,
    namespace: cfg.temporalNamespace,
    taskQueue: cfg.temporalTaskQueue,
    ...(cfg.temporalApiKey ? { apiKey: cfg.temporalApiKey } : {}),
    ...(cert && key ? { tls: { cert: readFileSync(cert), key: readFileSync(key) } } : {}),
  };
}

/** A Temporal client (to start workflows, manage schedules). Close it with `client.connection.close()`. */
export async function createTemporalClient(target: Omit<TemporalTarget, 'taskQueue'>): Promise<Client> {
  const connection = await Connection.connect({
    address: target.address,
    ...(target.apiKey ? { apiKey: target.apiKey } : {}),
    ...(target.tls ? { tls: { clientCertPair: { crt: target.tls.cert, key: target.tls.key } } } : target.apiKey ? { tls: true } : {}),
  });
  return new Client({ connection, namespace: target.namespace });
}
