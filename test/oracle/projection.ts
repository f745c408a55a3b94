// Projection to month end from the run rate, so a breach can be announced before the month closes.
// The SQL (sql/views/40_ratios.sql) writes projected rows (is_projection = true) beside the month-to-date
// ones; this module judges them as if the month had closed, on top of the real streak history.
import { watchOf, type RuleSet } from '../../rules/thresholds.ts';
import { evaluateSeries, groupSeries, markSuperseded, ruledRows, rulesFor, withGroups, type MonthLevel, type RatioRow } from './evaluate.ts';

/** Month-end factor of a month-to-date figure covering daysCovered of daysInMonth days. */
export function runRateFactor(daysCovered: number, daysInMonth: number): number {
  if (!(daysCovered > 0) || !(daysInMonth > 0)) return NaN;
  return daysInMonth / Math.min(daysCovered, daysInMonth);
}

/** A month-to-date value scaled to month end (unrounded). */
export function projectValue(mtd: number, daysCovered: number, daysInMonth: number): number {
  return mtd * runRateFactor(daysCovered, daysInMonth);
}

/**
 * Levels the projected months would reach. For each projected month of a series, the months before are
 * judged on observed figures and that month as if closed with the projected figures. Every
 * returned level is flagged is_projection.
 */
export function evaluateProjections(rows: RatioRow[], set: RuleSet): MonthLevel[] {
  const out: MonthLevel[] = [];
  if (!rows.some((r) => r.is_projection)) return out;
  for (const all of groupSeries(withGroups(rows, set))) {
    if (!all.some((r) => r.is_projection)) continue;
    const rules = rulesFor(set, all[0].mid);
    const series = ruledRows(all, rules);
    const projMonths = new Set(series.filter((r) => r.is_projection).map((r) => r.month));
    if (projMonths.size === 0) continue;
    for (const month of projMonths) {
      const judged = series.filter((r) => (r.month < month && !r.is_projection) || (r.month === month && r.is_projection))
        .map((r) => (r.is_projection ? { ...r, is_partial: false } : r));
      for (const l of evaluateSeries(judged, rules, watchOf(set).fraction)) if (l.month === month) out.push({ ...l, is_projection: true, is_partial: true });
    }
  }
  markSuperseded(out);
  return out;
}
