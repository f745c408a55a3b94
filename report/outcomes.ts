// The report's sections 6-8 (pure: data in, HTML out): the cases due soon, the prevention alerts' outcomes per
// partner, and the disputes by vintage as a chart. The data comes from store/report-outcomes.ts.
import type { DueSoon, PartnerOutcome, VintageRow } from '../store/report-outcomes.ts';
import { count, renderSvg, type EChartsOption } from './svg.ts';

export interface OutcomesData {
  due: DueSoon;
  prevention: PartnerOutcome[];
  vintage: VintageRow[];
}

/** How far a chart or table goes: the rows the due table shows at most. */
export const DUE_ROWS = 50;

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(1)} %`);

/** Section 6: open cases due within the window or overdue, overdue first. */
export function dueSection(d: DueSoon): string {
  const shown = d.cases.slice(0, DUE_ROWS);
  const rows = shown.map((c) => `<tr class="${c.overdue ? 'overdue' : 'due'}" data-case="${esc(c.case_number)}">
<td>${c.overdue ? `<b class="overdue">OVERDUE</b> ${-c.days_left} d` : c.days_left === 0 ? 'due today' : `${c.days_left} d left`}</td><td>${esc(c.due_date)}</td>
<td>${esc(c.mid)}</td><td>${esc(c.case_number)}</td><td>${esc(c.status)}</td><td>${esc(c.network ?? '–')}</td>
<td class="n">${c.amount === null ? '–' : `${c.amount.toFixed(2)} ${esc(c.currency ?? '')}`}</td><td>${esc(c.reason_code ?? '–')}</td></tr>`).join('\n');
  const overdue = d.cases.filter((c) => c.overdue).length;
  return `<section id="due"><h2>6. Due soon — representment deadlines</h2>
<p class="lead">Open chargebacks (no result, not marked did-not-fight, New or Pending in the latest report) whose evidence is due within ${d.within} days of ${esc(d.asOf)} (${d.fromService ? "the service's day" : 'the clock: no service time recorded'}), or overdue: a deadline missed loses the dispute. Overdue first, then soonest. The same list as <code>cbp disputes due --within ${d.within}d</code>.</p>
${shown.length ? `<table class="due"><thead><tr><th>days</th><th>due date</th><th>MID</th><th>case</th><th>status</th><th>network</th><th>amount</th><th>reason</th></tr></thead><tbody>
${rows}
</tbody></table>` : '<p class="empty">No open case is due within these days, and none is overdue.</p>'}
<p class="note">${d.cases.length} case${d.cases.length === 1 ? '' : 's'}, ${overdue} overdue${d.cases.length > shown.length ? `; the first ${shown.length} shown` : ''}.</p>
</section>`;
}

/** Section 7: per partner, what the alerts did. */
export function preventionSection(rows: PartnerOutcome[], months: string): string {
  const body = rows.map((r) => `<tr data-partner="${esc(r.partner)}"><td>${esc(r.partner)}</td><td class="n">${count(r.alerts)}</td><td class="n">${count(r.completed)}</td>
<td class="n">${count(r.charged_back)}</td><td class="n">${count(r.completed_charged_back)}</td><td class="n">${count(r.duplicates)}</td><td class="n">${pct(r.deflection_rate)}</td></tr>`).join('\n');
  return `<section id="prevention"><h2>7. Do the prevention alerts work? ${esc(months)}</h2>
<p class="lead">Alerts that arrived in these months, per partner (mart_prevention_outcomes): completed (Ethoca and Verifi: status Complete; RDR: accepted; order validation: answered with the order), followed by a chargeback on the same transaction (ARN, else order ID), of those completed and charged back all the same (refunded, then lost again), duplicates (a transaction an earlier alert named), and the deflection rate (completed and not charged back, over alerts).</p>
${rows.length ? `<table class="prevention"><thead><tr><th>partner</th><th>alerts</th><th>completed</th><th>charged back</th><th>completed, then charged back</th><th>duplicates</th><th>deflection rate</th></tr></thead><tbody>
${body}
</tbody></table>` : '<p class="empty">No prevention alert, RDR case or order validation arrived in these months.</p>'}
</section>`;
}

const AFTER = ['same month', '1 month later', '2 months later', '3 or more months later'];
const AFTER_COLOURS = ['#1f4e79', '#5c8fc7', '#9dc3e6', '#f4b183'];

/** The vintage chart: disputes per month of sale, stacked by how many months later they were received. */
export function vintageChart(rows: VintageRow[]): { svg: string; caption: string } {
  const months = [...new Set(rows.map((r) => r.transaction_month))].sort();
  const option: EChartsOption = {
    title: { text: 'Disputes by month of sale', subtext: 'chargebacks per transaction month, by the month they were received', left: 8, top: 4, textStyle: { fontSize: 14 }, subtextStyle: { fontSize: 11, color: '#555' } },
    legend: { top: 44, left: 8, textStyle: { fontSize: 11 } },
    grid: { left: 64, right: 24, top: 80, bottom: 44 },
    xAxis: { type: 'category', data: months, name: 'month of the sale (UTC)', nameLocation: 'middle', nameGap: 28, axisLabel: { fontSize: 10 } },
    yAxis: { type: 'value', name: 'chargebacks (count)', nameLocation: 'middle', nameGap: 48, min: 0, minInterval: 1, axisLabel: { formatter: (v: number) => count(v) } },
    series: AFTER.map((name, k) => ({
      name, type: 'bar', stack: 'vintage', barMaxWidth: 40, itemStyle: { color: AFTER_COLOURS[k] },
      data: months.map((m) => rows.find((r) => r.transaction_month === m && r.months_after === k)?.disputes ?? 0),
    })),
  };
  const total = rows.reduce((s, r) => s + r.disputes, 0);
  const later = rows.filter((r) => r.months_after > 0).reduce((s, r) => s + r.disputes, 0);
  const caption = total
    ? `${count(total)} chargebacks on sales of these months; ${count(later)} (${((later / total) * 100).toFixed(0)} %) arrived a month or more after the sale. A recent month's bars are still growing: its later disputes have not arrived yet.`
    : 'No chargeback on a sale of these months.';
  return { svg: renderSvg(option, { width: 900, height: 320 }), caption };
}

/** Section 8: the vintage chart, with the median delay per month of sale. */
export function vintageSection(rows: VintageRow[], months: string): string {
  if (rows.length === 0) return `<section id="vintage"><h2>8. Vintage: disputes by month of sale, ${esc(months)}</h2>\n<p class="empty">No chargeback on a sale of these months.</p>\n</section>`;
  const c = vintageChart(rows);
  const width = /^<svg[^>]*\swidth="(\d+)"/.exec(c.svg)?.[1];
  const medians = [...new Map(rows.map((r) => [r.transaction_month, r.median_delay_days])).entries()]
    .map(([m, d]) => `${esc(m)}: ${d === null ? '–' : `${d} d`}`).join(' · ');
  return `<section id="vintage"><h2>8. Vintage: disputes by month of sale, ${esc(months)}</h2>
<p class="lead">Whether a bad month of sales is still arriving (mart_disputes_by_vintage): each bar is the sales of one month, split by how many months later their chargebacks were received.</p>
<figure class="chart" data-chart="vintage"${width ? ` style="width:${width}px"` : ''}>
${c.svg}
<figcaption>${esc(c.caption)}</figcaption>
</figure>
<p class="note">Median days from sale to dispute, per month of sale: ${medians}.</p>
</section>`;
}
