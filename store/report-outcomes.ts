// What `cbp report`'s sections 6-8 read (report/outcomes.ts draws them): the cases due soon, the prevention
// alerts' outcomes per partner and the disputes by vintage, from the views of sql/views/60_dispute_outcomes.sql.
import type { Store } from './db.ts';
import type { ReportScope } from './report.ts';
import { dueCases, serviceDay, type DueCase } from './due.ts';

type ReadStore = Pick<Store, 'all'>;

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/** The scope's MID filter on a column `mid`, and its parameters. */
function midFilter(scope: ReportScope, params: Record<string, string>): string {
  if (!scope.mids?.length) return '';
  scope.mids.forEach((m, i) => { params[`mid${i}`] = m; });
  return ` AND mid IN (${scope.mids.map((_, i) => `$mid${i}`).join(', ')})`;
}

export interface DueSoon {
  /** the service's day the days are counted from (YYYY-MM-DD); null: no service time recorded, the clock's day */
  asOf: string;
  fromService: boolean;
  within: number;
  cases: DueCase[];
}

/** Open cases due within `within` days of the service's day, or overdue (overdue first), of the scope's MIDs. */
export async function dueSoon(store: ReadStore, scope: ReportScope, opts: { within: number; now: Date }): Promise<DueSoon> {
  const service = await serviceDay(store);
  const asOf = service ?? opts.now.toISOString().slice(0, 10);
  const mids = new Set(scope.mids ?? []);
  const cases = (await dueCases(store, { today: asOf, within: opts.within })).filter((c) => mids.size === 0 || mids.has(c.mid));
  return { asOf, fromService: service !== null, within: opts.within, cases };
}

export interface PartnerOutcome {
  partner: string;
  alerts: number;
  completed: number;
  charged_back: number;
  completed_charged_back: number;
  duplicates: number;
  deflected: number;
  deflection_rate: number | null;
}

/** mart_prevention_outcomes summed per partner over the scope's months (the month the alert arrived). */
export async function preventionByPartner(store: ReadStore, scope: ReportScope): Promise<PartnerOutcome[]> {
  const params: Record<string, string> = { from: scope.from, to: scope.to };
  const rows = await store.all<Record<string, unknown>>(
    `SELECT partner, sum(alerts) AS alerts, sum(completed) AS completed, sum(charged_back) AS charged_back,
            sum(completed_charged_back) AS completed_charged_back, sum(duplicates) AS duplicates, sum(deflected) AS deflected
       FROM mart_prevention_outcomes WHERE month BETWEEN $from AND $to${midFilter(scope, params)}
      GROUP BY partner ORDER BY partner`,
    params,
  );
  return rows.map((r) => ({
    partner: String(r.partner), alerts: num(r.alerts), completed: num(r.completed), charged_back: num(r.charged_back),
    completed_charged_back: num(r.completed_charged_back), duplicates: num(r.duplicates), deflected: num(r.deflected),
    deflection_rate: num(r.alerts) > 0 ? num(r.deflected) / num(r.alerts) : null,
  }));
}

export interface VintageRow {
  transaction_month: string;
  /** whole months from the sale to the dispute's receipt; 3 stands for 3 or more */
  months_after: number;
  disputes: number;
  /** the median days from transaction to dispute over the transaction month (every received month) */
  median_delay_days: number | null;
}

/** Disputes of sales made in the scope's months, by months from the sale to the dispute (0, 1, 2, 3 or more). */
export async function vintage(store: ReadStore, scope: ReportScope): Promise<VintageRow[]> {
  const params: Record<string, string> = { from: scope.from, to: scope.to };
  const rows = await store.all<Record<string, unknown>>(
    `WITH v AS (SELECT * FROM mart_disputes_by_vintage WHERE transaction_month BETWEEN $from AND $to${midFilter(scope, params)}),
          m AS (SELECT strftime(transaction_date, '%Y-%m') AS transaction_month,
                       median(date_diff('day', transaction_date::DATE, date_received::DATE)) AS median_delay_days
                  FROM chargebacks WHERE date_received IS NOT NULL AND strftime(transaction_date, '%Y-%m') BETWEEN $from AND $to${midFilter(scope, params)}
                 GROUP BY ALL)
     SELECT v.transaction_month, least(v.months_after, 3) AS months_after, sum(v.disputes) AS disputes, any_value(m.median_delay_days) AS median_delay_days
       FROM v LEFT JOIN m USING (transaction_month)
      GROUP BY ALL ORDER BY 1, 2`,
    params,
  );
  return rows.map((r) => ({
    transaction_month: String(r.transaction_month), months_after: num(r.months_after), disputes: num(r.disputes),
    median_delay_days: r.median_delay_days === null || r.median_delay_days === undefined ? null : Number(r.median_delay_days),
  }));
}
