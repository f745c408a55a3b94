// Starting the event receiver (webhook/server.ts builds it): the journal opened (lock, recovery), the receiver
// listening, and its /metrics endpoint when asked.
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { assertReceiverCredentials } from './auth.ts';
import { assertTransport } from './transport.ts';
import { openJournal, type Journal, type JournalOptions } from './journal.ts';
import { journalReadiness, JOURNAL_MIN_FREE_DEFAULT } from '../lib/journal-space.ts';
import { sizeBytes } from '../lib/size.ts';
import { registrySource, startMetricsEndpoint } from '../lib/metrics-http.ts';
import { createReceiverMetrics } from './metrics.ts';
import { buildReceiver, EVENTS_PATH_DEFAULT, MAX_CONNECTIONS_DEFAULT } from './server.ts';

/** Connections dropped at accept are logged at most once in this long. */
const DROP_LOG_EVERY_MS = 10_000;

export interface StartReceiverOptions {
  username: string;
  password: string;
  previousPassword?: string;
  journalDir: string;
  host?: string;
  port?: number;
  path?: string;
  bodyLimit?: number;
  https?: { cert: string | Buffer; key: string | Buffer };
  /**
   * Plain http on an address other than loopback is refused unless a TLS-terminating proxy is in front
   * (the credentials would cross the network in clear). Default false.
   */
  behindTlsProxy?: boolean;
  /** Connections open at once; more are dropped at accept. Default 1024. */
  maxConnections?: number;
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  keepAliveTimeoutMs?: number;
  logger?: Logger;
  /** Journal tuning (segment size and age, injected fs and clock). */
  journal?: Omit<JournalOptions, 'dir'>;
  /** Free space under the journal below which pushes are refused 503 and /readyz fails, a size as CBP_JOURNAL_MIN_FREE takes it. Default JOURNAL_MIN_FREE_DEFAULT. */
  minFree?: string;
  /** host:port of /metrics (lib/metrics-http.ts), or off. Default off here; `cbp webhook` passes CBP_METRICS_ADDR. */
  metricsAddr?: string;
}

export interface RunningReceiver {
  /** Where events are received, e.g. http://127.0.0.1:8787/events. */
  url: string;
  journalDir: string;
  app: FastifyInstance;
  journal: Journal;
  /** http://host:port/metrics, or null when metrics are off or their address could not be bound. */
  metricsUrl: string | null;
  /** Graceful stop: new requests get 503, requests in flight finish their fsyncs, the segment is sealed. */
  close(): Promise<void>;
}

/** Opens the journal (lock, recovery), builds the receiver and listens. */
export async function startReceiver(opts: StartReceiverOptions): Promise<RunningReceiver> {
  const host = opts.host ?? '127.0.0.1';
  // Checked before the journal is touched, so a refused start changes nothing on disk.
  assertReceiverCredentials(opts.username, opts.password, opts.previousPassword);
  assertTransport(host, !!opts.https, opts.behindTlsProxy ?? false);
  const journal = openJournal({
    ...opts.journal,
    dir: opts.journalDir,
    onEvent:
      opts.journal?.onEvent ??
      ((e) => {
        if (!opts.logger) return;
        if (e.kind === 'error') opts.logger.error({ journal: e }, 'journal error');
        else if (e.kind === 'lock-weak') opts.logger.warn({ journal: e }, e.message);
        else opts.logger.info({ journal: e }, `journal ${e.kind}`);
      }),
  });
  const eventsPath = opts.path ?? EVENTS_PATH_DEFAULT;
  const minFreeBytes = sizeBytes(opts.minFree ?? JOURNAL_MIN_FREE_DEFAULT);
  let app: FastifyInstance;
  let connections: () => Promise<number> = async () => 0;
  const metrics = opts.metricsAddr ? createReceiverMetrics({ journalDir: opts.journalDir, minFreeBytes, connections: () => connections() }) : undefined;
  try {
    app = buildReceiver({
      username: opts.username,
      password: opts.password,
      previousPassword: opts.previousPassword,
      sink: journal,
      path: eventsPath,
      bodyLimit: opts.bodyLimit,
      https: opts.https,
      logger: opts.logger,
      headersTimeoutMs: opts.headersTimeoutMs,
      requestTimeoutMs: opts.requestTimeoutMs,
      keepAliveTimeoutMs: opts.keepAliveTimeoutMs,
      metrics,
      readiness: () => journalReadiness(opts.journalDir, minFreeBytes),
    });
  } catch (e) {
    await journal.close();
    throw e;
  }
  connections = () => new Promise((resolve) => app.server.getConnections((err, n) => resolve(err ? 0 : n)));
  const maxConnections = opts.maxConnections ?? MAX_CONNECTIONS_DEFAULT;
  app.server.maxConnections = maxConnections;
  // Worth an operator's attention (the service re-sends what was dropped), but a flood must not flood the
  // log: one line per DROP_LOG_EVERY_MS at most, with the count since the last one.
  let dropped = 0;
  let lastDropLog = -Infinity;
  app.server.on('drop', () => {
    dropped++;
    const t = performance.now();
    if (t - lastDropLog < DROP_LOG_EVERY_MS) return;
    opts.logger?.warn({ dropped, maxConnections }, 'connections dropped at accept: the receiver holds CBP_WEBHOOK_MAX_CONNECTIONS already');
    dropped = 0;
    lastDropLog = t;
  });
  try {
    await app.listen({ host, port: opts.port ?? 0 });
  } catch (e) {
    await journal.close();
    throw e;
  }
  const addr = app.server.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;
  const url = `${opts.https ? 'https' : 'http'}://${shownHost}:${addr.port}${eventsPath}`;
  const endpoint = metrics && opts.metricsAddr ? await startMetricsEndpoint(opts.metricsAddr, registrySource(metrics.registry), { logger: opts.logger, what: 'receiver' }) : null;
  let closed: Promise<void> | null = null;
  return {
    url,
    journalDir: opts.journalDir,
    app,
    journal,
    metricsUrl: endpoint?.url ?? null,
    close() {
      closed ??= (async () => {
        try {
          await app.close();
        } finally {
          await journal.close();
          await endpoint?.close();
        }
      })();
      return closed;
    },
  };
}
