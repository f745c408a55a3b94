// The worker's /metrics: the Temporal SDK's own runtime telemetry (its Prometheus exporter, bound to a private
// loopback port and served through this endpoint), per activity its runs, failures and durations, and the
// pipeline gauges, read from the store this worker holds after each activity (never at scrape time: a scrape
// must not wait behind a long load). Names and meanings: docs/operations.md "Metrics and alerting".
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';
import { freePort } from '../lib/free-port.ts';
import { readPipelineGauges, registerPipelineGauges, type GaugeStore } from '../activities/pipeline-metrics.ts';
import { registrySource, type MetricsSource } from '../lib/metrics-http.ts';
import type { ActivityObserver } from './activity-errors.ts';

/** Seconds: a service call takes well under one, a report load or an evaluation minutes. */
export const ACTIVITY_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600];

/**
 * Installs the Temporal runtime with its Prometheus exporter on a free loopback port, before any worker or native
 * connection exists (the runtime is one per process). Returns the exporter's URL.
 */
export async function installTemporalMetrics(): Promise<string> {
  const bindAddress = `127.0.0.1:${await freePort()}`;
  Runtime.install({ telemetryOptions: { metrics: { prometheus: { bindAddress, useSecondsForDurations: true } } } });
  return `http://${bindAddress}/metrics`;
}

export interface WorkerMetrics {
  source: MetricsSource;
  observe: ActivityObserver;
  /** Reads the pipeline gauges again from the store, if this worker has opened it; never throws. */
  refreshPipeline(): Promise<void>;
  /** No more reads; resolves when the one running has ended (then the store may close). */
  stop(): Promise<void>;
}

/** Why an activity failed, as a label: its stable code (CBP_ERR_...), else the error's name. */
function failureCode(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === 'string' && /^[A-Z0-9_]{1,64}$/.test(code)) return code;
  const name = (e as Error)?.name;
  return typeof name === 'string' && /^\w{1,64}$/.test(name) ? name : 'error';
}

export function createWorkerMetrics(opts: { store: () => GaugeStore | undefined; snapshotPath: string; temporalUrl?: string; logger?: Logger }): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const runs = new Counter({ name: 'cbp_activity_runs_total', help: 'Activity runs ended on this worker, by activity', labelNames: ['activity'], registers: [registry] });
  const failures = new Counter({ name: 'cbp_activity_failures_total', help: 'Activity runs that failed, by activity and error code (Temporal may retry them)', labelNames: ['activity', 'code'], registers: [registry] });
  const durations = new Histogram({ name: 'cbp_activity_duration_seconds', help: 'Seconds an activity run took, by activity', labelNames: ['activity'], buckets: ACTIVITY_BUCKETS, registers: [registry] });
  const pipeline = registerPipelineGauges(registry);
  pipeline.set(null);

  let refreshing: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const readOnce = async () => {
    const store = opts.store();
    if (!store) return;
    try {
      // Through the store's lane: never between the statements of another activity's transaction.
      pipeline.set(await store.exclusive((s) => readPipelineGauges(s, { snapshotPath: opts.snapshotPath, source: 'store' })));
    } catch (e) {
      opts.logger?.warn({ err: (e as Error).message }, 'pipeline gauges could not be read; the last values stay');
    }
  };
  const refreshPipeline = (): Promise<void> => {
    if (stopped) return Promise.resolve();
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      do {
        again = false;
        await readOnce();
      } while (again && !stopped);
    })().finally(() => (refreshing = null));
    return refreshing;
  };

  const temporal = async (): Promise<string> => {
    if (!opts.temporalUrl) return '';
    try {
      const res = await fetch(opts.temporalUrl, { signal: AbortSignal.timeout(5_000) });
      return res.ok ? await res.text() : '';
    } catch {
      // The SDK's exporter not up yet (no worker started): cbp's own metrics still answer.
      return '';
    }
  };
  return {
    source: registrySource(registry, temporal),
    observe(activity, seconds, error) {
      runs.inc({ activity });
      durations.observe({ activity }, seconds);
      if (error !== undefined) failures.inc({ activity, code: failureCode(error) });
      void refreshPipeline();
    },
    refreshPipeline,
    async stop() {
      stopped = true;
      await refreshing;
    },
  };
}
