// One MID × network × program over its months: the monthly ratio, the thresholds of the rules in force each
// month (they change: VAMP's fell from 2.2 % to 1.5 % in 2026-04), the month to date's run-rate projection as
// a dashed line, the count beside its minimum, and the months whose figures are partial. Used by `cbp report`
// and by the alert notices (as SVG, or a PNG converted from this SVG).
import { COLOURS, count, pct, renderSvg, type EChartsOption } from './svg.ts';
import { chancePct } from '../rules/forecast.ts';

/** A level's threshold in force in one month. */
export interface TrendThreshold {
  /** the level's name (rules' `level`) */
  level: string;
  /** escalation order inside the program: a higher rank is the more severe level */
  rank: number;
  /** a fraction: 0.015 is 1.5 % */
  ratio: number;
  /** the smallest numerator count the level also needs (a numerator_count condition), or null */
  minCount: number | null;
}

export interface TrendMonth {
  /** YYYY-MM */
  month: string;
  /** the observed ratio (a fraction; month to date when partial), or null when there is none */
  ratio: number | null;
  /** the observed numerator count (disputes, fraud reports...) */
  count: number | null;
  /** the month is still open: its figures are month to date */
  partial: boolean;
  /** the numerator is known to be incomplete (TC40 fraud reports not yet captured for this month) */
  incomplete?: boolean;
  /** the run-rate projection of an open month to its end (a fraction), when there is one */
  projectedRatio?: number | null;
  projectedCount?: number | null;
  /** an open month's forecast: the 80 % interval of its month-end ratio (fractions), and its chance of chanceLevel */
  band80?: [number, number] | null;
  chance?: number | null;
  chanceLevel?: string | null;
  /** the thresholds of the rules in force this month (none: no rule of the program is in force) */
  thresholds: TrendThreshold[];
}

export interface TrendSeries {
  mid: string;
  network: string;
  program: string;
  /** the metric the ratio is of (count or amount) */
  metric: string;
  /** months in order, oldest first (the report uses the last 13) */
  months: TrendMonth[];
}

export interface TrendChartOptions {
  width?: number;
  height?: number;
  /** default: "<mid> · <network> <program>" */
  title?: string;
  /** a second title line; default: the metric and what the dashed line is */
  subtitle?: string;
}

const PROGRAM_NAMES: Record<string, string> = {
  // Said after the network's name ("Amex excessive chargebacks"), so the network is not repeated.
  vamp: 'VAMP', vdmp: 'VDMP', vfmp: 'VFMP', ecp: 'ECP', efm: 'EFM', discover_excessive: 'excessive disputes',
  amex_excessive: 'excessive chargebacks', monthly: 'monthly',
};
const NETWORK_NAMES: Record<string, string> = { visa: 'Visa', mastercard: 'Mastercard', discover: 'Discover', american_express: 'Amex' };

export const programName = (p: string) => PROGRAM_NAMES[p] ?? p;
export const networkName = (n: string) => NETWORK_NAMES[n] ?? n;

/** Levels that appear in any month, lowest rank first, each with its colour. */
function levelsOf(series: TrendSeries): Array<{ level: string; rank: number; colour: string }> {
  const byLevel = new Map<string, number>();
  for (const m of series.months) for (const t of m.thresholds) byLevel.set(t.level, Math.max(byLevel.get(t.level) ?? -Infinity, t.rank));
  const sorted = [...byLevel.entries()].sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]));
  const n = sorted.length;
  const palette = COLOURS.thresholds;
  return sorted.map(([level, rank], i) => ({ level, rank, colour: palette[Math.max(0, palette.length - n + i)] ?? palette[palette.length - 1] }));
}

const round = (v: number, digits = 6) => Number(v.toFixed(digits));

/** An open month's 80 % band, when its forecast gives one. */
const bandOf = (m: TrendMonth) => (m.band80 && m.band80.every(Number.isFinite) ? m.band80 : null);

/** "94 % chance of ECM" (the band's label), or "80 %" without a chance. */
function chanceLabel(m: TrendMonth): string {
  if (m.chance === null || m.chance === undefined || !m.chanceLevel) return '80 %';
  return `${chancePct(m.chance)} % chance of ${m.chanceLevel}`;
}

/** The ECharts option of a trend chart (exported for tests and for callers that want to adjust it). */
export function trendChartOption(series: TrendSeries, options: TrendChartOptions = {}): EChartsOption {
  const months = series.months.map((m) => m.month);
  const byMonth = new Map(series.months.map((m) => [m.month, m]));
  const levels = levelsOf(series);
  const open = series.months.findIndex((m) => m.projectedRatio !== undefined && m.projectedRatio !== null);
  const asPct = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? null : round(v * 100));
  const out: NonNullable<EChartsOption['series']> & unknown[] = [];

  // Counts first, so the lines are drawn over the bars.
  out.push({
    name: 'count', type: 'bar', yAxisIndex: 1, barMaxWidth: 22, z: 1,
    itemStyle: { color: COLOURS.count },
    // A partial month's bar is paler, with a border: dashed for a month to date, red for an incomplete numerator.
    data: series.months.map((m) => ({
      value: m.count,
      itemStyle: m.incomplete
        ? { color: COLOURS.countProjected, borderColor: COLOURS.level, borderWidth: 1.5 }
        : m.partial ? { color: COLOURS.countProjected, borderColor: COLOURS.count, borderType: 'dashed' as const, borderWidth: 1.5 } : undefined,
    })),
  });
  if (open >= 0) {
    out.push({
      name: 'projected count', type: 'bar', yAxisIndex: 1, barMaxWidth: 22, barGap: '-100%', z: 0,
      itemStyle: { color: 'rgba(0,0,0,0)', borderColor: COLOURS.count, borderType: 'dashed', borderWidth: 1.5 },
      data: series.months.map((m, i) => (i === open ? (m.projectedCount ?? null) : null)),
    });
  }
  // The minimum count of each level with one, as a dotted step line on the count axis.
  for (const l of levels) {
    const mins = series.months.map((m) => m.thresholds.find((t) => t.level === l.level)?.minCount ?? null);
    if (mins.every((v) => v === null)) continue;
    out.push({
      name: 'min. count', type: 'line', yAxisIndex: 1, step: 'middle', symbol: 'none', z: 2,
      lineStyle: { color: COLOURS.minCount, type: 'dotted', width: 1.5 },
      itemStyle: { color: COLOURS.minCount },
      data: mins,
    });
  }
  // The thresholds in force each month, one step line per level (a gap where no rule of the level is in force).
  for (const l of levels) {
    out.push({
      name: `${l.level} threshold`, type: 'line', step: 'middle', symbol: 'none', showSymbol: true, showAllSymbol: true, z: 3,
      lineStyle: { color: l.colour, type: 'dashed', width: 2 },
      itemStyle: { color: l.colour },
      // The level's name and threshold over the line where it starts (a change of threshold is labelled too).
      data: series.months.map((m, i) => {
        const v = asPct(m.thresholds.find((t) => t.level === l.level)?.ratio);
        const before = i > 0 ? asPct(series.months[i - 1].thresholds.find((t) => t.level === l.level)?.ratio) : null;
        return v !== null && v !== before
          ? { value: v, symbol: 'circle', symbolSize: 5, label: { show: true, position: 'top' as const, color: l.colour, fontSize: 10, formatter: `${l.level} ${pct(v, 3)}` } }
          : v;
      }),
    });
  }
  out.push({
    name: 'ratio', type: 'line', z: 5, symbol: 'circle', symbolSize: 6, connectNulls: false,
    lineStyle: { color: COLOURS.ratio, width: 2.5 },
    itemStyle: { color: COLOURS.ratio },
    // The open month's point is its projection (below); its month to date is a mark of its own, off the line: over a
    // previous month's denominator a month's first days would plunge it.
    data: series.months.map((m, i) => ({
      value: i === open ? null : asPct(m.ratio),
      // a hollow point: an incomplete numerator
      symbol: m.partial || m.incomplete ? 'emptyCircle' : 'circle',
    })),
  });
  if (open >= 0 && series.months[open].ratio !== null) {
    out.push({
      name: 'month to date', type: 'scatter', z: 5, symbol: 'emptyCircle', symbolSize: 7,
      itemStyle: { color: COLOURS.ratio, opacity: 0.7 },
      data: series.months.map((m, i) => (i === open ? asPct(m.ratio) : null)),
    });
  }
  if (open >= 0) {
    // Dashed from the last closed month's ratio (else the month to date) to the projection at month end.
    const from = open > 0 && series.months[open - 1].ratio !== null ? open - 1 : open;
    out.push({
      name: 'projection', type: 'line', z: 6, symbol: 'diamond', symbolSize: 9,
      lineStyle: { color: COLOURS.projection, type: 'dashed', width: 2 },
      itemStyle: { color: '#ffffff', borderColor: COLOURS.projection, borderWidth: 2 },
      data: series.months.map((m, i) =>
        i === open ? asPct(m.projectedRatio) : i === from ? asPct(series.months[from].ratio) : null),
      label: {
        show: true, position: 'left', distance: 8, color: COLOURS.projection, fontSize: 11,
        formatter: (p: { dataIndex: number; value: unknown }) => (p.dataIndex === open && typeof p.value === 'number' ? `${pct(p.value)} projected` : ''),
      },
      // The forecast's 80 % interval of the month-end ratio, as a band through the projection, its chance beside it.
      ...(bandOf(series.months[open]) ? {
        markLine: {
          silent: true, symbol: 'none', z: 4,
          lineStyle: { color: COLOURS.projection, type: 'solid', width: 12, opacity: 0.25 },
          label: { show: true, position: 'end', color: COLOURS.projection, fontSize: 10, formatter: chanceLabel(series.months[open]) },
          data: [[{ coord: [months[open], asPct(bandOf(series.months[open])![0])] }, { coord: [months[open], asPct(bandOf(series.months[open])![1])] }]],
        },
      } : {}),
    });
  }

  const title = options.title ?? `${series.mid} · ${networkName(series.network)} ${programName(series.program)}`;
  const band = open >= 0 && bandOf(series.months[open]) ? '; band: the forecast\'s 80 % interval' : '';
  const subtitle = options.subtitle ?? `${series.metric} ratio, monthly${open >= 0 ? `; dashed: run-rate projection to month end${band}` : ''}`;
  const legend = [...new Set(out.map((s) => (s as { name: string }).name))];
  const width = options.width ?? 760;
  // Rows the legend takes (about 6 px a character at 11 px, plus the symbol and the gap), so the plot starts below it.
  const rows = Math.max(1, Math.ceil(legend.reduce((w, n) => w + n.length * 6 + 36, 0) / (width - 16)));
  return {
    title: { text: title, subtext: subtitle, left: 8, top: 4, textStyle: { fontSize: 14 }, subtextStyle: { fontSize: 11, color: '#555' } },
    legend: { data: legend, top: 46, left: 8, right: 8, itemWidth: 18, itemHeight: 9, itemGap: 8, textStyle: { fontSize: 11 } },
    grid: { left: 62, right: 62, top: 78 + rows * 20, bottom: 70 },
    xAxis: {
      type: 'category', data: months, name: 'month (UTC)', nameLocation: 'middle', nameGap: 52,
      // Every month labelled; a partial one says why under its name.
      axisLabel: {
        fontSize: 10, interval: 0,
        formatter: (v: string) => {
          const m = byMonth.get(v);
          return m?.incomplete ? `${v}\n{warn|TC40}\n{warn|partial}` : m?.partial ? `${v}\n{note|month}\n{note|to date}` : v;
        },
        rich: { warn: { color: '#a02020', fontSize: 10 }, note: { color: '#555', fontSize: 10 } },
      },
    },
    yAxis: [
      {
        type: 'value', name: 'ratio (%)', nameLocation: 'middle', nameGap: 46, min: 0,
        axisLabel: { formatter: (v: number) => `${Number(v.toFixed(3))} %` },
      },
      {
        type: 'value', name: 'count', nameLocation: 'middle', nameGap: 44, min: 0, minInterval: 1, splitLine: { show: false },
        axisLabel: { formatter: (v: number) => count(v) },
      },
    ],
    series: out as EChartsOption['series'],
  };
}

/**
 * The trend chart of one series as a standalone SVG document (default 760 × 340). Pure: the same series gives
 * the same SVG, apart from the element ids ECharts numbers per chart drawn in the process.
 */
export function trendChartSvg(series: TrendSeries, options: TrendChartOptions = {}): string {
  return renderSvg(trendChartOption(series, options), { width: options.width ?? 760, height: options.height ?? 340 });
}

/** One sentence saying what a trend chart shows, for a caption or an image's alt text. */
export function trendCaption(series: TrendSeries): string {
  // An open month is told by its projection (its month to date is a part of the month, not its ratio).
  const last = [...series.months].reverse().find((m) => (m.projectedRatio ?? m.ratio) !== null && (m.projectedRatio ?? m.ratio) !== undefined);
  const top = last?.thresholds.length ? last.thresholds.reduce((a, b) => (b.rank > a.rank ? b : a)) : undefined;
  const lowest = last?.thresholds.length ? last.thresholds.reduce((a, b) => (b.rank < a.rank ? b : a)) : undefined;
  const shown = last ? (last.projectedRatio ?? last.ratio) : null;
  const where = last && shown !== null && shown !== undefined
    ? `${last.month}: ${pct(shown * 100, 3)}${last.projectedRatio != null ? ' projected to month end' : ''}${lowest ? ` against ${lowest.level} at ${pct(lowest.ratio * 100, 3)}${top && top !== lowest ? ` and ${top.level} at ${pct(top.ratio * 100, 3)}` : ''}` : ''}`
    : 'no ratio yet';
  const band = last && bandOf(last) ? `; the forecast's 80 % interval ${pct(last.band80![0] * 100, 3)}–${pct(last.band80![1] * 100, 3)}${last.chance != null && last.chanceLevel ? `, ${chanceLabel(last)}` : ''}` : '';
  return `${networkName(series.network)} ${programName(series.program)} ${series.metric} ratio of ${series.mid} per month against the thresholds in force each month, with the count beside its minimum (bars, right axis); ${where}${band}.`;
}
