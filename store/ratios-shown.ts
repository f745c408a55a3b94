// What `cbp ratios` reads when the last rule evaluation still holds (same rules, same source data): the ratio
// rows of a few months with the explanation that evaluation stored (ratio_explanations), instead of judging
// every month of every MID again.
import type { QueryStore } from './ratios.ts';

/** The latest month the last evaluation explained (observed rows); null when none, or an older store without the table. */
export async function latestExplainedMonth(store: QueryStore): Promise<string | null> {
  try {
    const [r] = await store.all<{ month: string | null }>('SELECT max(month) AS month FROM ratio_explanations WHERE NOT is_projection');
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
    `SELECT r.*, x.level, x.state, x.next_level, x.next_threshold, x.closeness, x.reason, x.region, x.region_source,
            x.monitored_as, x.superseded_by, x.certainty, x.certainty_note
       FROM ratio_rows_covered_between(strptime($from || '-01', '%Y-%m-%d')::DATE, strptime($to || '-01', '%Y-%m-%d')::DATE) r
       JOIN ratio_explanations x
         ON x.mid = r.mid AND x.network = r.network AND x.program = r.program AND x.metric = r.metric
        AND x.month = r.month AND x.is_projection = r.is_projection
      ${q.mid !== undefined ? 'WHERE r.mid = $mid' : ''}
      ORDER BY r.mid, r.network, r.program, r.metric, r.month, r.is_projection`,
    { from: q.from, to: q.to, ...(q.mid !== undefined ? { mid: q.mid } : {}) },
  );
}
