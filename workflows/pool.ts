// Bounded parallelism without timers or randomness, so it replays identically inside a Temporal workflow:
// lanes pick items in list order, and the order in which they finish is whatever the driver reports.

export interface PoolOutcome<T, R> {
  /** Results by item index; undefined for items never started or failed. */
  results: Array<R | undefined>;
  /** Items not started because `shouldStop` asked to pause (e.g. continue-as-new) or an item failed. */
  notStarted: T[];
  /** How many items were started. */
  started: number;
}

export interface PoolOptions {
  /** Checked before each new item; true stops taking items (those running finish). */
  shouldStop?: () => boolean;
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
  const lanes = Math.max(1, Math.min(Math.floor(limit) || 1, items.length || 1));
  const results: Array<R | undefined> = new Array(items.length).fill(undefined);
  let next = 0;
  let failed = false;
  let firstError: unknown;
  let stopped = false;

  async function lane(): Promise<void> {
    while (next < items.length && !failed) {
      if (opts.shouldStop?.()) {
        stopped = true;
        return;
      }
      const i = next++;
      try {
        results[i] = await fn(items[i] as T, i);
      } catch (e) {
        if (!failed) {
          failed = true;
          firstError = e;
        }
      }
    }
  }

  await Promise.all(Array.from({ length: lanes }, () => lane()));
  if (failed) throw firstError;
  return { results, notStarted: stopped || next < items.length ? items.slice(next) : [], started: next };
}
