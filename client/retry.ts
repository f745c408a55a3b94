// Retry policy: exponential backoff with full jitter (AWS architecture blog's "full jitter": a uniform
// delay between 0 and min(cap, base * 2^attempt)), replaced by the service's Retry-After when it sends one.
// sleep, random and now are injectable so tests are fast and deterministic.
import { setTimeout as delay } from 'node:timers/promises';

export interface RetryPolicy {
  /** Retries after the first attempt (CBP_HTTP_RETRIES). Default 5. */
  retries: number;
  /** Ceiling of the first backoff. Default 500 ms. */
  baseDelayMs: number;
  /** Largest backoff ceiling. Default 20 s. */
  maxDelayMs: number;
  /** Largest Retry-After honoured; a longer one is cut to this. Default 60 s. */
  maxRetryAfterMs: number;
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform in [0, 1). */
  random: () => number;
  /** Epoch ms, for Retry-After given as an HTTP date. */
  now: () => number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  retries: 5,
  baseDelayMs: 500,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 60_000,
  sleep: (ms, signal) => delay(ms, undefined, signal ? { signal } : undefined),
  random: Math.random,
  now: Date.now,
};

export function retryPolicy(p: Partial<RetryPolicy> = {}): RetryPolicy {
  const out = { ...DEFAULT_RETRY };
  for (const [k, v] of Object.entries(p)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** Retry-After as delta-seconds or an HTTP date, in ms from now (never negative); undefined if absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined) return undefined;
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Math.round(Number(s) * 1000);
  const t = Date.parse(s);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}

/** The wait before retry number attempt+1 (attempt counts from 0). */
export function backoffDelay(policy: RetryPolicy, attempt: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.min(Math.max(0, retryAfterMs), policy.maxRetryAfterMs);
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return Math.floor(policy.random() * ceiling);
}
