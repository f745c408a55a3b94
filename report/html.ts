// The report as one self-contained HTML file: inline CSS, inline SVG charts, no script to run, no fetch of
// any kind (no font, stylesheet or image by URL). The figures behind the charts and tables sit in a JSON data
// island (<script type="application/json" id="cbp-report-data">, data a browser never runs), which the tests
// compare with the store's queries.
import type { FreshnessRow, MatchRateRow, OrderAgeRow, QuarantineRow, ReasonCodeRow, StatusMonthRow, WinRateRow } from '../store/report.ts';
import {
  freshnessChart, heatMapChart, matchRateChart, orderAgeChart, paretoChart, quarantineChart, statusChart, winRateChart, type Chart,
} from './charts.ts';
import type { AtRiskRow, RatioSection } from './model.ts';
import { monthTitle, scopeText } from './months.ts';
import { COLOURS, FONT } from './svg.ts';
import { dueSection, preventionSection, vintageSection, type OutcomesData } from './outcomes.ts';
import { networkName, programName, trendCaption, trendChartSvg } from './trend.ts';

/** The marker a file written by `cbp report` carries; cbp overwrites only a file that has it. */
export const GENERATOR_META = '<meta name="generator" content="cbp report">';

export interface ReportMeta {
  /** UTC ISO 8601 */
  generatedAt: string;
  snapshot: string;
  /** when the snapshot file was last published (UTC ISO 8601) */
  snapshotModifiedAt: string | null;
  /** the MIDs asked for with --mid, if any */
  mids: string[];
  thresholds: string;
  /** the service's clock when the report was made (store/status.ts serviceClock), by which data's age is judged; absent: generatedAt */
  serviceNow?: string | null;
  /** why the ratios were judged now instead of read from the kept ratio table (store/ratio-mart.ts); null or absent when read */
  ratiosBehind?: string | null;
}

export interface DisputesData {
  reasonCodes: ReasonCodeRow[];
  winRates: WinRateRow[];
  statuses: StatusMonthRow[];
  statusNames: readonly string[];
  orderAge: OrderAgeRow[];
}

export interface QualityData {
  matchRates: MatchRateRow[];
  quarantine: QuarantineRow[];
  freshness: FreshnessRow[];
}

export interface ReportData {
  meta: ReportMeta;
  ratios: RatioSection;
  disputes: DisputesData;
  quality: QualityData;
  /** Sections 6-8 (report/outcomes.ts): due soon, prevention outcomes, vintage; absent: left out */
  outcomes?: OutcomesData;
}

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
const pctCell = (v: number | null, digits = 3) => (v === null ? '–' : `${Number((v * 100).toFixed(digits))} %`);
const num = (v: number | null) => (v === null ? '–' : Number(v.toFixed(2)).toLocaleString('en-US'));
const plural = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

function figure(c: Chart): string {
  const attrs = Object.entries(c.attrs ?? {}).map(([k, v]) => ` data-${k}="${esc(String(v))}"`).join('');
  // As wide as its chart, so the caption wraps under it and charts sit side by side where the page is wide enough.
  const width = /^<svg[^>]*\swidth="(\d+)"/.exec(c.svg)?.[1];
  return `<figure class="chart" data-chart="${esc(c.kind)}"${attrs}${width ? ` style="width:${width}px"` : ''}>\n${c.svg}\n<figcaption>${esc(c.caption)}</figcaption>\n</figure>`;
}

const STATE_LABEL = { clear: 'clear', watch: 'watch', level: 'level reached', unknown: 'unknown' } as const;

/** The why cell: a held level's note first, then the reason's other clauses (an unknown row's names what to load). */
function whyCell(r: AtRiskRow): string {
  const rest = (r.reason ?? '').split('; ').filter((p) => p && p !== r.held);
  return [r.held ? `<b class="held">${esc(r.held)}</b>` : '', ...rest.map(esc)].filter(Boolean).join('; ');
}

function atRiskTable(rows: AtRiskRow[]): string {
  const body = rows.map((r) => `<tr class="state-${r.state}" data-mid="${esc(r.mid)}" data-program="${esc(r.program)}" data-month="${esc(r.month)}">
<td>${esc(r.mid)}</td><td>${esc(networkName(r.network))}</td><td>${esc(programName(r.program))}</td><td>${esc(r.metric)}</td>
<td class="n">${pctCell(r.ratio)}${r.is_partial ? ' <small>to date</small>' : ''}${r.numerator_complete ? '' : ' <small class="warn">TC40 partial</small>'}</td>
<td class="n">${r.closeness === null ? '–' : `${Math.round(r.closeness * 100)} %`}</td>
<td><span class="badge">${STATE_LABEL[r.state]}</span>${r.level ? ` ${esc(r.level)}` : ''}</td>
<td>${r.next_level ? `${esc(r.next_level)} at ${pctCell(r.next_threshold)}` : 'top level'}</td>
<td class="n">${num(r.numerator_count)}</td>
<td class="n">${r.projected_ratio === null ? '–' : `${pctCell(r.projected_ratio)}${r.projected_level ? ` <small>(${esc(r.projected_level)})</small>` : ''}`}</td>
<td>${r.chance_words ? esc(r.chance_words) : '–'}</td>
<td>${[r.headroom, r.fee].filter(Boolean).map((t) => esc(t as string)).join('; ') || '–'}</td>
<td>${whyCell(r)}</td></tr>`).join('\n');
  return `<table class="at-risk">
<thead><tr><th>MID</th><th>network</th><th>program</th><th>metric</th><th>ratio</th><th>of next level's threshold</th><th>state</th><th>next level</th><th>count</th><th>projected</th><th>chance of a breach (forecast)</th><th>headroom and fee (estimates)</th><th>why: a level held, or the next level not reached</th></tr></thead>
<tbody>
${body}
</tbody></table>`;
}

/** The at-risk tables, one per month shown (as `cbp ratios` shows them), each under a title saying what the month is. */
function atRiskTables(s: RatioSection): string {
  return s.shown.map((m) => {
    const rows = s.atRisk.filter((r) => r.month === m.month);
    const title = `<h3 class="month-${m.kind}">${esc(monthTitle(m))}${m.kind === 'month_to_date' ? ': figures so far, the projection to month end beside them' : ''}</h3>`;
    return `${title}\n${rows.length ? atRiskTable(rows) : '<p class="empty">No MID has figures for a program in force this month.</p>'}`;
  }).join('\n');
}

const CSS = `
:root { color-scheme: light; }
body { font-family: ${FONT}; margin: 0; color: #222; background: #f5f6f8; }
header { background: #1f4e79; color: #fff; padding: 18px 28px; }
header h1 { margin: 0 0 6px; font-size: 22px; }
header p { margin: 2px 0; font-size: 13px; opacity: .92; }
nav { background: #fff; border-bottom: 1px solid #ddd; padding: 8px 28px; font-size: 13px; position: sticky; top: 0; z-index: 1; }
nav a { color: #1f4e79; margin-right: 18px; text-decoration: none; }
main { padding: 8px 28px 40px; max-width: 1900px; }
section { background: #fff; border: 1px solid #e0e0e0; border-radius: 6px; margin: 18px 0; padding: 14px 18px; }
h2 { font-size: 18px; margin: 4px 0 6px; color: #1f4e79; }
h3 { font-size: 15px; margin: 14px 0 6px; }
p.lead { margin: 0 0 10px; font-size: 13px; color: #444; }
.grid { display: flex; flex-wrap: wrap; gap: 14px; }
figure.chart { margin: 6px 0; display: inline-block; vertical-align: top; background: #fff; max-width: 100%; }
figure.chart svg { display: block; max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: #444; margin: 4px 6px 0; }
table { border-collapse: collapse; font-size: 12.5px; width: 100%; }
th, td { border-bottom: 1px solid #e6e6e6; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f5; position: sticky; top: 33px; }
td.n { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.state-level td:first-child { border-left: 5px solid ${COLOURS.level}; }
tr.state-watch td:first-child { border-left: 5px solid ${COLOURS.watch}; }
tr.state-clear td:first-child { border-left: 5px solid ${COLOURS.clear}; }
tr.state-unknown td:first-child { border-left: 5px solid ${COLOURS.unknown}; }
tr.state-level { background: #fdecea; }
tr.state-watch { background: #fff8e1; }
tr.state-unknown { background: repeating-linear-gradient(135deg, #f1f1f1 0 6px, #e4e4e4 6px 12px); }
tr.state-unknown .badge { background: ${COLOURS.unknown}; }
b.held { font-weight: 600; color: #7a1c1c; }
h3.month-month_to_date { color: #8a5a00; }
header p.scope { font-size: 15px; opacity: 1; margin: 4px 0 6px; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11px; color: #fff; background: ${COLOURS.clear}; }
tr.state-level .badge { background: ${COLOURS.level}; }
tr.state-watch .badge { background: ${COLOURS.watch}; color: #222; }
small { color: #666; }
small.warn { color: #a02020; }
.note { font-size: 12.5px; color: #555; margin: 6px 0; }
.empty { font-size: 13px; color: #555; font-style: italic; }
tr.overdue { background: #fdecea; }
b.overdue { color: #a02020; }
`;

/** Renders the whole report. Pure: the same data gives the same page (but for the charts' element ids). */
export function renderReport(data: ReportData): string {
  const { meta, ratios: r, disputes: d, quality: q } = data;
  const monthSpan = `${r.months[0]} to ${r.month}`;
  const scope = scopeText(r.shown, r.scope);
  const shownNames = r.shown.map((m) => (m.kind === 'complete' ? m.month : `${m.month} to date`)).join(' and ');
  const states = { level: 0, watch: 0, unknown: 0, clear: 0 };
  for (const row of r.atRisk) states[row.state]++;
  const same = r.scope === 'latest' ? '<code>cbp ratios</code> with no flags' : `<code>cbp ratios --month ${esc(r.month)}</code>`;

  // 1. At risk now
  const s1 = `<section id="at-risk"><h2>1. At risk now — ${esc(shownNames)}</h2>
<p class="lead">${esc(scope)}: one row per MID × program in force in each month, levels reached first, then by closeness to the next threshold ("of next level's threshold": the ratio ÷ the threshold of the next level up, or of the level held when none is above it; the heat map's cells are of the entry threshold, the lowest level's). Colours: <b style="color:${COLOURS.level}">level reached</b>, <b style="color:#a07400">watch</b> (within the watch band: every condition of a level met at ${Math.round(r.watchFraction * 100)} %, or a level met but not yet entered), <b style="color:${COLOURS.unknown}">unknown</b> (grey, striped: a source the figures need is not loaded; the why column names it and how to load it), <b style="color:${COLOURS.clear}">clear</b>. A level shown below its threshold is held: the why column says until when. The column before the last says how many more disputes (or chargebacks, fraud reports) this month would reach the next level, how many fewer would have left the level reached, and the level's program fee: estimates from the thresholds file, never invoices. The same months, rows, states and reasons as ${same}.</p>
${r.shown.length ? atRiskTables(r) : '<p class="empty">No MID has figures for a program in force this month.</p>'}
<p class="note">${plural(r.atRiskTotal, 'MID × program')} in force${r.shown.length > 1 ? ` (each month shown counted apart)` : ''} over ${plural(r.mids, 'MID')}: ${states.level} with a level reached, ${states.watch} watched${states.unknown ? `, ${states.unknown} unknown` : ''} shown${r.atRiskLeftOut ? `; ${plural(r.atRiskLeftOut, 'more clear row')} left out (<code>cbp ratios</code> lists them)` : ''}.</p>
</section>`;

  // 2. Trends
  const trendFigs = r.trends.map((t) => figure({
    kind: 'trend', title: `${t.mid} ${t.program}`, svg: trendChartSvg(t), caption: trendCaption(t),
    attrs: { mid: t.mid, network: t.network, program: t.program, 'threshold-lines': new Set(t.months.flatMap((m) => m.thresholds.map((x) => x.level))).size },
  }));
  const s2 = `<section id="trends"><h2>2. Trends, ${esc(monthSpan)}</h2>
<p class="lead">${meta.mids.length ? `The programs of the MIDs asked for (${esc(meta.mids.join(', '))}).` : 'The MID × programs with a level reached or watched in a month shown, closest first.'} Each chart starts at the series' first month with figures. Solid: the monthly ratio; dashed: the thresholds of the rules in force each month and the run-rate projection of the open month; bars: the count beside its minimum (dotted). Hollow points and pale bars: a month to date, or TC40 fraud reports not yet captured.</p>
${trendFigs.length ? `<div class="grid">\n${trendFigs.join('\n')}\n</div>` : `<p class="empty">No MID × program is at a level or on watch in ${esc(shownNames)}: nothing to chart (pick MIDs with <code>cbp report --mid M</code>).</p>`}
${r.trendsLeftOut ? `<p class="note">${plural(r.trendsLeftOut, 'more MID × program')} at a level or on watch left out (the first ${r.trends.length} shown); <code>cbp report --mid M</code> picks MIDs.</p>` : ''}
</section>`;

  // 3. Heat map
  const s3 = `<section id="heatmap"><h2>3. Portfolio heat map</h2>
${r.heat.length ? figure(heatMapChart(r.heat, r.months, r.heatLeftOut, { toDate: r.toDate, watchFraction: r.watchFraction })) : '<p class="empty">No MID has a ratio for a program in force in these months.</p>'}
</section>`;

  // 4. Disputes
  const networks = [...new Set(d.reasonCodes.map((x) => x.network))].sort();
  const pareto = networks.flatMap((n) => {
    const rows = d.reasonCodes.filter((x) => x.network === n);
    return [figure(paretoChart(n, rows, 'cases')), figure(paretoChart(n, rows, 'amount'))];
  });
  const anyCases = d.reasonCodes.length > 0;
  // The disputes' charts start at the first month with chargebacks received, as the trends do.
  const firstCase = r.months.findIndex((m) => d.statuses.some((x) => x.month === m) || d.winRates.some((x) => x.month === m));
  const caseMonths = firstCase > 0 ? r.months.slice(firstCase) : r.months;
  const s4 = `<section id="disputes"><h2>4. Disputes, received ${esc(monthSpan)}</h2>
${anyCases ? `<h3>Reason codes (Pareto), per network</h3>
<div class="grid">
${pareto.join('\n')}
</div>
<h3>Win rate</h3>
${figure(winRateChart(d.winRates, caseMonths))}
<h3>Statuses over time</h3>
${figure(statusChart(d.statuses, caseMonths, d.statusNames))}
<h3>Order age</h3>
${figure(orderAgeChart(d.orderAge))}` : '<p class="empty">No chargebacks were received in these months.</p>'}
</section>`;

  // 5. Data quality
  const fresh = q.freshness.map((f) => `<tr><td>${esc(f.source)}</td><td>${esc(f.newest_data ?? '–')}</td><td>${esc(f.last_loaded_at ?? '–')}</td><td class="n">${f.rows.toLocaleString('en-US')}</td></tr>`).join('\n');
  const s5 = `<section id="quality"><h2>5. Data quality</h2>
${figure(matchRateChart(q.matchRates))}
${q.quarantine.length ? figure(quarantineChart(q.quarantine)) : '<p class="empty">No row was quarantined: every loaded row passed validation.</p>'}
${q.freshness.some((f) => f.newest_data || f.last_loaded_at) ? figure(freshnessChart(q.freshness, meta.generatedAt, meta.serviceNow ?? undefined)) : ''}
<table class="freshness"><thead><tr><th>source</th><th>newest data (UTC)</th><th>last loaded (UTC)</th><th>rows</th></tr></thead><tbody>
${fresh}
</tbody></table>
</section>`;

  // 6-8. Due soon, prevention outcomes, vintage
  const o = data.outcomes;
  const s6to8 = o ? `${dueSection(o.due)}\n${preventionSection(o.prevention, monthSpan)}\n${vintageSection(o.vintage, monthSpan)}\n` : '';

  const island = JSON.stringify(data).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
${GENERATOR_META}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cbp report — ${esc(shownNames || r.month)}</title>
<style>${CSS}</style>
</head>
<body>
<header>
<h1>Chargebacks and ratios — ${esc(shownNames || r.month)}</h1>
<p class="scope">${esc(scope)}${r.scope === 'latest' ? ': the months <code>cbp ratios</code> shows with no flags (the latest month in the data, and the one before it while the latest is month to date); another month: <code>cbp report --month YYYY-MM</code>' : ''}.</p>
<p>Made ${esc(meta.generatedAt)} from the snapshot ${esc(meta.snapshot)}${meta.snapshotModifiedAt ? ` (published ${esc(meta.snapshotModifiedAt)})` : ''}; rules: ${esc(meta.thresholds)}.</p>
<p>${plural(r.mids, 'MID')}${meta.mids.length ? ` (asked for: ${esc(meta.mids.join(', '))})` : ''}; months ${esc(monthSpan)}; times in UTC.</p>
${meta.ratiosBehind ? `<p class="behind">The ratio table is behind: ${esc(meta.ratiosBehind)}. The ratios below are as it holds them.</p>\n` : ''}</header>
<nav><a href="#at-risk">1 At risk now</a><a href="#trends">2 Trends</a><a href="#heatmap">3 Heat map</a><a href="#disputes">4 Disputes</a><a href="#quality">5 Data quality</a>${o ? '<a href="#due">6 Due soon</a><a href="#prevention">7 Prevention</a><a href="#vintage">8 Vintage</a>' : ''}</nav>
<main>
${s1}
${s2}
${s3}
${s4}
${s5}
${s6to8}</main>
<script type="application/json" id="cbp-report-data">${island}</script>
</body>
</html>
`;
}
