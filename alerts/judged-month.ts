// A series' month as the SQL judge gives it (sql/views/45_ratio_notices.sql): what notices are made from.
import type { HeadroomBasis, FeeBasis } from '../contract/ratios.ts';

/** The rule a month is told by: its level's (met, else first in force), or the watched level's. */
export interface TellingRule {
  id: string;
  level: string;
  metric: string;
  comparison: string;
  ratio_threshold: number;
}

/** The row a month is told by: its rule's metric, else the count row. */
export interface TellingRow {
  metric: string;
  numerator: number | null;
  denominator: number | null;
  denominator_month: string | null;
  ratio: number | null;
  days_covered: number | null;
  days_in_month: number | null;
  is_projection: boolean;
  is_partial: boolean;
}

export interface JudgedMonth {
  mid: string;
  network: string;
  program: string;
  month: string;
  /** the level held (null: none), its rank */
  level: string | null;
  rank: number | null;
  /** levels met this month on their own */
  met: string[];
  /** with no level held, the highest whose watch band the month is in */
  watch: string | null;
  superseded_by: string | null;
  is_partial: boolean;
  is_projection: boolean;
  /** what the month's figures need that is not loaded (a closed month then neither meets nor misses) */
  missing_sources: string | null;
  row: TellingRow | null;
  rule: TellingRule | null;
  watchRule: TellingRule | null;
  /** the judge's figures for the notice: headroom to the watched level, over-by and fee at the level's rule */
  figures: {
    watch_headroom: number | null; over_by_count: number | null; headroom_basis: HeadroomBasis | null;
    fee_estimate: number | null; fee_currency: string | null; fee_basis: FeeBasis | null;
  };
}

/** A series' key: mid × network × program. */
export function seriesKey(r: { mid: string; network: string; program: string }): string {
  return `${r.mid}\u0000${r.network}\u0000${r.program}`;
}

/** One series' months in the order given, and by month. */
export interface SeriesMonths {
  levels: JudgedMonth[];
  byMonth: Map<string, JudgedMonth>;
}

/** Months by series, in order of first appearance. */
export function seriesIndex(levels: readonly JudgedMonth[]): Map<string, SeriesMonths> {
  const out = new Map<string, SeriesMonths>();
  for (const l of levels) {
    const k = seriesKey(l);
    let cur = out.get(k);
    if (cur === undefined) { cur = { levels: [], byMonth: new Map() }; out.set(k, cur); }
    cur.levels.push(l);
    cur.byMonth.set(l.month, l);
  }
  return out;
}
