// The report's charts besides the trends: the portfolio heat map, the disputes' charts and the data quality's,
// each an ECharts option rendered to SVG by svg.ts. Every chart has a title, axes named with their units, and
// the caption the HTML puts under it.
import type { FreshnessRow, MatchRateRow, OrderAgeRow, QuarantineRow, ReasonCodeRow, StatusMonthRow, WinRateRow } from '../store/report.ts';
import type { HeatKind, HeatRow } from './model.ts';
import { toDateMark, type ShownMonth } from './months.ts';
import { COLOURS, count, pct, renderSvg, type EChartsOption } from './svg.ts';
import { networkName } from './trend.ts';

/** A rendered chart: its SVG, what kind it is, and the one-sentence caption shown under it. */
export interface Chart {
  kind: string;
  title: string;
  svg: string;
  caption: string;
  /** extra data-* attributes of the figure (what the browser test counts) */
  attrs?: Record<string, string | number>;
}

const title = (text: string, subtext?: string) => ({
  text, subtext, left: 8, top: 4, textStyle: { fontSize: 14 }, subtextStyle: { fontSize: 11, color: '#555' },
});
const money = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 0 });
const r6 = (v: number) => Number(v.toFixed(6));

/** The heat map's colours by what a cell shows; "ratio_only" and "unknown" are no level's colour. */
export const HEAT_COLOURS: Record<HeatKind, string> = {
  clear: '#c8e6c9', watch: '#ffe082', over: '#ef9a9a', far_over: '#e53935', ratio_only: '#90caf9', unknown: '#bdbdbd',
};
const HEAT_ORDER: HeatKind[] = ['clear', 'watch', 'over', 'far_over', 'ratio_only', 'unknown'];
// Stripes over a cell: dark on an unknown one, pale over a month to date's.
const STRIPES = (colour: string, rotation: number) => ({ symbol: 'rect', dashArrayX: [1, 0], dashArrayY: [2, 3], rotation, color: colour });
const UNKNOWN_DECAL = STRIPES('rgba(0,0,0,0.28)', -Math.PI / 4);
const TO_DATE_DECAL = STRIPES('rgba(255,255,255,0.7)', Math.PI / 4);

export interface HeatMapOptions {
  /** the months that are month to date: their columns are hatched and marked "MTD d/n d" */
  toDate?: ShownMonth[];
  /** the watch band's fraction (default 0.8) */
  watchFraction?: number;
}

/** MIDs × months, each cell the ratio ÷ entry threshold of the most severe program in force, coloured by what it shows. */
export function heatMapChart(rows: HeatRow[], allMonths: string[], leftOut: number, opts: HeatMapOptions = {}): Chart {
  const toDate = new Map((opts.toDate ?? []).map((m) => [m.month, m]));
  const w = Math.round((opts.watchFraction ?? 0.8) * 100);
  // From the first month any MID has a cell in, as the trends start at their first figures.
  const first = Math.max(0, allMonths.findIndex((_, i) => rows.some((r) => r.kinds[i] !== null)));
  const months = allMonths.slice(first);
  const data: unknown[] = [];
  rows.forEach((r, y) => r.cells.slice(first).forEach((c, x) => {
    const kind = r.kinds[x + first];
    if (kind === null) return;
    const value = [x, y, c === null ? 0 : r6(c * 100), HEAT_ORDER.indexOf(kind)];
    const decal = kind === 'unknown' ? UNKNOWN_DECAL : toDate.has(months[x]) ? TO_DATE_DECAL : undefined;
    data.push(decal ? { value, itemStyle: { decal } } : value);
  }));
  const width = 1000;
  const legendLeft = width - 250;
  const height = Math.max(330, 160 + Math.max(3, rows.length) * 22);
  const labels: Record<HeatKind, string> = {
    clear: `clear (under ${w} %)`, watch: `watch (${w}-100 %)`, over: 'over, conditions met (100-150 %)',
    far_over: 'far over, conditions met (150 % +)', ratio_only: 'ratio over, count/amount not met', unknown: 'unknown: a source not loaded (striped)',
  };
  const hatch = [0, 5, 10].map((d) => ({ type: 'line', shape: { x1: d, y1: 10, x2: d + 5, y2: 0 }, style: { stroke: '#ffffff', lineWidth: 1.5 } }));
  const option: EChartsOption = {
    title: title('Portfolio: ratio ÷ entry threshold of the tightest program', 'MIDs × months; each cell: the ratio as % of the entry threshold in force that month (100 % or more: at or over it)'),
    grid: { left: 110, right: width - legendLeft + 16, top: 70, bottom: 60 },
    xAxis: {
      type: 'category', data: months, name: 'month (UTC)', nameLocation: 'middle', nameGap: 40, splitArea: { show: false },
      axisLabel: {
        fontSize: 10, interval: 0,
        formatter: (v: string) => (toDate.has(v) ? `${v}\n{mtd|${toDateMark(toDate.get(v)!)}}` : v),
        rich: { mtd: { color: '#8a5a00', fontSize: 9, fontWeight: 'bold' } },
      },
    },
    yAxis: { type: 'category', data: rows.map((r) => r.mid), inverse: true, axisLabel: { fontSize: 10, interval: 0 } },
    visualMap: {
      type: 'piecewise', dimension: 3, orient: 'vertical', inverse: true, align: 'left', left: legendLeft, top: toDate.size ? 92 : 70,
      itemWidth: 14, itemHeight: 10, itemGap: 8, textStyle: { fontSize: 11 },
      pieces: HEAT_ORDER.map((k, i) => ({ value: i, label: labels[k], color: HEAT_COLOURS[k] })),
      outOfRange: { color: '#eeeeee' },
    },
    // The month to date's legend entry, above the visual map's: a hatched swatch (the visual map has no pattern of its own).
    graphic: toDate.size ? [{
      type: 'group', left: legendLeft, top: 70,
      children: [
        { type: 'rect', shape: { x: 0, y: 0, width: 14, height: 10 }, style: { fill: '#b0b0b0' } }, ...hatch,
        { type: 'text', x: 19, y: 0, style: { text: 'MTD: month to date (hatched)', fontSize: 11, fill: '#333' } },
      ],
    }] as never : undefined,
    series: [{
      type: 'heatmap', data: data as never, itemStyle: { borderColor: '#ffffff', borderWidth: 1 },
      label: { show: rows.length <= 40, fontSize: 9, color: '#222', formatter: (p: { value: unknown }) => {
        const [, , v, k] = p.value as number[];
        if (HEAT_ORDER[k] === 'unknown') return v ? `${Math.round(v)}?` : '?';
        return typeof v === 'number' ? String(Math.round(v)) : '';
      } },
    }],
  };
  const open = [...toDate.values()];
  return {
    kind: 'heatmap', title: 'Portfolio heat map', svg: renderSvg(option, { width, height }),
    caption: `How close each MID came to the entry threshold of its tightest monitoring program each month (ratio ÷ threshold, in %), the ${rows.length} MIDs closest in the latest month${leftOut ? `; ${leftOut} more MID${leftOut === 1 ? '' : 's'} left out` : ''}. ` +
      `Red only where the level's count and amount conditions are met too; blue: the ratio is over but they are not; grey, striped: unknown (a source not loaded)${open.length ? `; hatched, marked MTD: ${open.map((m) => `${m.month} is month to date (${toDateMark(m)})`).join(', ')}, its ratio still moving` : ''}.`,
    attrs: { mids: rows.length, 'month-to-date': open.map((m) => m.month).join(' ') },
  };
}

/** Pareto of reason codes of one network: the top codes by cases or amount, and the cumulative share. */
export function paretoChart(network: string, rows: ReasonCodeRow[], by: 'cases' | 'amount', top = 10): Chart {
  const sorted = [...rows].sort((a, b) => b[by] - a[by] || a.reason_code.localeCompare(b.reason_code));
  const head = sorted.slice(0, top);
  const rest = sorted.slice(top);
  const bars = head.map((r) => ({ code: r.reason_code, value: r[by] }));
  if (rest.length) bars.push({ code: `other (${rest.length})`, value: rest.reduce((s, r) => s + r[by], 0) });
  const total = bars.reduce((s, b) => s + b.value, 0);
  let run = 0;
  const cumulative = bars.map((b) => { run += b.value; return total > 0 ? r6((run / total) * 100) : 0; });
  const unit = by === 'cases' ? 'chargebacks (count)' : 'amount (reporting currency)';
  const option: EChartsOption = {
    title: title(`${networkName(network)}: reason codes by ${by === 'cases' ? 'count' : 'amount'}`, 'bars: each code; line: cumulative share'),
    grid: { left: 70, right: 56, top: 64, bottom: 64 },
    xAxis: { type: 'category', data: bars.map((b) => b.code), name: 'reason code', nameLocation: 'middle', nameGap: 40, axisLabel: { fontSize: 10, interval: 0, rotate: bars.length > 6 ? 30 : 0 } },
    yAxis: [
      { type: 'value', name: unit, nameLocation: 'middle', nameGap: 52, min: 0, minInterval: 1, axisLabel: { formatter: (v: number) => (by === 'cases' ? count(v) : money(v)) } },
      { type: 'value', name: 'cumulative (%)', nameLocation: 'middle', nameGap: 40, min: 0, max: 100, splitLine: { show: false }, axisLabel: { formatter: (v: number) => `${v} %` } },
    ],
    series: [
      { name: unit, type: 'bar', data: bars.map((b) => b.value), itemStyle: { color: by === 'cases' ? '#5c8fc7' : '#7aa874' }, barMaxWidth: 36 },
      { name: 'cumulative share', type: 'line', yAxisIndex: 1, data: cumulative, itemStyle: { color: '#333' }, lineStyle: { color: '#333' }, symbolSize: 5 },
    ],
  };
  const lead = head[0];
  return {
    kind: 'pareto', title: `${networkName(network)} reason codes by ${by}`, svg: renderSvg(option, { width: 440, height: 300 }),
    caption: lead
      ? `${networkName(network)} chargebacks received in the period by reason code, ${by === 'cases' ? 'counted' : 'by amount'}: ${lead.reason_code}${lead.reason ? ` (${lead.reason})` : ''} leads with ${total > 0 ? pct((lead[by] / total) * 100, 1) : '0 %'} of the ${by === 'cases' ? count(total) + ' cases' : money(total) + ' total'}.`
      : `No ${networkName(network)} chargebacks were received in the period.`,
    attrs: { network, by },
  };
}

/** Fewer decided cases than this make a win rate a hollow point with its n: too few to read much into. */
export const FEW_DECIDED = 10;
const FEW_LABEL = `fewer than ${FEW_DECIDED} decided (hollow, n = decided)`;

/** Win rate (won ÷ decided) per network and month received; a rate of few decided cases hollow, with its n. */
export function winRateChart(rows: WinRateRow[], months: string[]): Chart {
  const networks = [...new Set(rows.map((r) => r.network))].sort();
  const few = rows.filter((r) => r.win_rate !== null && r.won + r.lost < FEW_DECIDED && months.includes(r.month));
  const option: EChartsOption = {
    title: title('Win rate by network and month', 'won ÷ (won + lost) of the chargebacks received that month; open cases left out'),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 }, data: [...networks.map(networkName), ...(few.length ? [{ name: FEW_LABEL, icon: 'emptyCircle' }] : [])] },
    grid: { left: 60, right: 24, top: 80, bottom: 44 },
    xAxis: { type: 'category', data: months, name: 'month received (UTC)', nameLocation: 'middle', nameGap: 28, axisLabel: { fontSize: 10 } },
    yAxis: { type: 'value', name: 'win rate (%)', nameLocation: 'middle', nameGap: 44, min: 0, max: 100, axisLabel: { formatter: (v: number) => `${v} %` } },
    series: networks.map((n, i) => ({
      // Filled points; a rate of few decided cases hollow (ECharts' default symbol is hollow: set apart here).
      name: networkName(n), type: 'line', connectNulls: false, symbol: 'circle', symbolSize: 6, labelLayout: { moveOverlap: 'shiftY' },
      itemStyle: { color: COLOURS.networks[i % COLOURS.networks.length] }, lineStyle: { color: COLOURS.networks[i % COLOURS.networks.length] },
      data: months.map((m) => {
        const r = rows.find((x) => x.network === n && x.month === m);
        if (r?.win_rate === null || r?.win_rate === undefined) return null;
        const decided = r.won + r.lost;
        return decided < FEW_DECIDED
          ? { value: r6(r.win_rate * 100), symbol: 'emptyCircle', symbolSize: 9, label: { show: true, position: 'right' as const, fontSize: 9, color: COLOURS.networks[i % COLOURS.networks.length], formatter: `n=${decided}` } }
          : r6(r.win_rate * 100);
      }),
    })),
  };
  // A legend entry for the hollow points (a series with no data of its own).
  if (few.length) (option.series as unknown[]).push({ name: FEW_LABEL, type: 'line', data: [], symbol: 'emptyCircle', itemStyle: { color: '#555' } });
  const decided = rows.reduce((s, r) => s + r.won + r.lost, 0);
  const won = rows.reduce((s, r) => s + r.won, 0);
  return {
    kind: 'win-rate', title: 'Win rate by network and month', svg: renderSvg(option, { width: 900, height: 320 }),
    caption: `The share of decided chargebacks won, per network and month received: ${decided ? `${pct((won / decided) * 100, 1)} overall (${count(won)} of ${count(decided)} decided)` : 'none decided yet'}` +
      `${few.length ? `; hollow points, labelled n=: fewer than ${FEW_DECIDED} cases decided (few cases), a rate that can swing on one case` : ''}.`,
  };
}

/** Chargebacks received each month, stacked by the status they have now. */
export function statusChart(rows: StatusMonthRow[], months: string[], statuses: readonly string[]): Chart {
  const present = statuses.filter((s) => rows.some((r) => r.status === s));
  const option: EChartsOption = {
    title: title('Statuses over time', 'chargebacks received each month, by the status they have now'),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 64, right: 24, top: 80, bottom: 44 },
    xAxis: { type: 'category', data: months, name: 'month received (UTC)', nameLocation: 'middle', nameGap: 28, axisLabel: { fontSize: 10 } },
    yAxis: { type: 'value', name: 'chargebacks (count)', nameLocation: 'middle', nameGap: 48, min: 0, minInterval: 1, axisLabel: { formatter: (v: number) => count(v) } },
    series: present.map((s) => ({
      name: s, type: 'bar', stack: 'status', barMaxWidth: 40, itemStyle: { color: COLOURS.statuses[s] ?? '#999' },
      data: months.map((m) => rows.find((r) => r.month === m && r.status === s)?.cases ?? 0),
    })),
  };
  const open = rows.filter((r) => r.status === 'New' || r.status === 'Pending').reduce((s, r) => s + r.cases, 0);
  const total = rows.reduce((s, r) => s + r.cases, 0);
  return {
    kind: 'statuses', title: 'Statuses over time', svg: renderSvg(option, { width: 900, height: 320 }),
    caption: `How the ${count(total)} chargebacks received each month stand now (New, Pending, Won, Lost, Did Not Fight; Pre-Arbitration and Result Unobtainable as Other): ${count(open)} still open.`,
  };
}

/** Chargebacks by order age (days from the transaction to receipt), with the win rate of each bucket. */
export function orderAgeChart(rows: OrderAgeRow[]): Chart {
  const option: EChartsOption = {
    title: title('Disputes by order age', 'days from the transaction to the chargeback\'s receipt'),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 64, right: 56, top: 80, bottom: 44 },
    xAxis: { type: 'category', data: rows.map((r) => r.order_age), name: 'order age (days)', nameLocation: 'middle', nameGap: 28 },
    yAxis: [
      { type: 'value', name: 'chargebacks (count)', nameLocation: 'middle', nameGap: 48, min: 0, minInterval: 1, axisLabel: { formatter: (v: number) => count(v) } },
      { type: 'value', name: 'win rate (%)', nameLocation: 'middle', nameGap: 40, min: 0, max: 100, splitLine: { show: false }, axisLabel: { formatter: (v: number) => `${v} %` } },
    ],
    series: [
      { name: 'chargebacks', type: 'bar', barMaxWidth: 48, itemStyle: { color: '#5c8fc7' }, data: rows.map((r) => r.cases) },
      { name: 'win rate', type: 'line', yAxisIndex: 1, itemStyle: { color: COLOURS.clear }, lineStyle: { color: COLOURS.clear },
        data: rows.map((r) => (r.won + r.lost > 0 ? r6((r.won / (r.won + r.lost)) * 100) : null)) },
    ],
  };
  const top = rows.reduce<OrderAgeRow | null>((a, r) => (!a || r.cases > a.cases ? r : a), null);
  const total = rows.reduce((s, r) => s + r.cases, 0);
  return {
    kind: 'order-age', title: 'Disputes by order age', svg: renderSvg(option, { width: 900, height: 300 }),
    caption: top ? `Chargebacks by days from the transaction to receipt, with the win rate of each bucket: most (${pct((top.cases / total) * 100, 1)}) arrive ${top.order_age === '(unknown)' ? 'with no known order age' : `at ${top.order_age}`}.` : 'No chargebacks in the period.',
  };
}

/** Report–event match rates: the share of report rows with an event, and of event cases with a report row. */
export function matchRateChart(rows: MatchRateRow[]): Chart {
  const entities = rows.map((r) => r.entity);
  const option: EChartsOption = {
    title: title('Report–event match rates', 'share of report rows with an event, and of event cases with a report row'),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 100, right: 40, top: 80, bottom: 44 },
    xAxis: { type: 'value', name: 'matched (%)', nameLocation: 'middle', nameGap: 28, min: 0, max: 100, axisLabel: { formatter: (v: number) => `${v} %` } },
    yAxis: { type: 'category', data: entities },
    series: [
      { name: 'report rows with an event', type: 'bar', itemStyle: { color: '#5c8fc7' }, label: { show: true, position: 'right', fontSize: 10, formatter: (p: { value: unknown }) => (typeof p.value === 'number' ? pct(p.value, 1) : 'no rows') },
        data: rows.map((r) => (r.report_match_rate === null ? null : r6(r.report_match_rate * 100))) },
      { name: 'event cases with a report row', type: 'bar', itemStyle: { color: '#7aa874' }, label: { show: true, position: 'right', fontSize: 10, formatter: (p: { value: unknown }) => (typeof p.value === 'number' ? pct(p.value, 1) : 'no events') },
        data: rows.map((r) => (r.event_match_rate === null ? null : r6(r.event_match_rate * 100))) },
    ],
  };
  const cb = rows.find((r) => r.entity === 'chargebacks');
  return {
    kind: 'match-rates', title: 'Report–event match rates', svg: renderSvg(option, { width: 900, height: 240 }),
    caption: cb
      ? `How well the reports and the pushed events find each other: ${count(cb.report_rows_matched)} of ${count(cb.report_rows)} chargeback report rows have an event, ${count(cb.event_cases_matched)} of ${count(cb.event_cases)} chargeback event cases a report row.`
      : 'How well the reports and the pushed events find each other.',
  };
}

/** Quarantined rows by report kind and reason. */
export function quarantineChart(rows: QuarantineRow[], top = 12): Chart {
  const shown = rows.slice(0, top);
  const labels = shown.map((r) => `${r.kind}: ${r.reason.length > 48 ? `${r.reason.slice(0, 47)}…` : r.reason}`);
  const option: EChartsOption = {
    title: title('Quarantine by reason', 'rows that failed validation, per report kind and first reason'),
    grid: { left: 330, right: 50, top: 60, bottom: 44 },
    xAxis: { type: 'value', name: 'rows (count)', nameLocation: 'middle', nameGap: 28, min: 0, minInterval: 1, axisLabel: { formatter: (v: number) => count(v) } },
    yAxis: { type: 'category', data: labels, inverse: true, axisLabel: { fontSize: 10, width: 320, overflow: 'truncate' } },
    series: [{ name: 'rows', type: 'bar', itemStyle: { color: '#b0713f' }, barMaxWidth: 18, label: { show: true, position: 'right', fontSize: 10 }, data: shown.map((r) => r.rows) }],
  };
  const total = rows.reduce((s, r) => s + r.rows, 0);
  return {
    kind: 'quarantine', title: 'Quarantine by reason', svg: renderSvg(option, { width: 900, height: Math.max(200, 110 + shown.length * 24) }),
    caption: `${count(total)} quarantined row${total === 1 ? '' : 's'} kept apart with their reason (the quarantine table holds each row as read)${rows.length > top ? `; the ${top} most frequent of ${rows.length} reasons shown` : ''}.`,
  };
}

/**
 * Age of the newest data of each source, in days before the report was made: by the service's clock (serviceNow,
 * when known: the data's times are the service's), and the last load's by this machine's (generatedAt).
 */
export function freshnessChart(rows: FreshnessRow[], generatedAt: string, serviceNow: string = generatedAt): Chart {
  const ageAt = (at: number) => (iso: string | null) => (iso === null ? null : r6(Math.max(0, (at - Date.parse(iso)) / 86_400_000)));
  const dataAge = ageAt(Date.parse(serviceNow));
  const age = ageAt(Date.parse(generatedAt));
  const option: EChartsOption = {
    title: title('Freshness of each source', serviceNow === generatedAt ? 'days from the newest data, and from the last load, to when this report was made' : "days from the newest data to the service's clock, and from the last load to this machine's, when this report was made"),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 100, right: 60, top: 80, bottom: 44 },
    xAxis: { type: 'value', name: 'age (days)', nameLocation: 'middle', nameGap: 28, min: 0 },
    yAxis: { type: 'category', data: rows.map((r) => r.source), inverse: true },
    series: [
      { name: 'newest data', type: 'bar', itemStyle: { color: '#5c8fc7' }, label: { show: true, position: 'right', fontSize: 10, formatter: (p: { value: unknown }) => (typeof p.value === 'number' ? `${p.value.toFixed(1)} d` : 'none') },
        data: rows.map((r) => dataAge(r.newest_data)) },
      { name: 'last load', type: 'bar', itemStyle: { color: '#9e9e9e' }, label: { show: true, position: 'right', fontSize: 10, formatter: (p: { value: unknown }) => (typeof p.value === 'number' ? `${p.value.toFixed(1)} d` : 'none') },
        data: rows.map((r) => age(r.last_loaded_at)) },
    ],
  };
  const stalest = rows.filter((r) => r.newest_data !== null).reduce<FreshnessRow | null>((a, r) => (!a || Date.parse(r.newest_data!) < Date.parse(a.newest_data!) ? r : a), null);
  return {
    kind: 'freshness', title: 'Freshness of each source', svg: renderSvg(option, { width: 900, height: 260 }),
    caption: stalest
      ? `How old each source's newest data and last load are when this report was made: the stalest is ${stalest.source}, newest data ${stalest.newest_data}.`
      : 'No source holds data yet.',
  };
}
