// alerts/notice-text.ts noticeMessage: a projection notice's figures are rounded and it says how it projected.
import { describe, expect, it } from 'vitest';
import { noticeMessage } from '../alerts/notice-text.ts';

const base = {
  kind: 'projected' as const, mid: 'm7', network: 'visa', program: 'vamp', level: 'excessive', previous_level: null, month: '2026-04',
  ratio: 143.92857142857144 / 6539, numerator: 143.92857142857144, denominator: 6539, denominator_month: '2026-04',
  comparison: '>=', ratio_threshold: 0.015, is_partial: true,
};

describe('noticeMessage: projections', () => {
  it('rounds the figures and says it projected to month end from so many days', () => {
    expect(noticeMessage(base, { days_covered: 17, days_in_month: 30 })).toBe(
      'm7 visa vamp: PROJECTION — at the current run rate 2026-04 would end at level excessive: projected to month end from 17 of 30 days: 144 / 6,539 = 2.20 %, threshold >= 1.50 %',
    );
  });

  it("names a previous month's denominator (not projected) and writes thousands apart", () => {
    const m = noticeMessage(
      { ...base, network: 'mastercard', program: 'ecp', level: 'ecm', numerator: 1712.5, denominator: 98_000, denominator_month: '2026-03', ratio: 1712.5 / 98_000 },
      { days_covered: 12, days_in_month: 30 },
    );
    expect(m).toContain('projected to month end from 12 of 30 days: 1,713 / 98,000 of 2026-03 = 1.75 %, threshold >= 1.50 %');
    expect(m).not.toMatch(/\d\.\d{5,}/);
  });

  it('shows more decimals only where 2 would read as equal to the threshold', () => {
    const m = noticeMessage({ ...base, comparison: '>', ratio_threshold: 0.01, ratio: 0.010041, numerator: 100.41, denominator: 10_000 }, { days_covered: 3, days_in_month: 31 });
    expect(m).toContain('100 / 10,000 = 1.004 %, threshold > 1.00 %');
  });

  it('says it projected from the run rate when the coverage is not known', () => {
    expect(noticeMessage(base)).toContain('projected to month end from the month-to-date run rate: 144 / 6,539 = 2.20 %');
  });

  it('leaves the observed kinds as they were', () => {
    expect(noticeMessage({ ...base, kind: 'reached', numerator: 250, denominator: 10_000, ratio: 0.025, is_partial: false })).toBe(
      'm7 visa vamp: level excessive reached in 2026-04: 2.500 % (250 / 10000), threshold >= 1.500 %',
    );
  });
});
