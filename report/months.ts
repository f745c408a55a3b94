// Which months a view of the ratios is about, one rule for `cbp ratios` and `cbp report` with no --month: the
// latest month in the data, and the month before it when the latest is still open (month to date). Pure.
import { addMonths } from '../lib/utc.ts';

/** A month shown, with what it is: complete, or month to date (days covered of the month). */
export interface ShownMonth {
  month: string;
  kind: 'complete' | 'month_to_date';
  days_covered: number | null;
  days_in_month: number | null;
}

/** 'latest': no --month (the rule below); 'month': the month asked for alone. */
export type MonthScope = 'latest' | 'month';

/** The months shown with no --month: the latest, and the one before it when the latest is month to date. */
export function latestMonths(latest: string, latestIsPartial: boolean): string[] {
  return latestIsPartial ? [addMonths(latest, -1), latest] : [latest];
}

/** "month to date (17 of 30 days)", or "month to date" when the days are not known. */
export function toDateText(m: Pick<ShownMonth, 'days_covered' | 'days_in_month'>): string {
  return m.days_covered !== null && m.days_in_month !== null ? `month to date (${m.days_covered} of ${m.days_in_month} days)` : 'month to date';
}

/** The short column mark of a month to date: "MTD 17/30 d". */
export function toDateMark(m: Pick<ShownMonth, 'days_covered' | 'days_in_month'>): string {
  return m.days_covered !== null && m.days_in_month !== null ? `MTD ${m.days_covered}/${m.days_in_month} d` : 'MTD';
}

/** One month as a title says it: "2026-03, complete month" or "2026-04, month to date (17 of 30 days)". */
export function monthTitle(m: ShownMonth): string {
  return `${m.month}, ${m.kind === 'complete' ? 'complete month' : toDateText(m)}`;
}

/**
 * The sentence naming the months shown and the rule that chose them: "Latest complete month 2026-03, and
 * 2026-04 month to date (17 of 30 days)"; "Month 2026-02 (--month), complete".
 */
export function scopeText(shown: ShownMonth[], scope: MonthScope): string {
  if (shown.length === 0) return 'No month with figures';
  if (scope === 'month') {
    const [m] = shown;
    return `Month ${m.month} (--month), ${m.kind === 'complete' ? 'complete' : toDateText(m)}`;
  }
  return shown.map((m) => (m.kind === 'complete' ? `Latest complete month ${m.month}` : `${m.month} ${toDateText(m)}`)).join(', and ');
}
