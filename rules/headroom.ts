// Headroom (issue #28): how many more numerator events (disputes, chargebacks, fraud reports) in a row's month reach
// the next level, and how many fewer would have left the level it meets. Pure; docs/ratios.md "Headroom" gives the
// formulas, and sql/views/42_ratio_mart.sql computes the same for the rows no rule came near.
import type { HeadroomBasis, RatioRow } from '../contract/ratios.ts';
import { compare } from './evaluate.ts';
import type { Rule } from './thresholds.ts';

/** Programs whose denominator is the previous month's transactions (sql/views/40_ratios.sql ratio_den_prev). */
const PREVIOUS_MONTH = new Set(['ecp', 'efm', 'discover_excessive']);

/** Same-month fields a projection to month end scales (the numerator is what headroom counts, so it is not). */
const SAME_MONTH_FIELDS = new Set(['month_transaction_count', 'month_transaction_amount']);

/** x rounded to 9 decimals: 0.015 × 10,000 is 150.00000000000003 in doubles, and 150 events reach 1.5 %. */
const tidy = (x: number) => Math.round(x * 1e9) / 1e9;

export interface Headroom {
  headroom_count: number | null;
  over_by_count: number | null;
  headroom_basis: HeadroomBasis | null;
}

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
  const sameMonth = SAME_MONTH_FIELDS.has(field) || (!previousMonth && (field === 'denominator_count' || field === 'denominator_amount'));
  return sameMonth ? v * factor : v;
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

/** What one more numerator event is, per program (singular, plural). */
const EVENTS: Record<string, [string, string]> = {
  vamp: ['Visa dispute or TC40 fraud report', 'Visa disputes or TC40 fraud reports'],
  vdmp: ['Visa dispute', 'Visa disputes'],
  vfmp: ['Visa fraud report', 'Visa fraud reports'],
  ecp: ['Mastercard chargeback', 'Mastercard chargebacks'],
  efm: ['Mastercard fraud chargeback', 'Mastercard fraud chargebacks'],
  discover_excessive: ['Discover chargeback', 'Discover chargebacks'],
  amex_excessive: ['American Express chargeback', 'American Express chargebacks'],
  monthly: ['chargeback', 'chargebacks'],
};

const PROGRAM_NAMES: Record<string, string> = {
  vamp: 'VAMP', vdmp: 'VDMP', vfmp: 'VFMP', ecp: 'Mastercard', efm: 'Mastercard', discover_excessive: 'Discover',
  amex_excessive: 'American Express', monthly: 'monthly',
};

/** A level as people say it: "VAMP Excessive", "ECM", "Discover Excessive". */
export function levelLabel(program: string, level: string): string {
  if (/^(ecm|hecm|efm)$/.test(level)) return level.toUpperCase();
  const name = level.split('_').map((w) => w[0].toUpperCase() + w.slice(1)).join(' ');
  return `${PROGRAM_NAMES[program] ?? program} ${name}`;
}

const events = (program: string, n: number, how: 'more' | 'fewer') => `${n.toLocaleString('en-US')} ${how} ${(EVENTS[program] ?? EVENTS.monthly)[n === 1 ? 0 : 1]}`;

/** The row's headroom and over-by as words; null when it has neither. */
export function headroomWords(r: Pick<RatioRow, 'program' | 'month' | 'is_projection' | 'is_partial'> & Headroom & { next_level: string | null; level: string | null }): string | null {
  const when = r.is_projection ? `than projected for ${r.month}` : r.is_partial ? 'this month' : `in ${r.month}`;
  const basis = r.headroom_basis === 'projected_month' && !r.is_projection ? ' (on the month\'s projected transactions)' : '';
  const out: string[] = [];
  if (r.over_by_count != null && r.level) {
    out.push(`${events(r.program, r.over_by_count, 'fewer')} ${when} would have left ${levelLabel(r.program, r.level)}${basis}`);
  }
  if (r.headroom_count != null && r.next_level) {
    const verb = r.is_partial || r.is_projection ? 'reach' : 'would have reached';
    out.push(r.headroom_count === 0
      ? `every condition of ${levelLabel(r.program, r.next_level)} is met ${when}${basis}`
      : `${events(r.program, r.headroom_count, 'more')} ${when} ${verb} ${levelLabel(r.program, r.next_level)}${basis}`);
  }
  return out.length ? out.join('; ') : null;
}
