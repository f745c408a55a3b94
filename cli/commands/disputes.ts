// cbp disputes: the chargeback cases themselves. `due` lists the open ones by representment deadline, judged on
// the service's day (store/due.ts), from the published snapshot as `cbp ratios` reads it.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { UsageError } from '../../lib/errors.ts';
import { openForReading } from './ratios.ts';
import type { DueCase } from '../../store/due.ts';

/** "7d", "7" or "14 days" → 7 / 14; refuses anything else (exit 2). */
export function parseWithin(v: string): number {
  const m = /^\s*(\d{1,4})\s*(d|days?)?\s*$/i.exec(v);
  if (!m) throw new UsageError(`--within must be a number of days such as 7d, got ${JSON.stringify(v)}`);
  return Number(m[1]);
}

export interface DueList {
  /** the day the deadlines are counted from (YYYY-MM-DD) and where it comes from */
  today: string;
  today_from: 'service' | 'as-of' | 'clock';
  within: number | null;
  mid: string | null;
  cases: DueCase[];
  overdue: number;
  /** open cases whose due date is not known (no chargeback.new event for them) */
  without_due_date: number;
}

function human(d: DueList): string {
  const from = d.today_from === 'service' ? "the service's day" : d.today_from === 'as-of' ? '--as-of' : 'the clock (no service time recorded yet)';
  const head = `Open cases by representment deadline, as of ${d.today} (${from})${d.within === null ? '' : `, due within ${d.within} days`}${d.mid ? `, MID ${d.mid}` : ''}:`;
  const lines = d.cases.map((c) => {
    const left = c.overdue ? `OVERDUE ${-c.days_left}d` : c.days_left === 0 ? 'due today' : `${c.days_left}d left`;
    const amount = c.amount === null ? '-' : `${c.amount.toFixed(2)} ${c.currency ?? ''}`.trim();
    return `${left.padEnd(13)} ${c.due_date}  ${c.mid.padEnd(14)} ${c.case_number.padEnd(18)} ${c.status.padEnd(8)} ${(c.network ?? '-').padEnd(16)} ${amount.padStart(14)}  ${c.reason_code ?? ''}`;
  });
  return [
    head,
    ...(lines.length ? lines : ['(none)']),
    `${d.cases.length} case${d.cases.length === 1 ? '' : 's'}, ${d.overdue} overdue${d.without_due_date ? `; ${d.without_due_date} more open without a known due date (no chargeback.new event)` : ''}`,
  ].join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  const cmd = program.command('disputes').description('Chargeback cases: open cases by representment deadline');
  cmd
    .command('due')
    .description('List the open cases (no result, not marked did-not-fight, New or Pending in the latest report) by due date, soonest first, overdue first')
    .option('--within <days>', 'only cases due within this many days (e.g. 7d); overdue cases are always listed')
    .option('--mid <mid>', 'only this MID')
    .option('--as-of <YYYY-MM-DD>', "count days from this day (default: the service's day, the latest service clock a report fetch saw)")
    .option('--snapshot <file>', 'snapshot to read (default CBP_SNAPSHOT_PATH; the store read-only when none exists)')
    .option('--json', 'print the list as JSON')
    .addHelpText('after', [
      '',
      'Days left count from the service\'s day, as the pipeline\'s report windows do, so a sandbox or a backfill',
      'reads sensibly; 0 is due today, negative is overdue. The due date comes from the chargeback.new event.',
      'The nightly sends a `due` notice per case CBP_DUE_NOTICE_DAYS days before (default 5), and once more when overdue.',
    ].join('\n'))
    .action(async (o: { within?: string; mid?: string; asOf?: string; snapshot?: string; json?: boolean }) => {
      const within = o.within === undefined ? undefined : parseWithin(o.within);
      if (o.asOf !== undefined && (!/^\d{4}-\d{2}-\d{2}$/.test(o.asOf) || Number.isNaN(Date.parse(`${o.asOf}T00:00:00Z`)))) {
        throw new UsageError(`--as-of must be a date YYYY-MM-DD, got ${JSON.stringify(o.asOf)}`);
      }
      const { dueCases, openWithoutDueDate, serviceDay } = await import('../../store/due.ts');
      const store = await openForReading(ctx, o.snapshot);
      try {
        const service = o.asOf ? null : await serviceDay(store);
        const today = o.asOf ?? service ?? new Date().toISOString().slice(0, 10);
        const cases = await dueCases(store, { today, within, mid: o.mid });
        const list: DueList = {
          today, today_from: o.asOf ? 'as-of' : service ? 'service' : 'clock', within: within ?? null, mid: o.mid ?? null,
          cases, overdue: cases.filter((c) => c.overdue).length, without_due_date: await openWithoutDueDate(store, o.mid),
        };
        ctx.out(list, human, o.json);
      } finally {
        store.close();
      }
    });
}
