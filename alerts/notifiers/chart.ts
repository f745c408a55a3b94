// The trend chart a notice carries: the MID × network × program that fired, its last 13 months as the store has
// them at delivery time (the kept ratio table, mart_ratios: the rows `cbp ratios` reads), the thresholds of the rules
// in force each month, drawn by report/trend.ts trendChartSvg (the chart `cbp report` shows) and converted to PNG
// (png.ts). A chart that cannot be drawn never holds a notice back: the notice goes without it.
import type { Notice } from '../../store/alerts.ts';
import type { NoticeChart } from './types.ts';
import type { RatioRow } from '../../contract/ratios.ts';
import type { RuleSet } from '../../rules/thresholds.ts';
import type { QueryStore } from '../../store/ratios.ts';
import { martRatioRowsOf } from '../../store/ratios-shown.ts';
import { addMonths } from '../../lib/utc.ts';
import { rulesFor } from '../../rules/rule-set.ts';
import { trendCaption, trendChartSvg, type TrendSeries } from '../../report/trend.ts';
import { trendSeriesOf } from '../../report/model.ts';
import { svgToPng } from './png.ts';

/** Months a notice's chart shows, as the report's trends do. */
export const CHART_MONTHS = 13;
/** The chart's CSS size (the PNG is twice that). */
export const CHART_SIZE = { width: 760, height: 340 } as const;

/**
 * The series of one MID × network × program × metric from ratio rows (actual and projected), ending at the
 * latest month the rows have (or `endMonth`, when later), `months` long: the report's own series
 * (report/model.ts trendSeriesOf), with the thresholds of the rules in force for the MID each month.
 */
export function noticeSeries(
  rows: readonly RatioRow[],
  rules: RuleSet,
  key: { mid: string; network: string; program: string; metric: string },
  opts: { endMonth?: string; months?: number } = {},
): TrendSeries {
  const last = rows.reduce((m, r) => (r.mid === key.mid && r.network === key.network && r.program === key.program && r.metric === key.metric && r.month > m ? r.month : m), opts.endMonth ?? '');
  const n = opts.months ?? CHART_MONTHS;
  const months: string[] = [];
  for (let i = n - 1; i >= 0 && last; i--) months.push(addMonths(last, -i));
  return trendSeriesOf(rows, key, months, rulesFor(rules, key.mid));
}

/** The notice's chart from the store as it is now, or null when the store has no figures for its series. */
export async function noticeChart(store: QueryStore, rules: RuleSet, n: Notice): Promise<NoticeChart | null> {
  // A representment deadline has no ratio series to draw (alerts/due.ts).
  if (n.kind === 'due') return null;
  const rows = await martRatioRowsOf(store, n.mid);
  const metric = n.metric ?? rows.find((r) => r.network === n.network && r.program === n.program)?.metric;
  if (!metric) return null;
  const series = noticeSeries(rows, rules, { mid: n.mid, network: n.network, program: n.program, metric }, { endMonth: n.month });
  if (!series.months.some((m) => m.ratio !== null || m.projectedRatio != null)) return null;
  const svg = trendChartSvg(series, CHART_SIZE);
  const png = svgToPng(svg, { scale: 2 });
  return {
    ...png,
    cssWidth: CHART_SIZE.width,
    cssHeight: CHART_SIZE.height,
    caption: trendCaption(series),
    filename: `cbp-${n.mid}-${n.network}-${n.program}-${n.month}.png`.replace(/[^A-Za-z0-9._-]/g, '_'),
  };
}

/**
 * The charts of one delivery run: each notice's drawn once, when a notifier first asks, and shared by the
 * others; a chart that fails is logged and left out.
 */
export function noticeCharts(
  store: QueryStore,
  rules: RuleSet,
  logger?: { warn: (obj: object, msg: string) => void },
): (n: Notice) => Promise<NoticeChart | null> {
  const drawn = new Map<string, Promise<NoticeChart | null>>();
  return (n) => {
    let p = drawn.get(n.notice_id);
    if (!p) {
      p = noticeChart(store, rules, n).catch((e: unknown) => {
        logger?.warn({ notice: n.notice_id, err: (e as Error).message }, `alert chart for ${n.mid} ${n.network} ${n.program} not drawn (the notice goes without it): ${(e as Error).message}`);
        return null;
      });
      drawn.set(n.notice_id, p);
    }
    return p;
  };
}
