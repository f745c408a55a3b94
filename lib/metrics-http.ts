// The /metrics endpoint of `cbp webhook` and `cbp worker`: a tiny HTTP server of its own, on an address of its own
// (loopback by default), never the receiver's public port. It serves GET /metrics in Prometheus' text format and
// nothing else. A metrics address that cannot be bound is logged, not fatal: receiving events and running
// activities matter more than being watched, and the "receiver down" alert (up == 0) fires anyway.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { parseMetricsAddr } from './metrics-addr.ts';

export interface MetricsEndpoint {
  /** http://host:port/metrics */
  url: string;
  close(): Promise<void>;
}

export interface MetricsSource {
  contentType: string;
  /** The whole text exposition, rendered on each scrape. */
  render(): Promise<string>;
}

/** A prom-client registry as a source, with text from elsewhere (the Temporal SDK's exporter) appended. */
export function registrySource(registry: { contentType: string; metrics(): Promise<string> }, ...more: Array<() => Promise<string>>): MetricsSource {
  return {
    contentType: registry.contentType,
    async render() {
      const parts = await Promise.all([registry.metrics(), ...more.map((f) => f())]);
      return parts.map((p) => (p.endsWith('\n') || p === '' ? p : p + '\n')).join('');
    },
  };
}

/**
 * Serves `source` at http://addr/metrics. Resolves null (after logging why) when `addr` is off or cannot be
 * bound; `what` names the process in the log ("receiver", "worker").
 */
export async function startMetricsEndpoint(addr: string, source: MetricsSource, opts: { logger?: Logger; what: string }): Promise<MetricsEndpoint | null> {
  const at = parseMetricsAddr(addr);
  if (!at) return null;
  const server: Server = createServer((req, res) => {
    const url = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || url !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('only GET /metrics here\n');
      return;
    }
    source.render().then(
      (text) => res.writeHead(200, { 'content-type': source.contentType }).end(text),
      (e) => {
        opts.logger?.error({ err: (e as Error).message }, `${opts.what} metrics could not be rendered`);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics could not be rendered; see the log\n');
      },
    );
  });
  server.keepAliveTimeout = 5_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(at.port, at.host, () => resolve());
    });
  } catch (e) {
    opts.logger?.error(
      { metricsAddr: addr, err: (e as NodeJS.ErrnoException).code ?? (e as Error).message },
      `${opts.what} metrics NOT served: the metrics address cannot be bound (another process holds it?); the ${opts.what} runs on without /metrics`,
    );
    return null;
  }
  const a = server.address() as AddressInfo;
  const host = a.family === 'IPv6' || a.address.includes(':') ? `[${a.address}]` : a.address;
  const url = `http://${host}:${a.port}/metrics`;
  opts.logger?.info({ metrics: url }, `${opts.what} metrics served`);
  return {
    url,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
