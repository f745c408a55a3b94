// Representment deadlines: the open cases by due date (store/due.ts, `cbp disputes due`) and the `due` notices
// (alerts/due.ts), raised once per case and level and sent once through the outbox, on hand-computed cases.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { recordReportFetch } from '../store/windows.ts';
import { dueCases, openWithoutDueDate, serviceDay } from '../store/due.ts';
import { queueDueNotices } from '../alerts/due.ts';
import { deliverNotices } from '../alerts/outbox.ts';
import { emailSubject } from '../alerts/notifiers/email.ts';
import { webhookBody } from '../alerts/notifiers/webhook.ts';
import type { Notice } from '../store/alerts.ts';
import type { Notifier } from '../alerts/notifiers/types.ts';
import { addEvent, chargeback, tmpDir, writeJson } from './store-fixtures.ts';
import { cbp } from './activities-fixtures.ts';
import { createActivities } from '../activities/index.ts';
import type { ServiceClients } from '../client/index.ts';
import { loadConfig } from '../lib/config.ts';
import { humanNightly } from '../cli/pipeline.ts';
import type { NightlyResult } from '../workflows/nightly.ts';

/**
 * On the service's day 2024-03-10: A due in 10 days, B in 2, C 2 days overdue, H 38 days overdue, I (MID-2) in 5;
 * D is Won, E has a result, F was marked did-not-fight, G has no due date (no chargeback.new).
 */
async function world(): Promise<{ s: Store; dir: string }> {
  const dir = tmpDir();
  const s = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
  const cases: Array<[string, string, string | null, string?]> = [
    ['CB-A', 'New', '2024-03-20'], ['CB-B', 'Pending', '2024-03-12'], ['CB-C', 'New', '2024-03-08'], ['CB-D', 'Won', '2024-03-11'],
    ['CB-E', 'New', '2024-03-11'], ['CB-F', 'New', '2024-03-11'], ['CB-G', 'New', null], ['CB-H', 'Pending', '2024-02-01'], ['CB-I', 'New', '2024-03-15', 'MID-2'],
  ];
  await loadReport(s, writeJson(dir, 'cb.json', cases.map(([c, status, , mid]) => chargeback({ case_number: c, status, mid: mid ?? 'MID-1' }))), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
  for (const [c, , due, mid] of cases) {
    if (due) await addEvent(s, `n-${c}`, 'chargeback.new', { case_number: c, mid: mid ?? 'MID-1', chargeback_guid: `chb-${c}`, due_date: due });
  }
  await addEvent(s, 'r-E', 'chargeback.result', { case_number: 'CB-E', mid: 'MID-1', result: 'lost' });
  await addEvent(s, 'd-F', 'chargeback.dnf', { case_number: 'CB-F', mid: 'MID-1', dnf_reason: 'Low amount', dnf_timestamp: '2024-03-06T00:00:00Z' });
  await recordReportFetch(s, { kind: 'chargebacks', window: { from: '2024-03-01', to: '2024-03-07' }, serviceTime: '2024-03-10T06:00:00Z', fetchedAt: '2024-03-10T06:00:01Z', records: 9, quarantined: 0 });
  return { s, dir };
}

const brief = (c: { case_number: string; days_left: number; overdue: boolean }) => [c.case_number, c.days_left, c.overdue];

describe('open cases by representment deadline', () => {
  it('lists open cases with a due date, overdue first then soonest, on the service\'s day', async () => {
    const { s } = await world();
    expect(await serviceDay(s)).toBe('2024-03-10');
    expect((await dueCases(s, { today: '2024-03-10' })).map(brief)).toEqual([
      ['CB-H', -38, true], ['CB-C', -2, true], ['CB-B', 2, false], ['CB-I', 5, false], ['CB-A', 10, false],
    ]);
    expect((await dueCases(s, { today: '2024-03-10', within: 7, mid: 'MID-1' })).map(brief)).toEqual([['CB-H', -38, true], ['CB-C', -2, true], ['CB-B', 2, false]]);
    expect(await openWithoutDueDate(s)).toBe(1);
    s.close();
  });

  it('`cbp disputes due` prints them (JSON and text), counting from the service\'s day or --as-of; a bad --within is exit 2', async () => {
    const { s, dir } = await world();
    s.close();
    const env = { CBP_DATA_DIR: dir };
    const j = await cbp(['disputes', 'due', '--within', '7d', '--json'], env);
    expect(j.code).toBe(0);
    const out = JSON.parse(j.stdout);
    expect(out).toMatchObject({ today: '2024-03-10', today_from: 'service', within: 7, overdue: 2, without_due_date: 1 });
    expect(out.cases.map(brief)).toEqual([['CB-H', -38, true], ['CB-C', -2, true], ['CB-B', 2, false], ['CB-I', 5, false]]);
    const t = await cbp(['disputes', 'due', '--as-of', '2024-03-19', '--mid', 'MID-1'], env);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/as of 2024-03-19 \(--as-of\), MID MID-1/);
    expect(t.stdout).toMatch(/OVERDUE 47d\s+2024-02-01\s+MID-1\s+CB-H/);
    expect(t.stdout).toMatch(/1d left\s+2024-03-20\s+MID-1\s+CB-A/);
    expect(t.stdout).toMatch(/4 cases, 3 overdue; 1 more open without a known due date/);
    const bad = await cbp(['disputes', 'due', '--within', 'soon'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--within must be a number of days/);
  });
});

describe('due notices', () => {
  it('raises one notice per case N days before, one more once overdue, and the outbox sends each once', async () => {
    const { s } = await world();
    const now = new Date('2024-03-10T07:00:00Z');
    expect(await queueDueNotices(s, { leadDays: 5, now })).toEqual({ today: '2024-03-10', queued: 4 });
    const raised = () => s.all<Record<string, unknown>>(
      `SELECT d.case_number, a.level, a.notify, a.month, a.network, a.program FROM alerts a JOIN due_notices d USING (notice_id) WHERE a.kind = 'due' ORDER BY d.case_number, a.level`,
    );
    expect((await raised()).map((r) => [r.case_number, r.level, r.notify])).toEqual([
      ['CB-B', 'due_soon', true], ['CB-C', 'overdue', true],
      ['CB-H', 'overdue', false], // 38 days overdue at first sight: history, nobody paged
      ['CB-I', 'due_soon', true], // 5 days: the lead's last day
    ]);
    // the same day again: nothing new
    expect(await queueDueNotices(s, { leadDays: 5, now })).toMatchObject({ queued: 0 });

    const sent: Notice[] = [];
    const notifier: Notifier = { name: 'test', send: async (n) => { sent.push(n); } };
    expect(await deliverNotices(s, [notifier], { now })).toMatchObject({ sent: 3, failed: 0 });
    expect(sent.map((n) => n.case_number).sort()).toEqual(['CB-B', 'CB-C', 'CB-I']);
    const b = sent.find((n) => n.case_number === 'CB-B') as Notice;
    expect(b).toMatchObject({ kind: 'due', level: 'due_soon', due_date: '2024-03-12', mid: 'MID-1', program: 'representment', month: '2024-03' });
    expect(b.message).toMatch(/^MID-1 case CB-B: representment due 2024-03-12 \(2 days left\); Pending, mastercard, 94.76 USD, reason 4837/);
    expect(emailSubject(b)).toBe('[cbp] DUE representment: MID-1 case CB-B by 2024-03-12');
    expect(JSON.parse(webhookBody(b))).toMatchObject({ kind: 'due', case_number: 'CB-B', due_date: '2024-03-12' });
    expect(await deliverNotices(s, [notifier], { now })).toMatchObject({ sent: 0 });

    // Six days later: A enters its lead (4 days), B and I are overdue; C and H were told already.
    const later = new Date('2024-03-16T07:00:00Z');
    expect(await queueDueNotices(s, { leadDays: 5, now: later, today: '2024-03-16' })).toEqual({ today: '2024-03-16', queued: 3 });
    sent.length = 0;
    expect(await deliverNotices(s, [notifier], { now: later })).toMatchObject({ sent: 3 });
    expect(sent.map((n) => `${n.case_number} ${n.level}`).sort()).toEqual(['CB-A due_soon', 'CB-B overdue', 'CB-I overdue']);
    expect(sent.find((n) => n.case_number === 'CB-I')?.message).toMatch(/OVERDUE — representment was due 2024-03-15 \(1 day ago\)/);
    s.close();
  });
});

describe('due notices in the nightly\'s notice step', () => {
  it('the deliverNotices activity raises them (CBP_DUE_NOTICE_DAYS) before it sends, and the run summary counts them', async () => {
    const { s } = await world();
    const sent: Notice[] = [];
    const notifier: Notifier = { name: 'test', send: async (n) => { sent.push(n); } };
    const config = loadConfig({ env: { CBP_LOG_LEVEL: 'silent', CBP_DUE_NOTICE_DAYS: '2' } });
    const acts = createActivities({ config, store: s, clients: {} as ServiceClients, notifiers: [notifier], now: () => new Date('2024-03-10T07:00:00Z') });
    // lead 2 days: B (2 days) due soon, C overdue, H history; I (5 days) not yet
    const notices = await acts.deliverNotices();
    expect(notices).toMatchObject({ sent: 2, failed: 0, dueQueued: 3 });
    expect(sent.map((n) => n.case_number).sort()).toEqual(['CB-B', 'CB-C']);
    expect(await acts.deliverNotices()).toEqual({ sent: 0, failed: 0, notifiers: ['test'] });
    const summary = humanNightly({
      runId: 'n', asOf: '2024-03-10T06:00:00Z', windows: [], serviceTime: null, events: { segments: 0, events: 0, duplicates: 0, quarantined: 0, failed: 0 },
      enrich: { lookups: 0, failed: 0 }, ratios: { ratios: 0, alerts: 0, noticesQueued: 0 }, notices, snapshot: { path: '/tmp/snap.duckdb' },
    } as unknown as NightlyResult);
    expect(summary).toMatch(/notices\s*\|\s*0 queued \(\+3 due date notices\), 2 sent, 0 pending/);
    s.close();
  });
});
