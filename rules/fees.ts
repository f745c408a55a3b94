// Program fee estimates (issue #28): what a row at a level (or projected to one) would cost under the thresholds
// file's fees. Estimates, never invoices; docs/ratios.md "Fees" gives the formulas and the sources.
import type { FeeBasis, RatioRow } from '../contract/ratios.ts';
import type { Fee, Rule, RuleSet } from './thresholds.ts';

export interface FeeEstimate {
  fee_estimate: number | null;
  fee_currency: string | null;
  fee_basis: FeeBasis | null;
}

export const NO_FEE: FeeEstimate = { fee_estimate: null, fee_currency: null, fee_basis: null };

/** The enabled fee of a network × program × level in force in a month (YYYY-MM), if the file has one. */
export function feeFor(set: RuleSet, network: string, program: string, level: string, month: string): Fee | undefined {
  for (const f of set.fees ?? []) {
    if (!f.enabled || f.network !== network || f.program !== program || f.level !== level) continue;
    if (f.effective_from && f.effective_from > `${month}-31`) continue;
    if (f.effective_to && f.effective_to < `${month}-01`) continue;
    return f;
  }
  return undefined;
}

/**
 * The fee of a row at `rule`'s level: per_event × the row's counted events (every one), or × those above the
 * threshold's count (numerator − ⌊threshold × denominator⌋, never below 0). Rounded to cents; a projection's counts
 * are its projected ones. Count rows only.
 */
export function feeEstimate(set: RuleSet, row: RatioRow, rule: Rule): FeeEstimate {
  const f = feeFor(set, row.network, row.program, rule.level, row.month);
  const num = row.numerator_count;
  if (!f || row.metric !== 'count' || num === null) return NO_FEE;
  let counted = num;
  if (f.basis === 'events_above_threshold') {
    const den = row.denominator_count;
    if (den === null) return NO_FEE;
    counted = Math.max(0, num - Math.floor(Math.round(rule.ratio_threshold * den * 1e9) / 1e9));
  }
  return { fee_estimate: Math.round(counted * f.per_event * 100) / 100, fee_currency: f.currency, fee_basis: f.basis };
}

/** A row's fee estimate as words ("estimated fee USD 28,000 (every counted event)"); null without one. */
export function feeWords(r: FeeEstimate & { is_projection?: boolean }): string | null {
  if (r.fee_estimate == null || !r.fee_currency) return null;
  const amount = r.fee_estimate.toLocaleString('en-US', { maximumFractionDigits: 2 });
  const basis = r.fee_basis === 'events_above_threshold' ? 'events above the threshold' : 'every counted event';
  return `${r.is_projection ? 'projected fee' : 'estimated fee'} ${r.fee_currency} ${amount} (${basis}; an estimate, not an invoice)`;
}
