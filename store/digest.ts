// What the digest e-mail reads (alerts/digest.ts): the kept ratio table's rows at risk in the months `cbp ratios`
// shows with no flags (the latest month evaluated, and the one before while the latest is month to date).
import type { Store } from './db.ts';

type ReadStore = Pick<Store, 'all'>;

export interface DigestRiskRow {
  mid: string; network: string; program: string; metric: string; month: string; state: string;
  level: string | null; next_level: string | null; ratio: number | null; closeness: number | null;
  is_partial: boolean; is_projection: boolean; reason: string | null;
  headroom_count: number | null; over_by_count: number | null; headroom_basis: string | null;
  fee_estimate: number | null; fee_currency: string | null; fee_basis: string | null;
  chance: number | null; chance_level: string | null; expected_count: number | null; expected_low80: number | null; expected_high80: number | null;
  pace_day: number | null;
}

/** MID × network × program × month by state (its most severe row's). */
export interface SeriesStates { level: number; watch: number; unknown: number }

/**
 * Observed rows at a level, on watch, unknown, or as likely as not to end the month at a level (chance), levels first, then
 * by closeness; at most `limit`, and how many there are.
 */
export async function digestRiskRows(store: ReadStore, limit: number): Promise<{ months: string[]; rows: DigestRiskRow[]; total: number; series: SeriesStates }> {
  const [last] = await store.all<{ month: string | null; partial: boolean | null }>(`
    SELECT max(month) AS month, bool_or(is_partial) FILTER (WHERE month = (SELECT max(month) FROM ratio_mart)) AS partial FROM ratio_mart`);
  if (!last?.month) return { months: [], rows: [], total: 0, series: { level: 0, watch: 0, unknown: 0 } };
  const month = String(last.month);
  const [y, m] = month.split('-').map(Number);
  const months = last.partial ? [new Date(Date.UTC(y, m - 2, 1)).toISOString().slice(0, 7), month] : [month];
  const inMonths = `month IN (${months.map((x) => `'${x}'`).join(', ')}) AND NOT is_projection`;
  const where = `${inMonths} AND (state IN ('level', 'watch', 'unknown') OR chance >= 0.5)`;
  const [n] = await store.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM mart_ratios WHERE ${where}`);
  // As the report counts: a MID × program in each month, by its most severe row.
  const [c] = await store.all<{ level: number; watch: number; unknown: number }>(
    `SELECT count(*) FILTER (WHERE w = 0)::INTEGER AS level, count(*) FILTER (WHERE w = 1)::INTEGER AS watch, count(*) FILTER (WHERE w = 2)::INTEGER AS unknown
       FROM (SELECT min(CASE state WHEN 'level' THEN 0 WHEN 'watch' THEN 1 ELSE 2 END) AS w FROM mart_ratios WHERE ${inMonths} AND state IN ('level', 'watch', 'unknown') GROUP BY mid, network, program, month)`);
  const rows = await store.all<DigestRiskRow>(
    `SELECT mid, network, program, metric, month, state, level, next_level, ratio, closeness, is_partial, is_projection, reason,
            headroom_count, over_by_count, headroom_basis, fee_estimate, fee_currency, fee_basis,
            chance, chance_level, expected_count, expected_low80, expected_high80, pace_day
       FROM mart_ratios WHERE ${where}
      ORDER BY CASE state WHEN 'level' THEN 0 WHEN 'watch' THEN 1 WHEN 'unknown' THEN 2 ELSE 3 END, closeness DESC NULLS LAST, month DESC, mid, network, program, metric
      LIMIT ${Math.max(1, Math.floor(limit))}`);
  return { months, rows, total: Number(n?.n ?? 0), series: { level: Number(c?.level ?? 0), watch: Number(c?.watch ?? 0), unknown: Number(c?.unknown ?? 0) } };
}
