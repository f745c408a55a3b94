// trendChartSvg (report/trend.ts): one MID × program's monthly ratio against the thresholds in force each
// month, drawn as SVG by ECharts in Node. Checks what a reader relies on: a standalone SVG with no script and
// no external reference, the title, both axes' units, one threshold line per level that follows the rules in
// force (VAMP's step from 2.2 % to 1.5 % in 2026-04), the dashed projection, and the partial months named.
import { describe, expect, it } from 'vitest';
import { trendCaption, trendChartOption, trendChartSvg, type TrendMonth, type TrendSeries } from '../report/trend.ts';

/** A data item's value: the number itself, or the value of an item with its own label. */
const value = (d: unknown) => (typeof d === 'object' && d !== null ? (d as { value: unknown }).value : d);

function vampSeries(): TrendSeries {
  const months: TrendMonth[] = [];
  for (let i = 0; i < 13; i++) {
    const idx = 2025 * 12 + 3 + i; // 2025-04 .. 2026-04
    const month = `${Math.floor(idx / 12)}-${String((idx % 12) + 1).padStart(2, '0')}`;
    months.push({
      month,
      ratio: 0.008 + i * 0.0009,
      count: 900 + i * 60,
      partial: i === 12,
      incomplete: i === 11,
      projectedRatio: i === 12 ? 0.02 : undefined,
      projectedCount: i === 12 ? 1700 : undefined,
      thresholds: [{ level: 'excessive', rank: 3, ratio: month >= '2026-04' ? 0.015 : 0.022, minCount: 1500 }],
    });
  }
  return { mid: 'mid0001', network: 'visa', program: 'vamp', metric: 'count', months };
}

describe('trendChartSvg', () => {
  it('is a standalone SVG with a title, axes with units, and nothing to fetch or run', () => {
    const svg = trendChartSvg(vampSeries());
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('xmlns="http://www.w3.org/2000/svg"');
    expect(svg).toMatch(/width="760" height="340"/);
    expect(svg).toContain('mid0001 · Visa VAMP');
    expect(svg).toContain('ratio (%)');
    expect(svg).toContain('>count<');
    expect(svg).toContain('month (UTC)');
    expect(svg).toContain('1.5 %'); // an axis label in %
    expect(svg).not.toMatch(/<script|href="http|url\(http|<image/i);
  });

  it('draws the thresholds in force each month, the dashed projection, and marks the partial months', () => {
    const s = vampSeries();
    const option = trendChartOption(s) as { series: Array<{ name: string; data: unknown[]; lineStyle?: { type?: string } }> };
    const threshold = option.series.find((x) => x.name === 'excessive threshold')!;
    expect(threshold.data.map(value)).toEqual([...Array(12).fill(2.2), 1.5]);
    // Labelled where the line starts and where the threshold changes.
    expect(threshold.data.map((d) => (typeof d === 'object' && d !== null ? (d as { label: { formatter: string } }).label.formatter : null)).filter(Boolean))
      .toEqual(['excessive 2.2 %', 'excessive 1.5 %']);
    expect(threshold.lineStyle?.type).toBe('dashed');
    const projection = option.series.find((x) => x.name === 'projection')!;
    expect(projection.lineStyle?.type).toBe('dashed');
    expect(projection.data.slice(11)).toEqual([Number((s.months[11].ratio! * 100).toFixed(6)), 2]);
    expect(option.series.find((x) => x.name === 'min. count')!.data).toEqual(Array(13).fill(1500));
    const svg = trendChartSvg(s);
    expect(svg).toContain('TC40');
    expect(svg).toContain('to date');
    expect(svg).toContain('projected');
    expect(svg).toMatch(/stroke-dasharray/);
  });

  it('draws an open month as its projection on the line and its month to date as a mark of its own, and says the projection', () => {
    const s = vampSeries();
    // Over a previous month's denominator, a month's first days plunge its month to date (ECP 2.14 % -> 0.99 %).
    s.months[12] = { ...s.months[12], ratio: 0.0099, projectedRatio: 0.0214 };
    const option = trendChartOption(s) as { series: Array<{ name: string; type: string; data: unknown[] }> };
    const ratio = option.series.find((x) => x.name === 'ratio')!;
    expect(value(ratio.data[12])).toBeNull();
    expect(value(ratio.data[11])).not.toBeNull();
    const toDate = option.series.find((x) => x.name === 'month to date')!;
    expect(toDate.type).toBe('scatter');
    expect(toDate.data.map(value).filter((v) => v !== null)).toEqual([0.99]);
    expect(option.series.find((x) => x.name === 'projection')!.data[12]).toBe(2.14);
    expect(trendCaption(s)).toMatch(/2026-04: 2\.14 % projected to month end against excessive at 1\.5 %\.$/);
  });

  it('draws the forecast\'s 80 % interval as a band through the projection, its chance beside it, and says so', () => {
    const s = vampSeries();
    s.months[12] = { ...s.months[12], ratio: 0.0099, projectedRatio: 0.0214, band80: [0.0180, 0.0250], chance: 0.91, chanceLevel: 'excessive' };
    const option = trendChartOption(s) as { title: { subtext: string }; series: Array<{ name: string; markLine?: { data: Array<Array<{ coord: [string, number] }>>; label: { formatter: string } } }> };
    const band = option.series.find((x) => x.name === 'projection')!.markLine!;
    expect(band.data).toEqual([[{ coord: [s.months[12].month, 1.8] }, { coord: [s.months[12].month, 2.5] }]]);
    expect(band.label.formatter).toBe('91 % chance of excessive');
    expect(option.title.subtext).toContain('band: the forecast\'s 80 % interval');
    expect(trendCaption(s)).toMatch(/the forecast's 80 % interval 1\.8 %–2\.5 %, 91 % chance of excessive\.$/);
    expect(trendChartSvg(s)).toContain('91 % chance of excessive');
    // Without a forecast, no band.
    const plain = vampSeries();
    plain.months[12] = { ...plain.months[12], projectedRatio: 0.0214 };
    expect((trendChartOption(plain) as { series: Array<{ name: string; markLine?: unknown }> }).series.find((x) => x.name === 'projection')!.markLine).toBeUndefined();
  });

  it('leaves a gap where no rule of a level is in force, and has no projection for a closed month', () => {
    const s = vampSeries();
    s.months = s.months.slice(0, 11).map((m, i) => ({ ...m, partial: false, incomplete: false, thresholds: i < 3 ? [] : m.thresholds }));
    const option = trendChartOption(s) as { series: Array<{ name: string; data: unknown[] }> };
    expect(option.series.find((x) => x.name === 'excessive threshold')!.data.slice(0, 4).map(value)).toEqual([null, null, null, 2.2]);
    expect(option.series.some((x) => x.name === 'projection')).toBe(false);
    expect(trendCaption(s)).toMatch(/^Visa VAMP count ratio of mid0001 per month .*2026-02: 1\.7 % against excessive at 2\.2 %\.$/);
  });
});
