// The oracle's fee estimates (sql/views/44_ratio_explain.sql ratio_fee must equal them).
import type { FeeBasis, RatioRow } from '../../contract/ratios.ts';
import type { Fee, Rule, RuleSet } from '../../rules/thresholds.ts';
import { NO_FEE, type FeeEstimate } from '../../rules/fees.ts';

export { NO_FEE };

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

