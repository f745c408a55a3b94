// mart_prevention_outcomes and mart_disputes_by_vintage (sql/views/60_dispute_outcomes.sql) on hand-computed cases.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { addEvent, chargeback, prevention, tmpDir, writeJson } from './store-fixtures.ts';
import { dueSoon, preventionByPartner, vintage } from '../store/report-outcomes.ts';
import { recordReportFetch } from '../store/windows.ts';
import { dueSection, preventionSection, vintageSection } from '../report/outcomes.ts';

/** Four chargebacks, five prevention report rows and events of every partner (see each line's comment). */
async function world(): Promise<Store> {
  const dir = tmpDir();
  const s = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  await loadReport(s, writeJson(dir, 'cb.json', [
    chargeback({ case_number: 'CB-1', arn: 'A1', date_received: '2024-03-10 09:00:00', transaction_date: '2024-02-20', amount: 100, status: 'New' }),
    chargeback({ case_number: 'CB-2', arn: '', order_id: 'ORD-2', date_received: '2024-03-05 09:00:00', transaction_date: '2024-01-15', amount: 50, status: 'Pending' }),
    chargeback({ case_number: 'CB-3', arn: 'A3', date_received: '2024-02-01 09:00:00', transaction_date: '2024-01-31', amount: 20, status: 'Won' }),
    chargeback({ case_number: 'CB-4', mid: 'MID-2', arn: 'A4', date_received: '2024-03-01 09:00:00', transaction_date: '', amount: 10, currency: 'EUR', status: 'Lost' }),
    // MID-3: the dispute RDR case R-3 resolved (same ARN), and a chargeback found by order_id alone (P6, P7)
    chargeback({ case_number: 'CB-5', mid: 'MID-3', arn: 'A10', date_received: '2024-03-12 09:00:00', transaction_date: '', amount: 30, status: 'Lost' }),
    chargeback({ case_number: 'CB-6', mid: 'MID-3', arn: '', order_id: 'ORD-6', date_received: '2024-03-20 09:00:00', transaction_date: '', amount: 40, status: 'New' }),
  ]), { kind: 'chargebacks', seenAt: '2024-03-20T00:00:00Z' });
  await loadReport(s, writeJson(dir, 'pv.json', [
    // completed, then charged back (CB-1, received after it)
    prevention({ alert_case_id: 'P1', source_partner: 'Ethoca', arn: 'A1', order_id: '', statuses: ['Complete'], date_received: '2024-03-03T08:00:00Z' }),
    // completed, no chargeback: deflected
    prevention({ alert_case_id: 'P2', source_partner: 'Verifi', arn: 'A9', order_id: '', statuses: ['Complete'], date_received: '2024-03-04T08:00:00Z' }),
    // the transaction P1 named again: a duplicate, and charged back (not completed)
    prevention({ alert_case_id: 'P3', source_partner: 'Verifi', arn: 'A1', order_id: '', statuses: ['Pending'], date_received: '2024-03-05T08:00:00Z' }),
    // no ARN: matched on order_id, but CB-2 was received the day before: not followed by it
    prevention({ alert_case_id: 'P4', source_partner: 'Ethoca', arn: '', order_id: 'ORD-2', statuses: ['Complete'], date_received: '2024-03-06T08:00:00Z' }),
    // February: completed, charged back the same day (CB-3)
    prevention({ alert_case_id: 'P5', source_partner: 'Ethoca', arn: 'A3', order_id: '', statuses: ['Complete'], date_received: '2024-02-01T08:00:00Z' }),
    // MID-3, no ARN: completed, then charged back (CB-6, found by order_id); P7 names the same order: a duplicate, charged back
    prevention({ alert_case_id: 'P6', source_partner: 'Ethoca', mid: 'MID-3', merchant_descriptor: 'THIRD', arn: '', order_id: 'ORD-6', statuses: ['Complete'], date_received: '2024-03-14T08:00:00Z' }),
    prevention({ alert_case_id: 'P7', source_partner: 'Verifi', mid: 'MID-3', merchant_descriptor: 'THIRD', arn: '', order_id: 'ORD-6', statuses: ['Pending'], date_received: '2024-03-15T08:00:00Z' }),
  ]), { kind: 'prevention', seenAt: '2024-03-20T00:00:00Z' });
  // RDR accepted, MID from its descriptor (MID-1's, from the prevention report): deflected
  await addEvent(s, 'r1', 'rdr.new', { rdr_guid: 'rdr_1', rdr_case_number: 'R-1', rdr_resolution: 'Accepted', arn: 'A7', merchant_descriptor: 'SHOP*EXAMPLE', rdr_date: '2024-03-08' });
  // RDR declined, then charged back (CB-4): its MID is the chargeback's
  await addEvent(s, 'r2', 'rdr.new', { rdr_guid: 'rdr_2', rdr_case_number: 'R-2', rdr_resolution: 'Declined', arn: 'A4', merchant_descriptor: 'OTHER', rdr_date: '2024-02-28' });
  // RDR accepted, its dispute (CB-5) in the chargeback report a day later: that chargeback is the dispute RDR resolved,
  // no double loss; it gives the case its MID (MID-3)
  await addEvent(s, 'r3', 'rdr.new', { rdr_guid: 'rdr_3', rdr_case_number: 'R-3', rdr_resolution: 'Accepted', arn: 'A10', merchant_descriptor: 'NONE', rdr_date: '2024-03-11' });
  // an order validation answered (matched to its order)
  const ov = { order_validation_guid: 'ov_1', order_validation_timestamp: '2024-03-09T10:00:00Z', arn: 'A8' };
  await addEvent(s, 'o1', 'order_validation.new', ov);
  await addEvent(s, 'o2', 'order_validation.match', { ...ov, order_id: 'ORD-5', mid: 'MID-1' });
  // an Ethoca alert the report does not hold yet, on P2's transaction: a duplicate, not completed
  await addEvent(s, 'p1', 'prevention.new', { prevention_case_number: 'pre_x', prevention_type: 'ethoca', mid: 'MID-1', arn: 'A9', prevention_timestamp: '2024-03-12T00:00:00Z' });
  // TC40 is no alert: left out
  await addEvent(s, 'p2', 'prevention.new', { prevention_case_number: 'pre_t', prevention_type: 'tc40', mid: 'MID-1', arn: 'A1', prevention_timestamp: '2024-03-12T00:00:00Z' });
  return s;
}

describe('mart_prevention_outcomes', () => {
  it('counts alerts, completed, charged back (ARN, then order_id), duplicates and the deflection rate per MID, partner and month', async () => {
    const s = await world();
    const rows = await s.all<Record<string, unknown>>(
      `SELECT mid, partner, month, alerts::INT AS alerts, completed::INT AS completed, charged_back::INT AS charged_back,
              completed_charged_back::INT AS completed_charged_back, duplicates::INT AS duplicates, deflected::INT AS deflected, deflection_rate
         FROM mart_prevention_outcomes ORDER BY mid, partner, month`,
    );
    const row = (mid: string, partner: string, month: string, a: number, c: number, cb: number, ccb: number, d: number, def: number) =>
      ({ mid, partner, month, alerts: a, completed: c, charged_back: cb, completed_charged_back: ccb, duplicates: d, deflected: def, deflection_rate: def / a });
    expect(rows).toEqual([
      row('MID-1', 'Ethoca', '2024-02', 1, 1, 1, 1, 0, 0),
      row('MID-1', 'Ethoca', '2024-03', 3, 2, 1, 1, 1, 1), // P1, P4, pre_x
      row('MID-1', 'Order validation', '2024-03', 1, 1, 0, 0, 0, 1),
      row('MID-1', 'RDR', '2024-03', 1, 1, 0, 0, 0, 1),
      row('MID-1', 'Verifi CDRN', '2024-03', 2, 1, 1, 0, 1, 1), // P2, P3
      row('MID-2', 'RDR', '2024-02', 1, 0, 1, 0, 0, 0),
      row('MID-3', 'Ethoca', '2024-03', 1, 1, 1, 1, 0, 0), // P6
      row('MID-3', 'RDR', '2024-03', 1, 1, 0, 0, 0, 1), // CB-5 is the dispute it resolved
      row('MID-3', 'Verifi CDRN', '2024-03', 1, 0, 1, 0, 1, 0), // P7
    ]);
    const dup = await s.all("SELECT alert_id FROM int_prevention_cases_unioned WHERE duplicate ORDER BY 1");
    expect(dup).toEqual([{ alert_id: 'P3' }, { alert_id: 'P7' }, { alert_id: 'pre_x' }]);
    // which rule found each charge-back
    const matched = await s.all("SELECT alert_id, matched_on FROM int_prevention_cases_unioned WHERE charged_back ORDER BY 1");
    expect(matched).toEqual([
      { alert_id: 'P1', matched_on: 'arn' }, { alert_id: 'P3', matched_on: 'arn' }, { alert_id: 'P5', matched_on: 'arn' },
      { alert_id: 'P6', matched_on: 'order_id' }, { alert_id: 'P7', matched_on: 'order_id' }, { alert_id: 'R-2', matched_on: 'arn' },
    ]);
    s.close();
  });
});

describe('mart_disputes_by_vintage', () => {
  it('crosses the transaction month with the month received: counts, amounts and delays', async () => {
    const s = await world();
    const rows = await s.all<Record<string, unknown>>(
      `SELECT mid, transaction_month, received_month, months_after, currency, disputes::INT AS disputes, amount::DOUBLE AS amount,
              avg_delay_days, median_delay_days, max_delay_days
         FROM mart_disputes_by_vintage ORDER BY mid, transaction_month NULLS LAST, received_month`,
    );
    expect(rows).toEqual([
      // CB-3: 2024-01-31 to 2024-02-01; CB-2: 2024-01-15 to 2024-03-05 (16 + 29 + 5 days, 2024 is a leap year)
      { mid: 'MID-1', transaction_month: '2024-01', received_month: '2024-02', months_after: '1', currency: 'USD', disputes: 1, amount: 20, avg_delay_days: 1, median_delay_days: 1, max_delay_days: '1' },
      { mid: 'MID-1', transaction_month: '2024-01', received_month: '2024-03', months_after: '2', currency: 'USD', disputes: 1, amount: 50, avg_delay_days: 50, median_delay_days: 50, max_delay_days: '50' },
      // CB-1: 2024-02-20 to 2024-03-10
      { mid: 'MID-1', transaction_month: '2024-02', received_month: '2024-03', months_after: '1', currency: 'USD', disputes: 1, amount: 100, avg_delay_days: 19, median_delay_days: 19, max_delay_days: '19' },
      // CB-4 has no transaction date
      { mid: 'MID-2', transaction_month: null, received_month: '2024-03', months_after: null, currency: 'EUR', disputes: 1, amount: 10, avg_delay_days: null, median_delay_days: null, max_delay_days: null },
      { mid: 'MID-3', transaction_month: null, received_month: '2024-03', months_after: null, currency: 'USD', disputes: 2, amount: 70, avg_delay_days: null, median_delay_days: null, max_delay_days: null },
    ]);
    s.close();
  });
});

describe('the report\'s prevention and vintage sections', () => {
  it('sums the outcomes per partner and the vintages over the report\'s months and MIDs, and draws them', async () => {
    const s = await world();
    const partners = await preventionByPartner(s, { from: '2024-03', to: '2024-03', mids: ['MID-1'] });
    expect(partners.map((p) => [p.partner, p.alerts, p.completed, p.charged_back, p.completed_charged_back, p.duplicates, p.deflection_rate])).toEqual([
      ['Ethoca', 3, 2, 1, 1, 1, 1 / 3], ['Order validation', 1, 1, 0, 0, 0, 1], ['RDR', 1, 1, 0, 0, 0, 1], ['Verifi CDRN', 2, 1, 1, 0, 1, 0.5],
    ]);
    const v = await vintage(s, { from: '2024-01', to: '2024-03' });
    // January's sales: one dispute a month later (1 day), one two months later (50 days): median 25.5 days
    expect(v).toEqual([
      { transaction_month: '2024-01', months_after: 1, disputes: 1, median_delay_days: 25.5 },
      { transaction_month: '2024-01', months_after: 2, disputes: 1, median_delay_days: 25.5 },
      { transaction_month: '2024-02', months_after: 1, disputes: 1, median_delay_days: 19 },
    ]);
    s.close();
    const p = preventionSection(partners, '2024-03');
    expect(p).toContain('<tr data-partner="Verifi CDRN"><td>Verifi CDRN</td><td class="n">2</td>');
    expect(p).toMatch(/33\.3 %/);
    const html = vintageSection(v, '2024-01 to 2024-03');
    expect(html).toContain('data-chart="vintage"');
    expect(html).toMatch(/<svg[\s\S]*2024-02[\s\S]*<\/svg>/);
    expect(html).toContain('3 chargebacks on sales of these months; 3 (100 %) arrived a month or more after the sale');
    expect(html).toContain('Median days from sale to dispute, per month of sale: 2024-01: 25.5 d · 2024-02: 19 d');
    expect(dueSection({ asOf: '2024-03-10', fromService: true, within: 7, cases: [] })).toContain('No open case is due within these days');
  });
});

describe('the report\'s due-soon section with cases in it', () => {
  it('lists the open cases of the scope due within the days or overdue: overdue first and marked, then soonest, days left shown', async () => {
    const dir = tmpDir();
    const s = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    // On the service's day 2024-03-10: D-1 due in 6 days, D-3 in 2, D-4 3 days overdue, D-2 today; D-5 in 15 days
    // (past the 7), D-6 Won (closed), D-7 another MID's.
    const cases: Array<[string, string, string, string?]> = [
      ['D-1', 'New', '2024-03-16'], ['D-3', 'Pending', '2024-03-12'], ['D-4', 'New', '2024-03-07'], ['D-2', 'New', '2024-03-10'],
      ['D-5', 'New', '2024-03-25'], ['D-6', 'Won', '2024-03-11'], ['D-7', 'New', '2024-03-11', 'MID-2'],
    ];
    await loadReport(s, writeJson(dir, 'cb.json', cases.map(([c, status, , mid]) => chargeback({ case_number: c, status, mid: mid ?? 'MID-1' }))), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    for (const [c, , due, mid] of cases) await addEvent(s, `n-${c}`, 'chargeback.new', { case_number: c, mid: mid ?? 'MID-1', chargeback_guid: `chb-${c}`, due_date: due });
    await recordReportFetch(s, { kind: 'chargebacks', window: { from: '2024-03-01', to: '2024-03-07' }, serviceTime: '2024-03-10T06:00:00Z', fetchedAt: '2024-03-10T06:00:01Z', records: 7, quarantined: 0 });
    // The machine's clock is years later: the days count from the service's day.
    const due = await dueSoon(s, { from: '2024-03', to: '2024-03', mids: ['MID-1'] }, { within: 7, now: new Date('2030-01-01T00:00:00Z') });
    s.close();
    expect(due).toMatchObject({ asOf: '2024-03-10', fromService: true, within: 7 });
    const html = dueSection(due);
    expect([...html.matchAll(/<tr class="(\w+)" data-case="([^"]+)">\n<td>([^<]*(?:<b class="overdue">OVERDUE<\/b>[^<]*)?)<\/td><td>([\d-]+)<\/td>/g)].map((m) => m.slice(1))).toEqual([
      ['overdue', 'D-4', '<b class="overdue">OVERDUE</b> 3 d', '2024-03-07'],
      ['due', 'D-2', 'due today', '2024-03-10'],
      ['due', 'D-3', '2 d left', '2024-03-12'],
      ['due', 'D-1', '6 d left', '2024-03-16'],
    ]);
    expect(html).toContain('<td>MID-1</td><td>D-3</td><td>Pending</td><td>mastercard</td>\n<td class="n">94.76 USD</td><td>4837</td></tr>');
    expect(html).toContain('within 7 days of 2024-03-10 (the service\'s day), or overdue');
    expect(html).toContain('<p class="note">4 cases, 1 overdue.</p>');
    expect(html).not.toContain('No open case is due');
  });
});
