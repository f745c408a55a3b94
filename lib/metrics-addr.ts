// A /metrics address setting (CBP_METRICS_ADDR, CBP_WORKER_METRICS_ADDR): host:port, or off. Kept apart from the
// server (lib/metrics-http.ts) so the configuration can check it without loading node:http.

/** The value that turns the endpoint off. */
export const METRICS_OFF = 'off';
const ADDR_RE = /^(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/;

/** host and port of a metrics address (`127.0.0.1:9787`, `[::1]:9787`), or null for `off`. Throws on anything else. */
export function parseMetricsAddr(addr: string): { host: string; port: number } | null {
  if (addr.trim().toLowerCase() === METRICS_OFF) return null;
  const m = ADDR_RE.exec(addr.trim());
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535) throw new Error(`must be host:port (e.g. 127.0.0.1:9787, [::1]:9787; port 0: any free one) or ${METRICS_OFF}`);
  return { host: m[1].replace(/^\[(.*)\]$/, '$1'), port };
}

/** Why a metrics address is refused, or null: zod refines config settings with it. */
export function metricsAddrProblem(addr: string): string | null {
  try {
    parseMetricsAddr(addr);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}
