// How a partial refresh of the ratio table commits (store/ratio-refresh.ts): the months it judges again are deleted and
// written in one transaction when a transaction can hold their deletes, else emptied a slice a commit first, the
// table marked not whole until the last. Either way the rows are those of a whole judgement.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { statementWatch, type Store } from '../store/db.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { parseThresholds } from '../rules/thresholds.ts';
import { deletableRows } from '../store/table-slices.ts';
import { cleanup, insertStats, tempStore, type StatFixture } from './ratios-fixtures.ts';

const rules = parseThresholds(JSON.stringify({ watch: { fraction: 0.8, notify: true } }), 't.json');
const months = ['2025-01', '2025-02', '2025-03', '2025-04', '2025-05', '2025-06'];
const stats = (month: string, i: number): StatFixture[] => ['m1', 'm2', 'm3'].flatMap((mid, k) => [
  { mid, network: 'mastercard' as const, month, cb: 40 + 37 * ((i + k) % 4), tx: 10_000 },
  { mid, network: 'discover' as const, month, cb: 20 + 50 * ((i * k) % 3), tx: 9_000 },
]);

// A transaction's statements; after it, ratio_mart_state.complete and the rows from April on (none: statements outside one).
type Tx = { sql: string[]; complete?: boolean; left?: number };
let stores: Array<{ store: Store; dir: string }> = [];

/**
 * A store of the six months judged whole, then m2's Mastercard figures of April revised: every statement of the refresh
 * that follows, by transaction (those outside any in one of their own).
 */
async function revisedApril(store: Store): Promise<Tx[]> {
  for (const [i, m] of months.entries()) await insertStats(store, stats(m, i));
  await refreshRatios(store, rules);
  await store.run("UPDATE mid_stats SET chargeback_count = 400 WHERE mid = 'm2' AND network = 'mastercard' AND window_start = DATE '2025-04-01'");
  const txs: Tx[] = [];
  let tx: Tx | undefined;
  const transaction = store.transaction.bind(store);
  store.transaction = (async (fn: (s: Store) => Promise<unknown>, opts?: Parameters<Store['transaction']>[1]) => {
    const r = await transaction(async (s) => { txs.push((tx = { sql: [] })); return fn(s); }, opts);
    const t = tx!;
    tx = undefined;
    t.complete = (await store.all<{ complete: boolean }>('SELECT complete FROM ratio_mart_state'))[0]?.complete;
    t.left = (await store.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM ratio_mart WHERE month >= '2025-04'"))[0]!.n;
    return r;
  }) as typeof store.transaction;
  statementWatch.begin = (sql) => { (tx ?? (txs.push({ sql: [] }), txs.at(-1)!)).sql.push(sql); return () => undefined; };
  try {
    expect((await refreshRatios(store, rules)).fromMonth).toBe('2025-04');
  } finally {
    store.transaction = transaction;
    statementWatch.begin = undefined;
  }
  return txs;
}

const rowsOf = (s: Store) => s.all(`SELECT * EXCLUDE (judged_at) FROM ratio_mart ORDER BY ALL`);
const touches = (tx: Tx, re: RegExp) => tx.sql.some((q) => re.test(q));
const MART_DELETE = /DELETE FROM ratio_mart\b/, MART_INSERT = /INSERT INTO ratio_mart\b/;

beforeAll(async () => { stores = [await tempStore(), await tempStore(), await tempStore()]; });
afterAll(() => { for (const s of stores) cleanup(s.store, s.dir); });

describe('a partial refresh of the ratio table', () => {
  it('deletes and writes the months it judges again in one transaction when a transaction can hold their deletes', async () => {
    const { store } = stores[0]!;
    const txs = await revisedApril(store);
    const writes = txs.filter((t) => touches(t, MART_DELETE) || touches(t, MART_INSERT));
    expect(writes).toHaveLength(1);
    expect(touches(writes[0]!, MART_DELETE) && touches(writes[0]!, MART_INSERT)).toBe(true);
    expect(writes[0]!.sql.filter((q) => MART_DELETE.test(q))).toEqual(["DELETE FROM ratio_mart WHERE month >= '2025-04'"]);
    expect(txs.some((t) => t.sql.some((q) => /rowid </.test(q)))).toBe(false);
    expect(writes[0]!.complete).toBe(true); // whole when it commits: no reader sees the months missing
  });

  it('empties those months a slice a commit first, the table not whole until the rows are written, when it cannot', async () => {
    const { store } = stores[1]!;
    // A limit whose deletes a transaction holds (deletableRows) is less than the months' rows; the store's own limit is unchanged.
    Object.defineProperty(store, 'memoryLimit', { value: '1KB' });
    const txs = await revisedApril(store);
    const [{ n }] = await store.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM ratio_mart WHERE month >= '2025-04'");
    expect(deletableRows(store.memoryLimit)).toBeLessThan(n);
    // Slices until one finds nothing (here the first takes them all: a slice is at least a judge tile's rows).
    const slices = txs.filter((t) => t.sql.some((q) => /DELETE FROM ratio_mart WHERE month >= '2025-04' AND rowid </.test(q)));
    expect(slices.map((t) => t.left)).toEqual([0, 0]);
    const writes = txs.filter((t) => touches(t, MART_INSERT));
    expect(writes.length).toBeGreaterThan(0);
    expect(txs.indexOf(writes[0]!)).toBeGreaterThan(txs.indexOf(slices.at(-1)!)); // emptied first, then written
    for (const t of [...slices, ...writes]) expect(t.complete).toBe(false); // reads say the table is behind meanwhile
    expect(writes.at(-1)!.left).toBe(n);
    expect(txs.filter((t) => t.complete !== undefined).at(-1)!.complete).toBe(true);
    // The months before April stay as they were (only later rows went).
    expect(txs.flatMap((t) => t.sql).filter((q) => MART_DELETE.test(q)).every((q) => q.includes("month >= '2025-04'"))).toBe(true);
  });

  it('leaves the same rows either way, those of a whole judgement', async () => {
    const { store } = stores[2]!;
    for (const [i, m] of months.entries()) await insertStats(store, stats(m, i));
    await store.run("UPDATE mid_stats SET chargeback_count = 400 WHERE mid = 'm2' AND network = 'mastercard' AND window_start = DATE '2025-04-01'");
    await refreshRatios(store, rules);
    const whole = await rowsOf(store);
    expect(whole.length).toBeGreaterThan(0);
    expect(await rowsOf(stores[0]!.store)).toEqual(whole);
    expect(await rowsOf(stores[1]!.store)).toEqual(whole);
  });
});
