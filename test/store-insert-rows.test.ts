// store/insert-rows.ts insertRows: rows JS computed go in by value, as one JSON parameter, each value as it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { insertRows } from '../store/insert-rows.ts';
import { cleanup, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
beforeAll(async () => { ({ store, dir } = await tempStore()); });
afterAll(() => cleanup(store, dir));

describe('insertRows', () => {
  it('keeps every value: texts of any characters, exact doubles, non-finite numbers, bigints, booleans and NULLs', async () => {
    await store.run('CREATE OR REPLACE TEMP TABLE ir (t VARCHAR, d DOUBLE, i BIGINT, b BOOLEAN, l VARCHAR[])');
    const texts = [`it's "quoted" \\ back`, 'ünï 🚀', 'nul\0in', 'lone \uD800 surrogate', ''];
    const doubles = [0.1 + 0.2, 43 / 3000, 5e-324, -1.7976931348623157e308, Infinity, -Infinity];
    const rows: unknown[][] = texts.map((t, k) => [t, doubles[k], k === 0 ? 9007199254740993n : k, k % 2 === 0, JSON.stringify([k === 3 ? 'plain' : t, 'x'])]);
    rows.push([null, null, null, null, null], [undefined, doubles[5], 0, false, '[]']);
    await insertRows(store, 'ir', rows, ['t', 'd', 'i', 'b', 'l'], { l: '::JSON::VARCHAR[]' });
    const got = await store.all<{ t: string | null; d: number | null; i: string | null; b: boolean | null; l: string[] | null }>(
      'SELECT t, d, i::VARCHAR AS i, b, l FROM ir ORDER BY rowid');
    expect(got.map((r) => r.t)).toEqual([...texts.slice(0, 3), 'lone \uFFFD surrogate', '', null, null]);
    expect(got.slice(0, 4).map((r) => r.d)).toEqual(doubles.slice(0, 4));
    expect(got.map((r) => r.i)).toEqual(['9007199254740993', '1', '2', '3', '4', null, '0']);
    expect(got.map((r) => r.b)).toEqual([true, false, true, false, true, null, false]);
    expect(got[0]!.l).toEqual([texts[0], 'x']);
    expect(await store.all('SELECT count(*)::INTEGER AS n FROM ir WHERE isinf(d)')).toEqual([{ n: 2 }]);
  });

  it('inserts by the table\'s own column order when no columns are named, and nothing for no rows', async () => {
    await store.run('CREATE OR REPLACE TEMP TABLE ir2 (a VARCHAR, n INTEGER)');
    await insertRows(store, 'ir2', []);
    await insertRows(store, 'ir2', [['x', 1], ['y', 2]]);
    expect(await store.all('SELECT a, n FROM ir2 ORDER BY n')).toEqual([{ a: 'x', n: 1 }, { a: 'y', n: 2 }]);
  });
});
