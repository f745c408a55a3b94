// The sandbox's simulated clock and its timeline of due work. Nothing in the sandbox reads the wall clock
// for service behaviour (only the JWT lifetime is real time): world events, deliveries, re-deliveries and
// vetting retries are tasks at sandbox times, run in time order as the clock passes them.

const DURATION_RE = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i;

/** Parses an ISO 8601 duration of weeks, days, hours, minutes, seconds (PnW, PnD, PTnH, PTnM, PTnS, combos) to ms. */
export function parseDuration(text: string): number | undefined {
  const s = text.trim();
  const m = DURATION_RE.exec(s);
  if (!m || s === 'P' || s.endsWith('T')) return undefined;
  const [, w, d, h, mi, se] = m;
  if (w === undefined && d === undefined && h === undefined && mi === undefined && se === undefined) return undefined;
  return (
    (Number(w ?? 0) * 7 * 86_400 + Number(d ?? 0) * 86_400 + Number(h ?? 0) * 3600 + Number(mi ?? 0) * 60 + Number(se ?? 0)) * 1000
  );
}

/** ISO 8601 UTC without fraction: YYYY-MM-DDTHH:MM:SSZ. */
export function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export interface Task {
  at: number;
  /** Insertion order breaks ties, so tasks due at one instant run in the order they were scheduled. */
  seq: number;
  label: string;
  run: () => Promise<void> | void;
}

/** A min-heap of tasks ordered by (at, seq). */
class TaskHeap {
  private items: Task[] = [];
  get size(): number {
    return this.items.length;
  }
  private less(a: Task, b: Task): boolean {
    return a.at < b.at || (a.at === b.at && a.seq < b.seq);
  }
  push(t: Task): void {
    const a = this.items;
    a.push(t);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i], a[p])) break;
      [a[i], a[p]] = [a[p], a[i]];
      i = p;
    }
  }
  peek(): Task | undefined {
    return this.items[0];
  }
  pop(): Task | undefined {
    const a = this.items;
    if (a.length === 0) return undefined;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l], a[m])) m = l;
        if (r < a.length && this.less(a[r], a[m])) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m], a[i]];
        i = m;
      }
    }
    return top;
  }
}

export interface SandboxClock {
  /** Sandbox time now, ms since the epoch. */
  now(): number;
  nowIso(): string;
  readonly startedAt: number;
  /** Schedules work at a sandbox time (a time in the past runs at the next drain). */
  schedule(at: number, label: string, run: () => Promise<void> | void): void;
  /** Runs every task due at or before `now` (including ones those tasks schedule), in order. */
  drain(): Promise<number>;
  /**
   * Moves the clock forward to `target`, running every task due in between in time order, the clock set to
   * each task's time while it runs. Returns the number of tasks run. Serialised: one move at a time.
   */
  advanceTo(target: number): Promise<number>;
  /** Waits until every move and drain under way has finished. */
  settle(): Promise<void>;
  pending(): number;
  /** Drops every task and sets the clock back to its start (after work under way has finished). */
  reset(): Promise<void>;
}

/** Bound on tasks run by one move, so a task that keeps re-scheduling itself at the same instant cannot spin forever. */
const MAX_TASKS_PER_MOVE = 5_000_000;

export function createClock(startMs: number): SandboxClock {
  let now = startMs;
  let seq = 0;
  let heap = new TaskHeap();
  let chain: Promise<unknown> = Promise.resolve();

  function serial<T>(fn: () => Promise<T>): Promise<T> {
    const p = chain.then(fn, fn);
    chain = p.catch(() => undefined);
    return p;
  }

  async function runUntil(target: number): Promise<number> {
    let ran = 0;
    for (;;) {
      const t = heap.peek();
      if (!t || t.at > target) break;
      heap.pop();
      if (t.at > now) now = t.at;
      await t.run();
      if (++ran >= MAX_TASKS_PER_MOVE) throw new Error(`more than ${MAX_TASKS_PER_MOVE} tasks due in one clock move`);
    }
    if (target > now) now = target;
    return ran;
  }

  return {
    now: () => now,
    nowIso: () => isoSeconds(now),
    startedAt: startMs,
    schedule(at, label, run) {
      heap.push({ at, seq: seq++, label, run });
    },
    drain() {
      return serial(() => runUntil(now));
    },
    advanceTo(target) {
      return serial(() => runUntil(Math.max(target, now)));
    },
    settle() {
      return serial(async () => undefined);
    },
    pending: () => heap.size,
    reset() {
      return serial(async () => {
        heap = new TaskHeap();
        now = startMs;
      });
    },
  };
}
