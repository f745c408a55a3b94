// Reaching Temporal from the CLI: a connection with a short timeout, and one clear error naming
// TEMPORAL_ADDRESS when no server answers (instead of the SDK's long retry and its transport message).
import { Client, Connection } from '@temporalio/client';
import { CbpError } from '../lib/errors.ts';
import type { TemporalTarget } from '../worker/worker.ts';
import { CONNECT_TIMEOUT_MS } from './options.ts';

export class TemporalUnavailableError extends CbpError {
  /** No frontend at `target` within `timeoutMs`; or, given a message, a server that could not be had (a dev server that did not start). */
  constructor(target: Pick<TemporalTarget, 'address' | 'namespace'> | string, timeoutMs = CONNECT_TIMEOUT_MS, cause?: unknown) {
    const why = (cause as Error)?.message?.split('\n')[0];
    super(
      'CBP_ERR_TEMPORAL_UNAVAILABLE',
      typeof target === 'string'
        ? target
        : `no Temporal server answered at ${target.address} (TEMPORAL_ADDRESS) within ${timeoutMs} ms` +
            `${why ? ` (${why})` : ''}: start one (e.g. \`temporal server start-dev\`), or set TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE ` +
            `(now ${target.namespace}) and, for Temporal Cloud, TEMPORAL_API_KEY or TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY`,
      { cause },
    );
  }
}

/** A Temporal client over a checked connection. Close it with `client.connection.close()`. */
export async function connectTemporal(target: Omit<TemporalTarget, 'taskQueue'>, timeoutMs = CONNECT_TIMEOUT_MS): Promise<Client> {
  let connection: Connection;
  try {
    connection = await Connection.connect({
      address: target.address,
      connectTimeout: timeoutMs,
      ...(target.apiKey ? { apiKey: target.apiKey } : {}),
      ...(target.tls ? { tls: { clientCertPair: { crt: target.tls.cert, key: target.tls.key } } } : target.apiKey ? { tls: true } : {}),
    });
  } catch (e) {
    throw new TemporalUnavailableError(target, timeoutMs, e);
  }
  return new Client({ connection, namespace: target.namespace });
}

/** Fails fast, with TemporalUnavailableError, when no frontend answers (the worker's native connection has no timeout of its own). */
export async function checkTemporal(target: Omit<TemporalTarget, 'taskQueue'>, timeoutMs = CONNECT_TIMEOUT_MS): Promise<void> {
  const client = await connectTemporal(target, timeoutMs);
  await client.connection.close().catch(() => undefined);
}
