// Emptying a large table a slice of MIDs a commit (store/table-slices.ts): every row goes, in as many commits as the
// budget asks, so that a full re-judge of a large store never deletes tens of millions of rows at once.
import { describe, expect, it } from 'vitest';
import { deleteInSlices } from '../store/table-slices.ts';
import { cleanup, tempStore } from './ratios-fixtures.ts';

describe('deleteInSlices', () => {
  it('empties a table in commits of about the rows asked, each a range of MIDs, and at once when it fits', async () => {
    const { store, dir } = await tempStore();
    try {
      await store.run("CREATE TABLE t AS SELECT 'm' || lpad((i % 100)::VARCHAR, 3, '0') AS mid, i FROM range(300) r(i)");
      const deletes: number[] = [];
      const transaction = store.transaction.bind(store);
      store.transaction = (async (fn: (s: typeof store) => Promise<unknown>) => transaction(async (s) => {
        const before = Number((await s.all<{ n: number }>('SELECT count(*)::DOUBLE AS n FROM t'))[0]!.n);
        const r = await fn(s);
        deletes.push(before - Number((await s.all<{ n: number }>('SELECT count(*)::DOUBLE AS n FROM t'))[0]!.n));
        return r;
      })) as typeof store.transaction;
      await deleteInSlices(store, 't', 60);
      expect(await store.all('SELECT count(*)::INTEGER AS n FROM t')).toEqual([{ n: 0 }]);
      expect(deletes.length).toBe(6); // five slices of 20 MIDs (60 rows), then the empty remainder
      expect(deletes.slice(0, 5)).toEqual([60, 60, 60, 60, 60]);
      await store.run("INSERT INTO t SELECT 'x', i FROM range(10) r(i)");
      deletes.length = 0;
      await deleteInSlices(store, 't', 60);
      expect(deletes).toEqual([10]);
    } finally {
      cleanup(store, dir);
    }
  });
});
