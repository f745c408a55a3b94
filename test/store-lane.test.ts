// One connection, one lane (store/db.ts Store.exclusive): transactions and report loads of different callers
// never interleave on a store's connection; what runs inside one joins it.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { chargeback, tmpDir, writeJson } from './store-fixtures.ts';

const opened: Store[] = [];
afterEach(() => {
  for (const s of opened.splice(0)) s.close();
});

async function store(): Promise<Store> {
  const s = await openTestStore({ dbPath: path.join(tmpDir(), 'cbp.duckdb') });
  opened.push(s);
  await s.run('CREATE TABLE notes (n INTEGER)');
  return s;
}

const notes = async (s: Store) => (await s.all<{ n: number }>('SELECT n FROM notes ORDER BY n')).map((r) => Number(r.n));

/** A promise and the function that settles it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { wait, open };
}

describe("a store connection's lane", () => {
  it("makes another caller's transaction wait for an open one, so that one's rollback never takes the other's write with it", async () => {
    const s = await store();
    const started = gate();
    const release = gate();
    const first = s.transaction(async (tx) => {
      await tx.run('INSERT INTO notes VALUES (1)');
      started.open();
      await release.wait;
      throw new Error('the first write fails');
    });
    await started.wait;
    // Another caller, while the first transaction is open.
    const second = s.transaction(async (tx) => tx.run('INSERT INTO notes VALUES (2)'));
    release.open();
    await expect(first).rejects.toThrow('the first write fails');
    await second;
    expect(await notes(s)).toEqual([2]);
  });

  it('lets a transaction begun inside another, or inside an exclusive section, join it', async () => {
    const s = await store();
    await s.transaction(async (tx) => {
      await tx.run('INSERT INTO notes VALUES (1)');
      await s.transaction(async (inner) => inner.run('INSERT INTO notes VALUES (2)'));
    });
    await s.exclusive(async (x) => {
      await x.transaction(async (tx) => tx.run('INSERT INTO notes VALUES (3)'));
      await Promise.all([x.transaction(async (tx) => tx.run('INSERT INTO notes VALUES (4)')), x.exclusive(async (y) => y.run('INSERT INTO notes VALUES (5)'))]);
    });
    expect(await notes(s)).toEqual([1, 2, 3, 4, 5]);
  });

  it('runs the callers of one connection in call order, each after the one before it settled, failed or not', async () => {
    const s = await store();
    const order: string[] = [];
    const calls = [
      s.exclusive(async (x) => {
        order.push('a starts');
        await x.run('INSERT INTO notes VALUES (1)');
        order.push('a ends');
        throw new Error('a fails');
      }),
      s.transaction(async (tx) => {
        order.push('b starts');
        await tx.run('INSERT INTO notes VALUES (2)');
        order.push('b ends');
      }),
      s.exclusive(async () => {
        order.push('c runs');
      }),
    ];
    const settled = await Promise.allSettled(calls);
    expect(settled.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(order).toEqual(['a starts', 'a ends', 'b starts', 'b ends', 'c runs']);
  });

  it("holds it for a whole report load: another caller's transaction runs after the load committed, never inside it", async () => {
    const s = await store();
    const dir = tmpDir();
    const file = writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2' })]);
    const order: string[] = [];
    const load = loadReport(s, file, { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z', beforeCommit: () => void order.push('load commits') });
    const other = s.transaction(async (tx) => {
      order.push('other writes');
      await tx.run('INSERT INTO notes VALUES (1)');
    });
    await Promise.all([load, other]);
    expect(order).toEqual(['load commits', 'other writes']);
    // A second load on the same connection (a temp staging table each) waits for the first as well.
    const again = await Promise.all([
      loadReport(s, writeJson(dir, 'cb2.json', [chargeback({ case_number: 'CB-3' })]), { kind: 'chargebacks', seenAt: '2024-03-06T00:00:00Z' }),
      loadReport(s, writeJson(dir, 'cb3.json', [chargeback({ case_number: 'CB-4' })]), { kind: 'chargebacks', seenAt: '2024-03-07T00:00:00Z' }),
    ]);
    expect(again.map((r) => r.rowsLoaded)).toEqual([1, 1]);
    expect((await s.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM chargebacks'))[0].n).toBe(4);
  });
});
