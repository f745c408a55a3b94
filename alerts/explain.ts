// Explained ratio rows read from the store in batches (issue #13): forEachRatioBatch's rows with
// rules/explain.ts's explanation under the rules given. A MID monitored in a group (thresholds file `groups`)
// is judged on the group's sums, so its batch also reads the other members' rows of the group's programs.
import type { ExplainedRatioRow, RatioRow } from '../contract/ratios.ts';
import { forEachRatioBatch, ratioRowsOf, type QueryStore, type RatioQuery } from '../store/ratios.ts';
import { explainRows, explainWith } from '../rules/explain.ts';
import { evaluateRows } from '../rules/evaluate.ts';
import { evaluateProjections } from '../rules/projection.ts';
import type { RuleSet } from '../rules/thresholds.ts';

/**
 * Calls fn with each batch of ratio rows (forEachRatioBatch: sorted by mid, network, program, metric, month,
 * is_projection), each explained under rules. q.month cuts the rows shown, never the months streaks need: rows
 * are read up to q.month (or q.asOf) and cut after.
 */
export async function forEachExplainedBatch(
  store: QueryStore, q: RatioQuery, rules: RuleSet, fn: (rows: ExplainedRatioRow[]) => void | Promise<void>, batchMids = 1000,
  /** Picks the rows of a batch to explain and pass on (every row is still judged: streaks need them); cbp ratios shows 2 months of 36. */
  pick?: (rows: RatioRow[]) => RatioRow[],
): Promise<void> {
  const groups = Object.entries(rules.groups ?? {});
  const read: RatioQuery = { mid: q.mid, asOf: q.month !== undefined ? `${q.month}-01T00:00:00Z` : q.asOf, actualOnly: q.actualOnly };
  await forEachRatioBatch(store, read, async (rows) => {
    const extra: RatioRow[] = [];
    if (groups.length) {
      const here = new Set(rows.map((r) => r.mid));
      for (const [, g] of groups) {
        if (!g.mids.some((m) => here.has(m))) continue;
        const others = g.mids.filter((m) => !here.has(m));
        for (const r of await ratioRowsOf(store, { mids: others, programs: g.programs, asOf: read.asOf })) {
          if (!read.actualOnly || !r.is_projection) extra.push(r);
        }
      }
    }
    const all = extra.length ? [...rows, ...extra] : rows;
    const inMonth = q.month === undefined ? rows : rows.filter((r) => r.month === q.month);
    const shown = pick ? pick(inMonth) : inMonth;
    await fn(shown.length === rows.length && !extra.length ? explainRows(rows, rules) : explainWith(shown, evaluateRows(all, rules), evaluateProjections(all, rules), rules));
  }, batchMids);
}
