// Emptying a large table a slice a commit (store/table-slices.ts): every row goes, in as many commits as the budget
// asks, each the first rows in storage order (whole row groups, which a checkpoint drops unread), so that a full
// re-judge of a large store never deletes tens of millions of rows at once.
import { describe, expect, it } from 'vitest';
import { deleteInSlices, slicesPerCheckpoint } from '../store/table-slices.ts';
import { cleanup, tempStore } from './ratios-fixtures.ts';

describe('deleteInSlices', () => {
  it('empties a table in commits of the rows asked, each the first rows in storage order, until one finds none', async () => {
    const { store, dir } = await tempStore();
    try {
      await store.run("CREATE TABLE t AS SELECT 'm' || lpad((i % 100)::VARCHAR, 3, '0') AS mid, i FROM range(300) r(i)");
      const deletes: number[] = [];
      const lows: Array<number | null> = []; // the lowest i left after each commit
      const transaction = store.transaction.bind(store);
      store.transaction = (async (fn: (s: typeof store) => Promise<unknown>) => transaction(async (s) => {
        const before = Number((await s.all<{ n: number }>('SELECT count(*)::DOUBLE AS n FROM t'))[0]!.n);
        const r = await fn(s);
        deletes.push(before - Number((await s.all<{ n: number }>('SELECT count(*)::DOUBLE AS n FROM t'))[0]!.n));
        lows.push((await s.all<{ i: number | null }>('SELECT min(i)::DOUBLE AS i FROM t'))[0]!.i);
        return r;
      })) as typeof store.transaction;
      await deleteInSlices(store, 't', 60);
      expect(await store.all('SELECT count(*)::INTEGER AS n FROM t')).toEqual([{ n: 0 }]);
      expect(deletes).toEqual([60, 60, 60, 60, 60, 0]); // five slices of 60 rows, then the one that finds none
      // In storage order: each slice took the lowest rows left (i was written in order), not a range of MIDs.
      expect(lows).toEqual([60, 120, 180, 240, null, null]);
      await store.run("INSERT INTO t SELECT 'x', i FROM range(10) r(i)");
      deletes.length = 0;
      await deleteInSlices(store, 't', 60);
      expect(deletes).toEqual([10, 0]);
    } finally {
      cleanup(store, dir);
    }
  });

  it('checkpoints before what it deleted holds a quarter of the memory limit: a large table empties at a small limit', async () => {
    // (each deleted row holds a transaction id until a checkpoint: all of these would hold more than this store's limit)
    const { store, dir } = await tempStore({ memoryLimit: '24MB', threads: 2 });
    try {
      // (no checkpoint by the log's size, as while the ratio refresh empties its tables)
      await store.run("CREATE TABLE t AS SELECT i, i % 7 AS k FROM range(8000000) r(i); CHECKPOINT; SET checkpoint_threshold = '1TB'");
      const checkpoints: string[] = [];
      const run = store.run.bind(store);
      store.run = ((sql: string, ...rest: unknown[]) => { if (sql === 'CHECKPOINT') checkpoints.push(sql); return (run as (...a: unknown[]) => Promise<unknown>)(sql, ...rest); }) as typeof store.run;
      await deleteInSlices(store, 't', 250_000);
      expect(await store.all('SELECT count(*)::INTEGER AS n FROM t')).toEqual([{ n: 0 }]);
      expect(checkpoints.length).toBe(11); // every third of 32 slices, and at the end
    } finally {
      cleanup(store, dir);
    }
  });

  it('empties only the rows a condition keeps, a slice a commit, however they lie among the others', async () => {
    const { store, dir } = await tempStore();
    try {
      await store.run("CREATE TABLE t AS SELECT i, CASE WHEN i % 3 = 0 THEN '2024-01' ELSE '2025-01' END AS month FROM range(300) r(i)");
      let commits = 0;
      const transaction = store.transaction.bind(store);
      store.transaction = ((fn: (s: typeof store) => Promise<unknown>) => { commits++; return transaction(fn); }) as typeof store.transaction;
      await deleteInSlices(store, 't', 60, "month >= '2025-01'");
      expect(await store.all('SELECT month, count(*)::INTEGER AS n FROM t GROUP BY month')).toEqual([{ month: '2024-01', n: 100 }]);
      expect(commits).toBeGreaterThan(3); // 200 rows in slices of at most 60, then the one that finds none
    } finally {
      cleanup(store, dir);
    }
  });

  it('counts the slices between checkpoints from the memory limit', () => {
    expect(slicesPerCheckpoint('192MB', 1_280_000)).toBe(4); // the default limit's slices (store/ratio-refresh.ts judgedRows)
    expect(slicesPerCheckpoint('24MB', 250_000)).toBe(3);
    expect(slicesPerCheckpoint('24MB', 10_000_000)).toBe(1);
    expect(slicesPerCheckpoint('80%', 1_000)).toBe(1); // no size to count from: every slice
  });
});
