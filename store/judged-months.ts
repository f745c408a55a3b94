// The judged months notices are made from (sql/views/45_ratio_notices.sql), read from the kept runs after a refresh.
import type { Store } from './db.ts';
import { monthIndex } from '../lib/utc.ts';
import type { HeadroomBasis, FeeBasis } from '../contract/ratios.ts';
import { numOrNull, textOrNull } from './nullable.ts';
import { dropTemp } from './sql-text.ts';
import { judgedRows } from './ratio-refresh.ts';
import { midRanges, midsIn, type MidRange } from './table-slices.ts';

/** The rule a month is told by: its level's (met, else first in force), or the watched level's. */
export interface TellingRule { id: string; level: string; metric: string; comparison: string; ratio_threshold: number }

/** The row a month is told by: its rule's metric, else the count row. */
export interface TellingRow {
  metric: string; numerator: number | null; denominator: number | null; denominator_month: string | null; ratio: number | null;
  days_covered: number | null; days_in_month: number | null; is_projection: boolean; is_partial: boolean;
}

export interface JudgedMonth {
  mid: string; network: string; program: string; month: string;
  /** the level held (null: none), its rank */
  level: string | null; rank: number | null;
  /** levels met this month on their own */
  met: string[];
  /** with no level held, the highest whose watch band the month is in */
  watch: string | null;
  superseded_by: string | null; is_partial: boolean; is_projection: boolean;
  /** what the month's figures need that is not loaded (a closed month then neither meets nor misses) */
  missing_sources: string | null;
  row: TellingRow | null; rule: TellingRule | null; watchRule: TellingRule | null;
  /** the judge's figures for the notice: headroom to the watched level, over-by and fee at the level's rule */
  figures: {
    watch_headroom: number | null; over_by_count: number | null; headroom_basis: HeadroomBasis | null;
    fee_estimate: number | null; fee_currency: string | null; fee_basis: FeeBasis | null;
  };
}

/** Ranges of MIDs covering all, each of at most a memory limit's share of kept runs from `from` on (null: every month): a
 * run reads its month's rows of every metric and reading beside it; a twentieth of a judge tile leaves room to spare. */
export const judgedRanges = (store: Store, from: string | null, most = judgedRows(store.memoryLimit) / 20): Promise<MidRange[]> =>
  midRanges(store, 'ratio_streaks', most, `WHERE month_idx >= ${from === null ? 0 : monthIndex(from) - 1}`);

/**
 * The months of every series (of the MIDs in `range`) at a level or in a watch band from `from` (observed: from the month
 * before it) to `last`, or with a level recorded since `from`; `from` null: every month. Sorted by series and month.
 */
export async function judgedMonths(store: Store, q: { from: string | null; last: string; range?: MidRange }): Promise<{ levels: JudgedMonth[]; projections: JudgedMonth[] }> {
  const first = q.from === null ? 0 : monthIndex(q.from);
  const last = monthIndex(q.last);
  const mids = midsIn(q.range);
  const rows = await store.exclusive(async () => {
    // The plain range as well: DuckDB skips the row groups outside it, where the OR alone read every month's runs.
    await store.run(`CREATE OR REPLACE TEMP VIEW _notice_runs AS SELECT * FROM ratio_streaks
      WHERE month_idx BETWEEN ${first - 1} AND ${last} AND ((v = 0 AND month_idx >= ${first - 1}) OR (v = 1 AND month_idx >= ${first})) ${mids}`);
    await store.run(`CREATE OR REPLACE TEMP VIEW _notice_rows AS SELECT * REPLACE (network::VARCHAR AS network, program::VARCHAR AS program,
      metric::VARCHAR AS metric) FROM ratio_mart WHERE month BETWEEN ratio_idx_month(${Math.max(first - 1, 0)}) AND ratio_idx_month(${last}) ${mids}`);
    try {
      return await store.all<Record<string, unknown>>(`SELECT * FROM ratio_notice_months('_notice_runs', '_notice_rows', $1)
        ORDER BY mid, network, program, v, month`, [q.from ?? '0000-00']);
    } finally {
      await store.run(dropTemp('VIEW', '_notice_runs', '_notice_rows'));
    }
  });
  const rule = (r: Record<string, unknown>, p: '' | 'watch_'): TellingRule | null => (r[`${p}rule_id`] == null ? null : {
    id: String(r[`${p}rule_id`]), level: String(r[`${p}rule_level`]), metric: String(r[`${p}rule_metric`]),
    comparison: String(r[p ? 'watch_comparison' : 'comparison']), ratio_threshold: Number(r[p ? 'watch_threshold' : 'ratio_threshold']),
  });
  const levels: JudgedMonth[] = [];
  const projections: JudgedMonth[] = [];
  for (const r of rows) {
    const projected = Number(r.v) === 1;
    const m: JudgedMonth = {
      mid: String(r.mid), network: String(r.network), program: String(r.program), month: String(r.month),
      level: textOrNull(r.level), rank: numOrNull(r.rank), met: (r.met as string[] | null) ?? [], watch: textOrNull(r.watch), superseded_by: textOrNull(r.superseded_by),
      is_partial: r.is_partial === true, is_projection: projected, missing_sources: textOrNull(r.missing_sources),
      row: r.metric == null ? null : {
        metric: String(r.metric), numerator: numOrNull(r.numerator), denominator: numOrNull(r.denominator), denominator_month: textOrNull(r.denominator_month),
        ratio: numOrNull(r.ratio), days_covered: numOrNull(r.days_covered), days_in_month: numOrNull(r.days_in_month), is_projection: projected, is_partial: r.is_partial === true,
      },
      rule: rule(r, ''), watchRule: rule(r, 'watch_'),
      figures: {
        watch_headroom: numOrNull(r.watch_headroom), over_by_count: numOrNull(r.over_by_count), headroom_basis: textOrNull(r.headroom_basis) as never,
        fee_estimate: numOrNull(r.fee_estimate), fee_currency: textOrNull(r.fee_currency), fee_basis: textOrNull(r.fee_basis) as never,
      },
    };
    (projected ? projections : levels).push(m);
  }
  return { levels, projections };
}
