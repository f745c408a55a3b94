// Activities throw CbpErrors (code, retryable); Temporal retries by ApplicationFailure type and nonRetryable.
// This wrapper is the bridge: the failure's type is the error's stable code, nonRetryable its negated
// retryable flag, and a service's Retry-After becomes the next retry's delay.
import { Context } from '@temporalio/activity';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';

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

type AnyFn = (...args: never[]) => Promise<unknown>;

/** Wrap every function of an activities object so its CbpErrors reach Temporal as typed failures. */
export function temporalActivities<T extends object>(acts: T): T {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(acts)) {
    if (typeof fn !== 'function') continue;
    const f = fn as AnyFn;
    const wrapped = async (...args: never[]) => {
      try {
        return await f.apply(acts, args);
      } catch (e) {
        throw toActivityFailure(e);
      }
    };
    Object.defineProperty(wrapped, 'name', { value: name });
    out[name] = wrapped;
  }
  return out as T;
}

export interface HeartbeatOptions {
  /** Default 10 s; Temporal throttles heartbeats further. Keep well under the heartbeat timeout (1 min). */
  intervalMs?: number;
  /** Progress recorded with each heartbeat (e.g. bytes so far). */
  details?: () => unknown;
}

/**
 * Run a long activity (a report download) while heartbeating, handing it the cancellation signal. Outside
 * an activity context (the local runner) it runs with a signal that never aborts.
 */
export async function withHeartbeat<R>(fn: (signal: AbortSignal) => Promise<R>, opts: HeartbeatOptions = {}): Promise<R> {
  let ctx: Context;
  try {
    ctx = Context.current();
  } catch {
    return fn(new AbortController().signal);
  }
  const beat = () => ctx.heartbeat(opts.details?.());
  beat();
  const timer = setInterval(beat, opts.intervalMs ?? 10_000);
  try {
    return await fn(ctx.cancellationSignal);
  } finally {
    clearInterval(timer);
  }
}
