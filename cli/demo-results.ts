// What the demo prints of its results (cli/commands/demo.ts): the month's program ratios, the headroom of the MIDs
// at risk, the alerts raised and what the alert webhook got, and the cases due soon.
import type { Store } from '../store/db.ts';
import type { AlertSink } from './demo-story.ts';
import { renderTable } from './commands/sql.ts';
import { atRiskHeadroomOf } from '../store/demo-queries.ts';
import { dueCases, serviceDay } from '../store/due.ts';
import { headroomWords } from '../rules/headroom.ts';
import { feeWords } from '../rules/fees.ts';
import { utcDay } from '../lib/utc.ts';

export interface DueSoon { asOf: string; cases: number; overdue: number; noticesSent: number }

/** Writes the demo's tables; the cases due soon, as the demo's result gives them. */
export async function printDemoTables(o: {
  store: Store; month: string; clock0: string; asOf: string; ratios: Array<Record<string, unknown>>; alerts: Array<Record<string, unknown>>;
  received: AlertSink['received']; write: (line: string) => void;
}): Promise<DueSoon> {
  const { store, month, clock0, asOf, ratios, alerts, write } = o;
  const cell = (v: unknown) => (v === null || v === undefined ? null : typeof v === 'object' ? JSON.stringify(v) : (v as string | number | boolean));
  const show = (rows: Array<Record<string, unknown>>, cols: string[]) => renderTable(cols, rows.map((r) => cols.map((c) => cell(r[c]))));
  write('');
  write(`Chargeback ratios, ${month} (count metrics; level = the program level reached):`);
  write(show(ratios, ['mid', 'network', 'program', 'numerator', 'denominator', 'ratio_pct', 'level']));
  write(`(VAMP adds TC40 fraud reports, which arrive only as events: months before ${utcDay(clock0)}, when the demo subscribed, count disputes alone.)`);
  const risk = await atRiskHeadroomOf(store, month);
  if (risk.length) {
    write('');
    write(`Headroom of the MIDs at risk, ${month} (estimates: docs/ratios.md "Headroom" and "Fees"):`);
    for (const r of risk) {
      const words = [headroomWords(r as unknown as Parameters<typeof headroomWords>[0]), feeWords(r as unknown as Parameters<typeof feeWords>[0])].filter(Boolean).join('; ');
      write(`  ${String(r.mid)} ${String(r.network)} ${String(r.program)} (${String(r.state)}${r.level ? ` ${String(r.level)}` : ''}): ${words || 'no headroom figure (an amount or transaction condition no number of events can meet)'}`);
    }
  }
  write('');
  write('Alerts raised (newest months first; notify = false: an older month, kept as history, no one paged):');
  write(alerts.length ? show(alerts, ['kind', 'mid', 'network', 'program', 'level', 'month', 'ratio_pct', 'notify']) : '(none)');
  // Representment deadline notices are summed up below, with the cases they are about.
  for (const a of o.received.filter((x) => x.body.kind !== 'due')) {
    write(`Alert webhook received (signed ${a.signature ? a.signature.slice(0, 14) + '…' : 'no'}): ${String(a.body.message ?? JSON.stringify(a.body))}`);
  }
  const dueDay = (await serviceDay(store)) ?? utcDay(asOf);
  const due = await dueCases(store, { today: dueDay, within: 7 });
  const dueSoon = { asOf: dueDay, cases: due.length, overdue: due.filter((c) => c.overdue).length, noticesSent: o.received.filter((x) => x.body.kind === 'due').length };
  write('');
  write(`Cases due soon (open, representment due within 7 days or overdue) as of the service's day ${dueDay}: ${due.length}, ${dueSoon.overdue} overdue; ${dueSoon.noticesSent} due notice(s) sent to the alert webhook. The 10 most pressing (all: npx cbp disputes due --within 7d):`);
  write(due.length ? show(due.slice(0, 10) as unknown as Array<Record<string, unknown>>, ['due_date', 'days_left', 'mid', 'case_number', 'status', 'network', 'amount', 'currency']) : '(none)');
  return dueSoon;
}
