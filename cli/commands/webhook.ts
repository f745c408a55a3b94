// cbp webhook: the event receiver. Serves until SIGINT/SIGTERM, then stops taking events (503), finishes the
// fsyncs in flight, seals the open journal segment and exits.
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { ConfigError, UsageError } from '../../lib/errors.ts';
import { METRICS_OFF, parseMetricsAddr as parseAddr } from '../../lib/metrics-addr.ts';

/** A metrics address from a flag or setting; a UsageError naming where it came from otherwise. */
export function parseMetricsAddr(addr: string, where: string): ReturnType<typeof parseAddr> {
  try {
    return parseAddr(addr);
  } catch (e) {
    throw new UsageError(`${where} ${addr}: ${(e as Error).message}`);
  }
}

interface WebhookFlags {
  port?: string;
  host?: string;
  path?: string;
  journal?: string;
  json?: boolean;
  behindTlsProxy?: boolean;
  metricsAddr?: string;
}

function readPem(file: string, setting: string): Buffer {
  try {
    return readFileSync(file);
  } catch (e) {
    throw new ConfigError([`${setting} = ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`]);
  }
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('webhook')
    .description('Receive the service\'s event pushes (Basic auth) into the durable journal; answers 200 only once an event is fsync\'d')
    .option('--port <port>', 'port to listen on (0: any free port; default CBP_WEBHOOK_PORT, 8787)')
    .option('--host <host>', 'address to listen on (default CBP_WEBHOOK_HOST, 127.0.0.1)')
    .option('--path <path>', 'path events are pushed to (default CBP_WEBHOOK_PATH, /events)')
    .option('--journal <dir>', 'journal directory (default CBP_JOURNAL_DIR, <CBP_DATA_DIR>/journal)')
    .option('--metrics-addr <host:port>', 'where /metrics is served, never the receiver\'s own port; off: nowhere (default CBP_METRICS_ADDR, 127.0.0.1:9787)')
    .option('--json', 'print {"url", "journal", "metrics"} as the first stdout line')
    .option('--behind-tls-proxy', 'a TLS proxy terminates https in front: allows plain http on an address other than loopback (default CBP_WEBHOOK_BEHIND_TLS_PROXY, false)')
    .action(async (o: WebhookFlags) => {
      const cfg = ctx.config();
      const username = cfg.webhookUsername;
      const password = cfg.webhookPassword;
      if (!username || !password) {
        throw new ConfigError([
          `CBP_WEBHOOK_USERNAME and CBP_WEBHOOK_PASSWORD must both be set (${[!username && 'CBP_WEBHOOK_USERNAME', !password && 'CBP_WEBHOOK_PASSWORD']
            .filter(Boolean)
            .join(' and ')} missing): the service pushes events with these Basic credentials, the ones stored in the subscription's auth object`,
        ]);
      }
      let port = cfg.webhookPort;
      if (o.port !== undefined) {
        port = Number(o.port);
        if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--port ${o.port}: expected a port number 0-65535`);
      }
      const eventsPath = o.path ?? cfg.webhookPath;
      if (!eventsPath.startsWith('/')) throw new UsageError(`--path ${eventsPath}: expected a path starting with /, e.g. /events`);
      const { startReceiver } = await import('../../webhook/start.ts');
      const { assertReceiverCredentials } = await import('../../webhook/auth.ts');
      const { assertTransport } = await import('../../webhook/transport.ts');
      const previousPassword = cfg.webhookPreviousPassword;
      assertReceiverCredentials(username, password, previousPassword);
      const certFile = cfg.webhookTlsCert;
      const keyFile = cfg.webhookTlsKey;
      if (!!certFile !== !!keyFile) {
        throw new ConfigError(['CBP_WEBHOOK_TLS_CERT and CBP_WEBHOOK_TLS_KEY go together: set both to serve https, or neither behind a TLS proxy']);
      }
      const https = certFile && keyFile ? { cert: readPem(certFile, 'CBP_WEBHOOK_TLS_CERT'), key: readPem(keyFile, 'CBP_WEBHOOK_TLS_KEY') } : undefined;
      const host = o.host ?? cfg.webhookHost;
      const behindTlsProxy = o.behindTlsProxy === true || cfg.webhookBehindTlsProxy;
      assertTransport(host, !!https, behindTlsProxy);
      const journalDir = o.journal ?? cfg.journalDir;
      const metricsAddr = o.metricsAddr ?? cfg.metricsAddr;
      const metricsAt = parseMetricsAddr(metricsAddr === undefined ? METRICS_OFF : metricsAddr, '--metrics-addr');
      // The public port serves only what the service may reach: metrics stay on an address of their own.
      if (metricsAt && metricsAt.port !== 0 && metricsAt.port === port && (metricsAt.host === host || ['0.0.0.0', '::'].includes(metricsAt.host) || ['0.0.0.0', '::'].includes(host))) {
        throw new UsageError(`the metrics address ${metricsAddr} is the receiver's own port ${port}: give /metrics an address of its own (--metrics-addr, CBP_METRICS_ADDR)`);
      }
      const logger = ctx.logger();
      const rx = await startReceiver({
        username,
        password,
        previousPassword,
        host,
        behindTlsProxy,
        maxConnections: cfg.webhookMaxConnections,
        port,
        path: eventsPath,
        journalDir,
        https,
        bodyLimit: cfg.webhookBodyLimit,
        logger,
        metricsAddr,
        minFree: cfg.journalMinFree,
        journal: {
          segmentMaxBytes: cfg.journalSegmentMaxBytes,
          segmentMaxAgeMs: cfg.journalSegmentMaxAgeMs,
        },
      });
      // Handlers first, start line after: a supervisor that signals as soon as it reads the line must get a
      // clean shutdown (journal sealed), not the default SIGTERM death.
      const stopped = new Promise<void>((resolve) => {
        const stop = (signal: NodeJS.Signals) => {
          logger.info({ signal }, 'shutting down: new events get 503, events in flight are finished');
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          rx.close().then(
            () => resolve(),
            (e) => {
              logger.error({ err: (e as Error).message }, 'shutdown failed');
              process.exitCode = 1;
              resolve();
            },
          );
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      if (o.json) process.stdout.write(JSON.stringify({ url: rx.url, journal: rx.journalDir, metrics: rx.metricsUrl }) + '\n');
      else process.stdout.write(`cbp webhook: receiving events at ${rx.url} (journal ${rx.journalDir}${rx.metricsUrl ? `; metrics at ${rx.metricsUrl}` : ''}); Ctrl-C stops\n`);
      if (!https) {
        logger.info(
          { publicUrl: cfg.webhookPublicUrl ?? null },
          'serving plain http: the service pushes only to https addresses, so put a TLS proxy in front (CBP_WEBHOOK_PUBLIC_URL) or set CBP_WEBHOOK_TLS_CERT and CBP_WEBHOOK_TLS_KEY',
        );
      }
      await stopped;
      logger.info('receiver stopped; journal sealed');
    });
}
