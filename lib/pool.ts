// Bounded parallelism, the one helper for every layer: the workflow bodies (report windows), the order
// activity (pushes) and enrichment (lookups). No timers, no randomness, no I/O, so it replays identically
// inside a Temporal workflow: lanes pick items in list order, and the order in which they finish is whatever
// the driver reports.

export type Settled<R> = { ok: true; value: R } | { ok: false; error: unknown };

export interface PoolOptions {
  /** Checked before each new item; true stops taking items (those running finish). */
  shouldStop?: () => boolean;
}

export interface SettleOptions extends PoolOptions {
  /** Whether this failure stops new items from starting (those running finish). Default: every failure does. */
  stopsOnFailure?: (error: unknown) => boolean;
}

export interface Settlement<T, R> {
  /** Outcomes by item index; undefined for items never started. */
  outcomes: Array<Settled<R> | undefined>;
  /** Items not started because `shouldStop` asked to pause or a failure stopped the pool. */
  notStarted: T[];
  /** How many items were started. */
  started: number;
  /** The first failure that stopped the pool, in the order they happened. */
  stoppedBy?: { error: unknown };
}

/** Run `fn` over `items` with at most `limit` at once, keeping every outcome. Never throws what `fn` throws. */
export async function settleBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  opts: SettleOptions = {},
): Promise<Settlement<T, R>> {
  const lanes = Math.max(1, Math.min(Math.floor(limit) || 1, items.length || 1));
  const outcomes: Array<Settled<R> | undefined> = new Array(items.length).fill(undefined);
  let next = 0;
  let stoppedBy: { error: unknown } | undefined;

  async function lane(): Promise<void> {
    while (next < items.length && !stoppedBy) {
      if (opts.shouldStop?.()) return;
      const i = next++;
      try {
        outcomes[i] = { ok: true, value: await fn(items[i] as T, i) };
      } catch (error) {
        outcomes[i] = { ok: false, error };
        if (!stoppedBy && (opts.stopsOnFailure?.(error) ?? true)) stoppedBy = { error };
      }
    }
  }

  await Promise.all(Array.from({ length: lanes }, () => lane()));
  return { outcomes, notStarted: items.slice(next), started: next, ...(stoppedBy ? { stoppedBy } : {}) };
}

export interface PoolOutcome<T, R> {
  /** Results by item index; undefined for items never started. */
  results: Array<R | undefined>;
  /** Items not started because `shouldStop` asked to pause (e.g. continue-as-new). */
  notStarted: T[];
  /** How many items were started. */
  started: number;
}

/**
 * Run `fn` over `items` with at most `limit` at once. On the first failure no new item starts; the
 * running ones are awaited (so whatever they record is recorded) and then the first error is thrown.
 */
export async function runBounded<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T, index: number) => Promise<R>,
  opts: PoolOptions = {},
): Promise<PoolOutcome<T, R>> {
  const s = await settleBounded(items, limit, fn, opts);
  if (s.stoppedBy) throw s.stoppedBy.error;
  return { results: s.outcomes.map((o) => (o?.ok ? o.value : undefined)), notStarted: s.notStarted, started: s.started };
}
