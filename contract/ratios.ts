// The ratio mart's vocabulary and rows (sql/views/40_ratios.sql mart_ratios; docs/ratios.md): what the store
// reads (store/ratios.ts) and the alert rules judge (rules/). Here, at the bottom, so that neither imports the
// other for it.
import type { Network } from './common.ts';

/** What a ratio row's numerator/denominator mean for a program; see docs/ratios.md. */
export const PROGRAMS = ['monthly', 'vamp', 'vdmp', 'vfmp', 'ecp', 'efm', 'discover_excessive', 'amex_excessive'] as const;
export type Program = (typeof PROGRAMS)[number];

export const METRICS = ['count', 'amount'] as const;
export type Metric = (typeof METRICS)[number];

/** One row of mart_ratios (see docs/ratios.md). Numbers are unrounded. */
export interface RatioRow {
  mid: string;
  network: Network;
  program: Program;
  metric: Metric;
  /** YYYY-MM, the month the chargebacks / fraud reports were received */
  month: string;
  numerator: number | null;
  denominator: number | null;
  /** YYYY-MM of the denominator (M−1 for Mastercard ECP/EFM and Discover) */
  denominator_month: string | null;
  numerator_count: number | null;
  numerator_amount: number | null;
  denominator_count: number | null;
  denominator_amount: number | null;
  ratio: number | null;
  ratio_pct: number | null;
  ratio_bps: number | null;
  no_ratio_reason: string | null;
  /** figures scaled to month end from the run rate; never an observed value */
  is_projection: boolean;
  /** the month is not closed: figures are month-to-date */
  is_partial: boolean;
  days_covered: number | null;
  days_in_month: number | null;
}
