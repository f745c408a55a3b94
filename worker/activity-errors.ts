// Activities throw CbpErrors (code, retryable); Temporal retries by ApplicationFailure type and nonRetryable.
// This wrapper is the bridge: the failure's type is the error's stable code, nonRetryable its negated
// retryable flag, and a service's Retry-After becomes the next retry's delay. It also heartbeats every
// activity while it runs, so a worker killed inside any of them (a DuckDB load, a snapshot) is noticed within
// the activity's heartbeat timeout (workflows/activity-options.ts), not its start-to-close timeout.
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { withHeartbeat } from '../activities/heartbeat.ts';

interface CodedError {
  code: string;
  message: string;
  retryable?: boolean;
  retryAfterMs?: number;
}

function isCoded(e: unknown): e is CodedError {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string' && typeof (e as { message?: unknown }).message === 'string';
}

/** The Temporal failure for a thrown value; anything that is not a coded error passes through. */
export function toActivityFailure(e: unknown): unknown {
  if (e instanceof TemporalFailure || !isCoded(e)) return e;
  return ApplicationFailure.create({
    type: e.code,
    message: e.message,
    nonRetryable: e.retryable !== true,
    cause: e instanceof Error ? e : undefined,
    ...(typeof e.retryAfterMs === 'number' && e.retryAfterMs > 0 ? { nextRetryDelay: e.retryAfterMs } : {}),
  });
}

/** Told of every activity run as it ends: its name, its seconds, and its error when it failed (worker/metrics.ts). */
export type ActivityObserver = (activity: string, seconds: number, error?: unknown) => void;

type AnyFn = (...args: never[]) => Promise<unknown>;

/**
 * Wrap every function of an activities object so its CbpErrors reach Temporal as typed failures, and so it
 * heartbeats while it runs (every heartbeatMs, default 10 s; a no-op outside an activity context).
 */
export function temporalActivities<T extends object>(acts: T, opts: { heartbeatMs?: number; observe?: ActivityObserver } = {}): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts)) {
    if (typeof fn !== 'function') continue;
    const f = fn as AnyFn;
    const wrapped = async (...args: never[]) => {
      const started = performance.now();
      try {
        const out = await withHeartbeat(() => f.apply(acts, args), { intervalMs: opts.heartbeatMs });
        opts.observe?.(name, (performance.now() - started) / 1000);
        return out;
      } catch (e) {
        opts.observe?.(name, (performance.now() - started) / 1000, e);
        throw toActivityFailure(e);
      }
    };
    Object.defineProperty(wrapped, 'name', { value: name });
    out[name] = wrapped;
  }
  return out as T;
}
