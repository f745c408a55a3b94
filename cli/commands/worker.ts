// cbp worker: the Temporal worker of cbp. Polls TEMPORAL_TASK_QUEUE in TEMPORAL_NAMESPACE at TEMPORAL_ADDRESS
// (Temporal Cloud: TEMPORAL_API_KEY, or mTLS with TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY). On SIGINT / SIGTERM
// it stops polling, lets running activities finish (30 s grace, --grace), closes the store and exits 0. On start
// it says on stderr which server, namespace and task queue it serves (and logs the same). The worker process
// holds the store (one writer) from its first store activity until it stops: analysts and `cbp status` read the
// snapshot.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { intOption } from './run.ts';
import { CONNECT_TIMEOUT_MS } from '../options.ts';
import { UsageError } from '../../lib/errors.ts';
import { parseMetricsAddr } from './webhook.ts';
import type { MetricsEndpoint } from '../../lib/metrics-http.ts';
import type { ActivityObserver } from '../../worker/activity-errors.ts';

const UNITS_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A duration such as 30s, 2m, 500ms or 1h (a bare number is seconds), in ms; a UsageError naming the option otherwise. */
export function parseGrace(v: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/i.exec(v.trim());
  if (!m) throw new UsageError(`--grace must be a duration such as 30s, 2m or 500ms, got ${JSON.stringify(v)}`);
  return Math.round(Number(m[1]) * UNITS_MS[(m[2] ?? 's').toLowerCase()]!);
}

function secondsText(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('worker')
    .description('Run the Temporal worker (workflows and activities of cbp) until SIGINT/SIGTERM; running activities then get the grace time (30 s) to finish')
    .option('--task-queue <name>', 'task queue (default TEMPORAL_TASK_QUEUE, cbp)')
    .option('--max-activities <n>', 'activities run at once (default 4)', intOption('--max-activities'))
    .option('--connect-timeout <ms>', `time allowed to reach Temporal (default ${CONNECT_TIMEOUT_MS})`, intOption('--connect-timeout'))
    .option('--metrics-addr <host:port>', "where /metrics is served (the Temporal SDK's metrics, activities, pipeline gauges); off: nowhere (default CBP_WORKER_METRICS_ADDR, 127.0.0.1:9788)")
    .option('--grace <duration>', 'after SIGINT/SIGTERM, time running activities get to finish before they are cancelled, e.g. 30s, 2m (default 30s)', parseGrace)
    .action(async (o: { taskQueue?: string; maxActivities?: number; connectTimeout?: number; grace?: number; metricsAddr?: string }) => {
      const { createActivities, sharedStore, storeOpener } = await import('../../activities/index.ts');
      const { createServiceClients } = await import('../../client/index.ts');
      const { createWorker, describeWorkflowSource, temporalTargetFromConfig, WORKER_DEFAULTS } = await import('../../worker/worker.ts');
      const { checkTemporal } = await import('../temporal.ts');
      const cfg = ctx.config();
      const metricsAddr = o.metricsAddr ?? cfg.workerMetricsAddr;
      const metricsOn = parseMetricsAddr(metricsAddr, '--metrics-addr') !== null;
      const target = temporalTargetFromConfig(cfg);
      await checkTemporal(target, o.connectTimeout ?? CONNECT_TIMEOUT_MS);
      const store = sharedStore(storeOpener(cfg));
      const clients = createServiceClients(cfg);
      const logger = ctx.logger();
      let endpoint: MetricsEndpoint | null = null;
      let stopMetrics: (() => Promise<void>) | undefined;
      try {
        const activities = createActivities({ config: cfg, store: store.get, clients, logger });
        let observe: ActivityObserver | undefined;
        if (metricsOn) {
          // Before any worker exists: the Temporal runtime, and so its metrics exporter, is installed once per process.
          const { createWorkerMetrics, installTemporalMetrics } = await import('../../worker/metrics.ts');
          const { startMetricsEndpoint } = await import('../../lib/metrics-http.ts');
          const metrics = createWorkerMetrics({ store: store.peek, snapshotPath: cfg.snapshotPath, temporalUrl: await installTemporalMetrics(), logger });
          observe = metrics.observe;
          stopMetrics = metrics.stop;
          endpoint = await startMetricsEndpoint(metricsAddr, metrics.source, { logger, what: 'worker' });
        }
        const make = (taskQueue: string) => createWorker({
          activities,
          address: target.address,
          namespace: target.namespace,
          taskQueue,
          ...(target.apiKey ? { apiKey: target.apiKey } : {}),
          ...(target.tls ? { tls: target.tls } : {}),
          ...(o.maxActivities ? { maxConcurrentActivityTaskExecutions: o.maxActivities } : {}),
          ...(o.grace !== undefined ? { shutdownGraceTime: o.grace } : {}),
          ...(observe ? { observe } : {}),
        });
        const taskQueue = o.taskQueue ?? target.taskQueue;
        // With receivers on several hosts, this host's journal is ingested from a queue of its own (CBP_INGEST_TASK_QUEUE).
        const hostQueue = cfg.ingestTaskQueue && cfg.ingestTaskQueue !== taskQueue ? cfg.ingestTaskQueue : undefined;
        const workers = await Promise.all([make(taskQueue), ...(hostQueue ? [make(hostQueue)] : [])]);
        const graceMs = o.grace ?? parseGrace(WORKER_DEFAULTS.shutdownGraceTime.replace(' seconds', 's'));
        const workflows = describeWorkflowSource();
        logger.info({ address: target.address, namespace: target.namespace, taskQueue, ingestTaskQueue: hostQueue, workflows, graceMs }, 'cbp worker polling');
        process.stderr.write(
          `cbp worker: serving task queue ${taskQueue}${hostQueue ? ` and this host's ingest queue ${hostQueue}` : ''} in namespace ${target.namespace} at ${target.address}` +
            `${target.apiKey ? ' (API key)' : target.tls ? ' (mTLS)' : ''} · workflows ${workflows} · ` +
            `${endpoint ? `metrics at ${endpoint.url} · ` : ''}SIGINT/SIGTERM stops it (running activities get ${secondsText(graceMs)})\n`,
        );
        // The SDK stops the worker on SIGINT/SIGTERM (shutdownGraceTime lets running activities finish).
        await Promise.all(workers.map((w) => w.run()));
        logger.info({ taskQueue }, 'cbp worker stopped');
        process.stderr.write('cbp worker: stopped\n');
      } finally {
        await endpoint?.close();
        await stopMetrics?.();
        await clients.close().catch(() => undefined);
        store.close();
      }
    });
}
