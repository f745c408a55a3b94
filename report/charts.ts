// The report's charts besides the trends: the portfolio heat map, the disputes' charts and the data quality's,
// each an ECharts option rendered to SVG by svg.ts. Every chart has a title, axes named with their units, and
// the caption the HTML puts under it.
import type { FreshnessRow, MatchRateRow, OrderAgeRow, QuarantineRow, ReasonCodeRow, StatusMonthRow, WinRateRow } from '../store/report.ts';
import type { HeatRow } from './model.ts';
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

/** MIDs × months, each cell the largest ratio ÷ entry threshold over the programs in force. */
export function heatMapChart(rows: HeatRow[], months: string[], leftOut: number): Chart {
  const data: Array<[number, number, number | string]> = [];
  rows.forEach((r, y) => r.cells.forEach((c, x) => data.push([x, y, c === null ? '-' : r6(c * 100)])));
  const height = 160 + Math.max(3, rows.length) * 22;
  const option: EChartsOption = {
    title: title('Portfolio: ratio ÷ threshold of the tightest program', 'MIDs × months; each cell: the ratio as % of the entry threshold in force that month (100 % or more: at or over it)'),
    grid: { left: 110, right: 24, top: 70, bottom: 84 },
    xAxis: { type: 'category', data: months, name: 'month (UTC)', nameLocation: 'middle', nameGap: 26, splitArea: { show: false }, axisLabel: { fontSize: 10 } },
    yAxis: { type: 'category', data: rows.map((r) => r.mid), inverse: true, axisLabel: { fontSize: 10, interval: 0 } },
    visualMap: {
      type: 'piecewise', orient: 'horizontal', left: 'center', bottom: 4, itemWidth: 14, itemHeight: 10, textStyle: { fontSize: 11 },
      pieces: [
        { lt: 80, label: 'clear (under 80 %)', color: '#c8e6c9' },
        { gte: 80, lt: 100, label: 'watch (80-100 %)', color: '#ffe082' },
        { gte: 100, lt: 150, label: 'over (100-150 %)', color: '#ef9a9a' },
        { gte: 150, label: 'far over (150 % +)', color: '#e53935' },
      ],
      outOfRange: { color: '#eeeeee' },
    },
    series: [{
      type: 'heatmap', data: data as never, itemStyle: { borderColor: '#ffffff', borderWidth: 1 },
      label: { show: rows.length <= 40, fontSize: 9, color: '#222', formatter: (p: { value: unknown }) => {
        const v = (p.value as unknown[])[2];
        return typeof v === 'number' ? String(Math.round(v)) : '';
      } },
    }],
  };
  return {
    kind: 'heatmap', title: 'Portfolio heat map', svg: renderSvg(option, { width: 900, height }),
    caption: `How close each MID came to the entry threshold of its tightest monitoring program each month (ratio ÷ threshold, in %), the ${rows.length} MIDs closest in the latest month${leftOut ? `; ${leftOut} more MID${leftOut === 1 ? '' : 's'} left out` : ''}.`,
    attrs: { mids: rows.length },
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

/** Win rate (won ÷ decided) per network and month received. */
export function winRateChart(rows: WinRateRow[], months: string[]): Chart {
  const networks = [...new Set(rows.map((r) => r.network))].sort();
  const option: EChartsOption = {
    title: title('Win rate by network and month', 'won ÷ (won + lost) of the chargebacks received that month; open cases left out'),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 60, right: 24, top: 80, bottom: 44 },
    xAxis: { type: 'category', data: months, name: 'month received (UTC)', nameLocation: 'middle', nameGap: 28, axisLabel: { fontSize: 10 } },
    yAxis: { type: 'value', name: 'win rate (%)', nameLocation: 'middle', nameGap: 44, min: 0, max: 100, axisLabel: { formatter: (v: number) => `${v} %` } },
    series: networks.map((n, i) => ({
      name: networkName(n), type: 'line', connectNulls: false, symbolSize: 6,
      itemStyle: { color: COLOURS.networks[i % COLOURS.networks.length] }, lineStyle: { color: COLOURS.networks[i % COLOURS.networks.length] },
      data: months.map((m) => {
        const r = rows.find((x) => x.network === n && x.month === m);
        return r?.win_rate === null || r?.win_rate === undefined ? null : r6(r.win_rate * 100);
      }),
    })),
  };
  const decided = rows.reduce((s, r) => s + r.won + r.lost, 0);
  const won = rows.reduce((s, r) => s + r.won, 0);
  return {
    kind: 'win-rate', title: 'Win rate by network and month', svg: renderSvg(option, { width: 900, height: 320 }),
    caption: `The share of decided chargebacks won, per network and month received: ${decided ? `${pct((won / decided) * 100, 1)} overall (${count(won)} of ${count(decided)} decided)` : 'none decided yet'}.`,
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

/** Age of the newest data of each source, in days before the report was made. */
export function freshnessChart(rows: FreshnessRow[], generatedAt: string): Chart {
  const at = Date.parse(generatedAt);
  const age = (iso: string | null) => (iso === null ? null : r6(Math.max(0, (at - Date.parse(iso)) / 86_400_000)));
  const option: EChartsOption = {
    title: title('Freshness of each source', 'days from the newest data, and from the last load, to when this report was made'),
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 100, right: 60, top: 80, bottom: 44 },
    xAxis: { type: 'value', name: 'age (days)', nameLocation: 'middle', nameGap: 28, min: 0 },
    yAxis: { type: 'category', data: rows.map((r) => r.source), inverse: true },
    series: [
      { name: 'newest data', type: 'bar', itemStyle: { color: '#5c8fc7' }, label: { show: true, position: 'right', fontSize: 10, formatter: (p: { value: unknown }) => (typeof p.value === 'number' ? `${p.value.toFixed(1)} d` : 'none') },
        data: rows.map((r) => age(r.newest_data)) },
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
