// What `cbp ratios` reads when the last rule evaluation still holds (same rules, same source data): the ratio
// rows of a few months with the explanation as of that evaluation (sql/views/40_ratios.sql mart_ratios_between:
// the judged series' stored explanations, the others explained from the rules it saved), instead of judging
// every month of every MID again.
import type { QueryStore } from './ratios.ts';

/**
 * The latest month the last evaluation explained: the newest month of ratio rows up to the month it was evaluated
 * as of; null when none, or an older store without the tables.
 */
export async function latestExplainedMonth(store: QueryStore): Promise<string | null> {
  try {
    // The months the ratio rows have (windows from the 1st, ratio_stats_between), up to the one evaluated.
    const [r] = await store.all<{ month: string | null }>(
      `SELECT max(s.month) AS month
         FROM ratio_stats_between(DATE '0001-01-01', DATE '9999-12-01') s, (SELECT as_of_month FROM ratio_evaluations ORDER BY evaluated_at DESC LIMIT 1) e
        WHERE s.month <= e.as_of_month`,
    );
    return r?.month ?? null;
  } catch {
    return null;
  }
}

/**
 * The explained ratio rows of months from .. to (YYYY-MM), the rows no rule reads left out (they have no
 * explanation): mart_ratios' columns, computed for those months only.
 */
export async function explainedRowsBetween(store: QueryStore, q: { from: string; to: string; mid?: string }): Promise<Array<Record<string, unknown>>> {
  return store.all<Record<string, unknown>>(
    `SELECT * FROM mart_ratios_between(strptime($from || '-01', '%Y-%m-%d')::DATE, strptime($to || '-01', '%Y-%m-%d')::DATE)
      WHERE monitored_as IS NOT NULL ${q.mid !== undefined ? 'AND mid = $mid' : ''}
      ORDER BY mid, network, program, metric, month, is_projection`,
    { from: q.from, to: q.to, ...(q.mid !== undefined ? { mid: q.mid } : {}) },
  );
}
