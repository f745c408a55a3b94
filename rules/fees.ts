// Program fee estimates as words. The figures are the judge's (sql/views/44_ratio_explain.sql ratio_fee); estimates,
// never invoices; docs/ratios.md "Fees" gives the formulas and the sources.
import type { FeeBasis } from '../contract/ratios.ts';

export interface FeeEstimate {
  fee_estimate: number | null;
  fee_currency: string | null;
  fee_basis: FeeBasis | null;
}

export const NO_FEE: FeeEstimate = { fee_estimate: null, fee_currency: null, fee_basis: null };

/** A row's fee estimate as words ("estimated fee USD 28,000 (every counted event)"); null without one. */
export function feeWords(r: FeeEstimate & { is_projection?: boolean }): string | null {
  if (r.fee_estimate == null || !r.fee_currency) return null;
  const amount = r.fee_estimate.toLocaleString('en-US', { maximumFractionDigits: 2 });
  const basis = r.fee_basis === 'events_above_threshold' ? 'events above the threshold' : 'every counted event';
  return `${r.is_projection ? 'projected fee' : 'estimated fee'} ${r.fee_currency} ${amount} (${basis}; an estimate, not an invoice)`;
}
