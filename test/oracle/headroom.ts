// The oracle's headroom and over-by (sql/views/44_ratio_explain.sql must equal them): how many more numerator events
// reach a rule, how many fewer would have left it.
import type { HeadroomBasis, RatioRow } from '../../contract/ratios.ts';
import { compare } from '../../rules/rule-set.ts';
import type { Rule } from '../../rules/thresholds.ts';

/** Programs whose denominator is the previous month's transactions (sql/views/40_ratios.sql ratio_den_prev). */
const PREVIOUS_MONTH = new Set(['ecp', 'efm', 'discover_excessive']);

/** Same-month fields a projection to month end scales (the numerator is what headroom counts, so it is not). */
const SAME_MONTH_FIELDS = new Set(['month_transaction_count', 'month_transaction_amount']);

/** x rounded to 9 decimals: 0.015 × 10,000 is 150.00000000000003 in doubles, and 150 events reach 1.5 %. */
const tidy = (x: number) => Math.round(x * 1e9) / 1e9;


/** The denominator headroom is measured on, and what it is: see HeadroomBasis. */
export function headroomBasis(row: RatioRow): { basis: HeadroomBasis; factor: number } {
  if (PREVIOUS_MONTH.has(row.program)) return { basis: 'previous_month', factor: 1 };
  if (row.is_projection) return { basis: 'projected_month', factor: 1 };
  if (row.is_partial && row.days_covered && row.days_in_month) return { basis: 'projected_month', factor: row.days_in_month / row.days_covered };
  return { basis: 'closed_month', factor: 1 };
}

/** A row field as headroom reads it: same-month figures of an open month projected to its end. */
function fieldOf(row: RatioRow, field: string, factor: number, previousMonth: boolean): number | null {
  const v = row[field as keyof RatioRow] as number | null | undefined;
  if (v === null || v === undefined) return null;
  // The month's own transactions of an open month are projected whatever the denominator's month (Discover's 100 net sales).
  if (SAME_MONTH_FIELDS.has(field)) return v * monthFactor(row);
  return !previousMonth && (field === 'denominator_count' || field === 'denominator_amount') ? v * factor : v;
}

/** An open month's factor to its end (1 for a closed month or a projection). */
function monthFactor(row: RatioRow): number {
  return !row.is_projection && row.is_partial && row.days_covered && row.days_in_month ? row.days_in_month / row.days_covered : 1;
}

/**
 * The fewest more events k ≥ 0 making every condition of `rule` hold, with the row's other figures as they are (its
 * same-month denominator projected in an open month); null where none can (a count metric only: an amount row's
 * events have no size; a condition on amounts or transactions not met; no denominator).
 */
export function headroomCount(row: RatioRow, rule: Rule): number | null {
  if (row.metric !== 'count' || rule.metric !== 'count') return null;
  const num = row.numerator_count;
  const { factor } = headroomBasis(row);
  const prev = PREVIOUS_MONTH.has(row.program);
  const den = fieldOf(row, 'denominator_count', factor, prev);
  if (num === null || den === null || !(den > 0)) return null;
  const upTo = (target: number, cmp: Rule['comparison']) => {
    const x = tidy(target - num);
    return Math.max(0, cmp === '>=' ? Math.ceil(x) : Math.floor(x) + 1);
  };
  let k = upTo(rule.ratio_threshold * den, rule.comparison);
  for (const c of rule.conditions) {
    if (c.field === 'numerator_count') k = Math.max(k, upTo(c.value, c.comparison));
    else {
      const v = fieldOf(row, c.field, factor, prev);
      if (v === null || !compare(v, c.comparison, c.value)) return null;
    }
  }
  return k;
}

/**
 * The fewest events m ≥ 1 fewer that would have left the row below `rule`'s ratio or one of its count minimums (the
 * row meets the rule); null on an amount row or without a denominator.
 */
export function overByCount(row: RatioRow, rule: Rule): number | null {
  if (row.metric !== 'count') return null;
  const num = row.numerator_count;
  const { factor } = headroomBasis(row);
  const den = fieldOf(row, 'denominator_count', factor, PREVIOUS_MONTH.has(row.program));
  if (num === null || den === null || !(den > 0)) return null;
  const downTo = (target: number, cmp: Rule['comparison']) => {
    const x = tidy(num - target);
    return Math.max(1, cmp === '>=' ? Math.floor(x) + 1 : Math.ceil(x));
  };
  let m = downTo(rule.ratio_threshold * den, rule.comparison);
  for (const c of rule.conditions) if (c.field === 'numerator_count') m = Math.min(m, downTo(c.value, c.comparison));
  return m;
}

