// The chart an alert notice carries: the series it draws (13 months to the latest, the thresholds of the rules in
// force each month, the projection of the open month), a notice with no figures drawing none, and a chart that
// fails leaving the notice to go without it.
import { describe, expect, it } from 'vitest';
import type { RatioRow } from '../contract/ratios.ts';
import type { Notice } from '../store/alerts.ts';
import { CHART_MONTHS, noticeChart, noticeCharts, noticeSeries } from '../alerts/notifiers/chart.ts';
import { pngSize } from '../alerts/notifiers/png.ts';
import { loadRules } from '../rules/thresholds.ts';

function row(month: string, o: Partial<RatioRow> = {}): RatioRow {
  return {
    mid: 'm1', network: 'visa', program: 'vamp', metric: 'count', month, numerator: 20, denominator: 1000, denominator_month: month,
    numerator_count: 20, numerator_amount: 200, denominator_count: 1000, denominator_amount: 10_000, month_transaction_count: 1000,
    month_transaction_amount: 10_000, ratio: 0.02, ratio_pct: 2, ratio_bps: 200, no_ratio_reason: null, is_projection: false,
    is_partial: false, days_covered: null, days_in_month: null, tc40_observed_from: '2025-01-01', numerator_complete: true, missing_sources: null, numerator_floor: false, ...o,
  };
}

const notice = { notice_id: 'ntc_x', kind: 'reached', mid: 'm1', network: 'visa', program: 'vamp', metric: 'count', month: '2026-04' } as Notice;

describe("an alert notice's chart", () => {
  const rules = loadRules();

  it('spans 13 months to the latest, with the thresholds in force each month (VAMP falls to 1.5 % in 2026-04) and the projection', () => {
    const rows = [
      row('2026-02'), row('2026-03'),
      row('2026-04', { is_partial: true, days_covered: 10, days_in_month: 30, numerator_complete: false }),
      row('2026-04', { is_projection: true, is_partial: true, ratio: 0.03, numerator_count: 60 }),
      row('2026-04', { program: 'vdmp' }), row('2026-04', { mid: 'm2' }),
    ];
    const s = noticeSeries(rows, rules, { mid: 'm1', network: 'visa', program: 'vamp', metric: 'count' });
    expect(s.months).toHaveLength(CHART_MONTHS);
    expect(s.months[0].month).toBe('2025-04');
    expect(s.months.at(-1)).toMatchObject({ month: '2026-04', ratio: 0.02, count: 20, partial: true, incomplete: true, projectedRatio: 0.03, projectedCount: 60 });
    const at = (m: string) => s.months.find((x) => x.month === m)!;
    expect(at('2026-03').thresholds).toEqual([{ level: 'excessive', rank: expect.any(Number), ratio: 0.022, minCount: 1500 }]);
    expect(at('2026-04').thresholds).toEqual([{ level: 'excessive', rank: expect.any(Number), ratio: 0.015, minCount: 1500 }]);
    expect(at('2025-05').thresholds).toEqual([]); // VAMP is in force from 2025-06
    expect(at('2025-05').ratio).toBeNull();
  });

  it('draws none for a notice whose series has no figures (the PNG itself: notifiers-email and -webhook tests)', async () => {
    const store = { all: async <T,>() => [] as T[], columns: async () => ({ length: 0, column: () => [] }), mapRows: async <T,>() => [] as T[] };
    expect(await noticeChart(store, rules, notice)).toBeNull();
  });

  it('leaves a chart that fails out, once per notice, with a warning naming the notice', async () => {
    const warnings: string[] = [];
    let reads = 0;
    const broken = {
      all: async <T,>(): Promise<T[]> => { reads++; throw new Error('snapshot gone'); },
      columns: async (): Promise<never> => { reads++; throw new Error('snapshot gone'); },
      mapRows: async (): Promise<never> => { reads++; throw new Error('snapshot gone'); },
    };
    const chartOf = noticeCharts(broken, rules, { warn: (_o, msg) => warnings.push(msg) });
    expect(await chartOf(notice)).toBeNull();
    expect(await chartOf(notice)).toBeNull();
    expect(reads).toBe(1);
    expect(warnings).toEqual([expect.stringMatching(/alert chart for m1 visa vamp not drawn \(the notice goes without it\): .*snapshot gone/)]);
  });

  it('checks PNG bytes by their header', () => {
    expect(pngSize(Buffer.from('not a png at all, not at all'))).toBeNull();
  });
});
