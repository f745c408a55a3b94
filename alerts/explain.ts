// Explained ratio rows read from the store in batches (issue #13): ratio rows with rules/explain.ts's explanation
// under the rules given. A MID monitored in a group (thresholds file `groups`) is judged on the group's sums, so
// its batch also reads the other members' rows of the group's programs.
import type { ExplainedRatioRow, RatioRow } from '../contract/ratios.ts';
import type { Store } from '../store/db.ts';
import { forEachRatioBatch, midRanges, monthOf, ratioMids, ratioRowsOf, type RatioQuery } from '../store/ratios.ts';
import { ratioRowsToExplain, stageRules } from '../store/alerts.ts';
import { explainRows, explainWith } from '../rules/explain.ts';
import { evaluateRows } from '../rules/evaluate.ts';
import { evaluateProjections } from '../rules/projection.ts';
import { watchOf, type RuleSet } from '../rules/thresholds.ts';
import { ruleTables } from './engine.ts';

export interface ExplainedBatchOptions {
  /** MIDs read and judged at once (default 1,000) */
  batchMids?: number;
  /** Picks the rows of a batch to explain and pass on (every row is still judged: streaks need them); cbp ratios shows 2 months of 36. */
  pick?: (rows: RatioRow[]) => RatioRow[];
  /**
   * YYYY-MM: only months from this one on are shown. The series no rule could move (no month in a level's watch
   * band under the MID's rules) are then read for those months alone, and only the others for every month
   * (store/alerts.ts ratioRowsToExplain): the rules are staged as temp tables, which a read-only snapshot allows.
   */
  shownFrom?: string;
  /** With shownFrom: read only the rows some rule reads (the others have no explanation), for a caller that shows none of them. */
  ruleReadOnly?: boolean;
}

/**
 * Calls fn with each batch of ratio rows (sorted by mid, network, program, metric, month, is_projection), each
 * explained under rules. q.month cuts the rows shown, never the months streaks need: rows are read up to q.month
 * (or q.asOf) and cut after.
 */
export async function forEachExplainedBatch(
  store: Pick<Store, 'all' | 'run' | 'columns' | 'mapRows'>, q: RatioQuery, rules: RuleSet, fn: (rows: ExplainedRatioRow[]) => void | Promise<void>, opts: ExplainedBatchOptions = {},
): Promise<void> {
  const groups = Object.entries(rules.groups ?? {});
  const read: RatioQuery = { mid: q.mid, asOf: q.month !== undefined ? `${q.month}-01T00:00:00Z` : q.asOf, actualOnly: q.actualOnly };
  const batch = async (rows: RatioRow[]) => {
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
    const shown = opts.pick ? opts.pick(inMonth) : inMonth;
    await fn(shown.length === rows.length && !extra.length ? explainRows(rows, rules) : explainWith(shown, evaluateRows(all, rules), evaluateProjections(all, rules), rules));
  };
  const batchMids = opts.batchMids ?? 1000;
  if (opts.shownFrom === undefined) {
    await forEachRatioBatch(store, read, batch, batchMids);
    return;
  }
  const tables = ruleTables(rules);
  // Group members' rows of the group's programs are read whole (the group's sums need them): hot or not.
  const grouped = groups.flatMap(([, g]) => g.mids.flatMap((mid) => g.programs.map((program) => ({ mid, program }))));
  const conditions = await stageRules(store, { ...tables, grouped });
  const staged = { watchFraction: watchOf(rules).fraction, conditions };
  const asOfMonth = read.asOf !== undefined ? monthOf(read.asOf) : undefined;
  for (const [lo, hi] of midRanges(await ratioMids(store, q.mid), batchMids)) {
    let rows = await ratioRowsToExplain(store, { ...staged, lo, hi, mid: q.mid, shownFrom: opts.shownFrom, asOfMonth, actualOnly: read.actualOnly, ruleReadOnly: opts.ruleReadOnly });
    if (grouped.length) {
      const members = grouped.filter((g) => g.mid >= lo && g.mid <= hi);
      if (members.length) {
        const whole = await ratioRowsOf(store, { mids: [...new Set(members.map((g) => g.mid))], programs: [...new Set(members.map((g) => g.program))], asOf: read.asOf });
        const isMember = (r: RatioRow) => members.some((g) => g.mid === r.mid && g.program === r.program);
        rows = [...rows.filter((r) => !isMember(r)), ...whole.filter((r) => isMember(r) && (!read.actualOnly || !r.is_projection))].sort(byRatioKey);
      }
    }
    if (rows.length) await batch(rows);
  }
}

/** forEachRatioBatch's order: mid, network, program, metric, month, observed before projected. */
function byRatioKey(a: RatioRow, b: RatioRow): number {
  for (const k of ['mid', 'network', 'program', 'metric', 'month'] as const) if (a[k] !== b[k]) return a[k] < b[k] ? -1 : 1;
  return Number(a.is_projection) - Number(b.is_projection);
}
