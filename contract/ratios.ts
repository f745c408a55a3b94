// The ratio mart's vocabulary and rows (sql/views/42_ratio_mart.sql mart_ratios; docs/ratios.md): what the store
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
  /** transactions of M itself (the chargebacks' month), whatever the denominator's month; scaled on a projection */
  month_transaction_count: number | null;
  month_transaction_amount: number | null;
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
  /** first UTC day (YYYY-MM-DD) events were captured in the store; null: none yet (see RatioExplanation) */
  tc40_observed_from: string | null;
  /** false: the numerator lacks TC40s (month before tc40_observed_from; visa vamp, vfmp): a partial ratio */
  numerator_complete: boolean;
  /** what the row's figures need that is not loaded for its month, and the command that loads it; null: nothing (docs/ratios.md "Unknown") */
  missing_sources: string | null;
  /** VAMP: the MID report's chargebacks (less RDR-resolved) were the disputes' floor, above the chargeback report's count */
  numerator_floor: boolean;
}

// ---- Explained ratios. What each rule-judged row says about where it stands; docs/ratios.md "Columns" gives every
// column's exact meaning. The same names are columns of mart_ratios and fields of `cbp ratios --json`.

/**
 * clear: below every level's watch band; watch: in the watch band of a level (or met, not yet entered); level: a level
 * in force; unknown: would read clear, but a source its figures need is not loaded (missing_sources says which).
 */
export const RATIO_STATES = ['clear', 'watch', 'level', 'unknown'] as const;
export type RatioState = (typeof RATIO_STATES)[number];

/** Where a MID's region came from: its own entry in the thresholds file, or the default region (CBP_DEFAULT_REGION / default_region). */
export const REGION_SOURCES = ['mid', 'default'] as const;
export type RegionSource = (typeof REGION_SOURCES)[number];

/**
 * How far a level can be trusted from the service's data: exact (every condition computed as the network
 * states it), approximate (computed on a stand-in the data offers: all transactions for card-not-present or
 * e-commerce ones), unconfirmed (a condition cannot be computed at all: EFM's 3-D Secure share).
 */
export const CERTAINTIES = ['exact', 'approximate', 'unconfirmed'] as const;
export type Certainty = (typeof CERTAINTIES)[number];

/**
 * What a row's headroom is measured on (issue #28): previous_month (exact: Mastercard's and Discover's denominator is
 * the previous month's transactions), closed_month (exact: the month is over), projected_month (an estimate: an open
 * month's own transactions projected to its end).
 */
export const HEADROOM_BASES = ['previous_month', 'closed_month', 'projected_month'] as const;
export type HeadroomBasis = (typeof HEADROOM_BASES)[number];

/** What a program fee counts: every counted event, or those above the threshold (thresholds file `fees`). */
export const FEE_BASES = ['every_counted_event', 'events_above_threshold'] as const;
export type FeeBasis = (typeof FEE_BASES)[number];

/** The explanation of one ratio row (one mid × network × program × metric × month, observed or projected). */
export interface RatioExplanation {
  /** level in force this month after streaks (the series'), or null; null on rows no rule reads */
  level: string | null;
  /** null on rows no enabled rule reads (e.g. program monthly) */
  state: RatioState | null;
  /** the level this row is measured against: the lowest-ranked level in force this month above `level`; null at the top */
  next_level: string | null;
  /** that level's ratio threshold (a fraction, unscaled); null at the top */
  next_threshold: number | null;
  /** ratio ÷ threshold of next_level (at the top: of `level`); null without a ratio. ≥ 1 at or past the threshold */
  closeness: number | null;
  /** why next_level was not reached, the stopping condition(s) joined by "; " (or why a level is shown differently); null when nothing to explain */
  reason: string | null;
  /** region the MID was evaluated under */
  region: string | null;
  region_source: RegionSource | null;
  /** the monitored merchant: the VAMP group id when the MID is grouped (visa vamp rows), else the MID */
  monitored_as: string | null;
  /** first UTC day (YYYY-MM-DD) events were captured (store-wide: the earliest event received); null: none yet */
  tc40_observed_from: string | null;
  /** false when the numerator needs TC40s (visa vamp, vfmp) and the month starts before tc40_observed_from */
  numerator_complete: boolean;
  /** the program's level Mastercard assesses instead (an ECP row in a month EFM is met: 'efm'), else null */
  superseded_by: string | null;
  certainty: Certainty | null;
  /** why certainty is not exact, e.g. "3-D Secure share not in the data" */
  certainty_note: string | null;
  /** the fewest more numerator events this month meeting every condition of next_level; null: none can (docs/ratios.md "Headroom") */
  headroom_count: number | null;
  /** at a level its figures meet: the fewest events fewer that would have left it below the level's ratio or count minimum */
  over_by_count: number | null;
  /** what the headroom's denominator is; null without a headroom or over-by */
  headroom_basis: HeadroomBasis | null;
  /** at a level (or projected to one): the program fee it would cost, an estimate from the thresholds file's fees; null: none configured */
  fee_estimate: number | null;
  fee_currency: string | null;
  fee_basis: FeeBasis | null;
}

/** An open month's chance of a breach on its observed row (ratio_forecasts' headline level); null on every other row. */
export interface RatioChance {
  /** a month to date's chance (0..1) that the closed month meets chance_level (docs/ratios.md "The chance of a breach"); null: not an open month's observed row */
  chance: number | null;
  /** the level the chance is of: the highest level as likely as not, else the lowest in force */
  chance_level: string | null;
  /** the closed month's expected numerator count, and its 80 % interval */
  expected_count: number | null;
  expected_low80: number | null;
  expected_high80: number | null;
  /** the day of the month on which the pace to date reaches chance_level's count; null: not this month */
  pace_day: number | null;
}

/** A ratio row with its explanation: one element of `cbp ratios --json`, one row of mart_ratios. */
export type ExplainedRatioRow = RatioRow & RatioExplanation & RatioChance;

/** The fields of an explained row in `cbp ratios --json`'s order (mart_ratios' columns but explained_at). */
export const EXPLAINED_RATIO_FIELDS = ['mid', 'network', 'program', 'metric', 'month', 'numerator', 'denominator', 'denominator_month', 'numerator_count',
  'numerator_amount', 'denominator_count', 'denominator_amount', 'month_transaction_count', 'month_transaction_amount', 'ratio', 'ratio_pct', 'ratio_bps',
  'no_ratio_reason', 'is_projection', 'is_partial', 'days_covered', 'days_in_month', 'tc40_observed_from', 'numerator_complete', 'missing_sources',
  'numerator_floor', 'level', 'state', 'next_level', 'next_threshold', 'closeness', 'reason', 'region', 'region_source', 'monitored_as',
  'superseded_by', 'certainty', 'certainty_note', 'headroom_count', 'over_by_count', 'headroom_basis', 'fee_estimate', 'fee_currency', 'fee_basis',
  'chance', 'chance_level', 'expected_count', 'expected_low80', 'expected_high80', 'pace_day',
] as const;

/** The watch band (thresholds file `watch`): every condition of every level scaled by fraction. */
export interface WatchSettings {
  /** 0 < fraction ≤ 1; default 0.8 */
  fraction: number;
  /** one `watch` notice per mid × network × program × month entering the band (default false) */
  notify: boolean;
}

/** A month to date's figures a level's need is read from (its ratio row: rules/forecast.ts levelNeed, store/forecast.ts). */
export interface MonthToDate {
  metric: 'count' | 'amount';
  numerator_count: number;
  numerator_amount: number;
  denominator_count: number | null;
  denominator_amount: number | null;
  month_transaction_count: number | null;
  month_transaction_amount: number | null;
  days_covered: number;
  days_in_month: number;
  /** the denominator is the previous month's (known) */
  den_prev: boolean;
}
