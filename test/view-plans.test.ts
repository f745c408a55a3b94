// The reads that grow with the data join by hash, never by nested loop: a join condition on one side alone (a LEFT
// JOIN's `ON NOT m.is_projection AND …`, `ON c.arn <> '' AND …`) makes DuckDB compare every row with every row, which
// at 10,000 MIDs turned an evaluation's read of mart_ratios from a second into minutes.
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
beforeAll(async () => { ({ store, dir } = await tempStore()); });
afterAll(() => { store.close(); fs.rmSync(dir, { recursive: true, force: true }); });

/** The operators of a query's plan that compare row with row. */
async function loopJoins(sql: string): Promise<string[]> {
  const rows = await store.all<Record<string, string>>(`EXPLAIN ${sql}`);
  const plan = rows.map((r) => Object.values(r).join('\n')).join('\n');
  return plan.match(/(BLOCKWISE_NL_JOIN|NESTED_LOOP_JOIN|PIECEWISE_MERGE_JOIN)/g) ?? [];
}

describe('the views join by hash where both sides grow', () => {
  const reads: Array<[string, string]> = [
    ['mart_ratios (the open month\'s chance joined to its row)', 'SELECT * FROM mart_ratios'],
    ['the chargeback report by month (accepted RDR cases left out)', 'SELECT * FROM int_chargebacks__monthly'],
    ['the two reports\' counts side by side', 'SELECT * FROM dq_chargeback_counts'],
  ];
  for (const [name, sql] of reads) {
    it(name, async () => {
      expect(await loopJoins(sql)).toEqual([]);
    });
  }

  it("the forecast's daily numerators: only the join to the programs (a constant list)", async () => {
    expect((await loopJoins("SELECT * FROM ratio_daily_between(DATE '2026-01-01', DATE '2026-12-31')")).length).toBeLessThanOrEqual(1);
  });

  it("the judge's rows: only the two joins to constant lists (the programs, observed and projected)", async () => {
    const joins = await loopJoins("SELECT * FROM ratio_rows_covered_between(DATE '2026-01-01', DATE '2026-12-01', cached := TRUE)");
    expect(joins.length).toBeLessThanOrEqual(2);
  });
});
