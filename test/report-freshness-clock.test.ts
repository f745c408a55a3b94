// The report's freshness chart judges the age of the newest data by the service's clock (the data's times are
// the service's), and the age of the last load by this machine's: after the demo, whose sandbox clock ended on
// 2026-01-15, the data is hours old, not 317 days.
import { describe, expect, it } from 'vitest';
import { freshnessChart } from '../report/charts.ts';

const rows = [{ source: 'chargebacks', newest_data: '2026-01-14T12:00:00Z', last_loaded_at: '2026-11-28T02:00:00Z', rows: 10 }];

describe('the freshness chart', () => {
  it("measures the newest data against the service's clock and the last load against this machine's", () => {
    const c = freshnessChart(rows, '2026-11-28T03:00:00Z', '2026-01-15T00:00:00Z');
    expect(c.svg).toContain('0.5 d');
    expect(c.svg).not.toContain('317.6 d');
    expect(c.svg).toContain('0.0 d'); // the last load, an hour ago by this machine's clock
    expect(c.svg).toMatch(/to the service(&#39;|&apos;|')s clock/);
  });

  it('without a service clock, measures both against when the report was made', () => {
    const c = freshnessChart(rows, '2026-11-28T03:00:00Z');
    expect(c.svg).toContain('317.6 d');
  });
});
