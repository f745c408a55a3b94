// Heartbeating for long activities (a report download, an order batch). It lives with the activities, which
// call it; the worker only registers them (worker/activity-errors.ts maps their errors to Temporal failures).
import { Context } from '@temporalio/activity';

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
