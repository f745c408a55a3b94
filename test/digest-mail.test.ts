// The digest e-mail (issue #28) against a real SMTP server on loopback: the at-risk rows with their headroom and fee,
// the cases due soon, two trend charts inline; sent by the local runner (`cbp run digest`'s path) and refused without
// e-mail settings; its schedule (CBP_DIGEST_AT) as Temporal gets it.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../activities/index.ts';
import type { ServiceClients } from '../client/index.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { DIGEST_DUE, digestHtml, digestSubject, digestText, type Digest } from '../alerts/digest.ts';
import { loadConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { loadRules } from '../rules/thresholds.ts';
import { recordReportFetch } from '../store/windows.ts';
import { createLocalRunner } from '../worker/local.ts';
import { scheduleDefinitions, scheduleOptionsFromConfig } from '../worker/schedules.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';
import { addEvent } from './store-fixtures.ts';
import { runCbp } from './helpers/cbp-cli.ts';
import { payloadViolations } from './helpers/history-payloads.ts';
import { skipTemporal, temporalTitle, useTemporalEnv, workflowBundle } from './helpers/temporal-env.ts';
import { createWorker } from '../worker/worker.ts';
import { ROOT } from './store-fixtures.ts';

const mails: string[] = [];
const smtp = new SMTPServer({
  authOptional: true, disabledCommands: ['STARTTLS'], logger: false,
  onData(stream, _session, cb) {
    let data = '';
    stream.on('data', (c) => (data += c));
    stream.on('end', () => { mails.push(data); cb(); });
  },
});
let port = 0;
beforeAll(async () => {
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  port = (smtp.server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => smtp.close(() => r())));

/** m1 at ECM in 2026-02 (200 of 10,000 previous-month transactions), m2 on ECM's watch (130); one case due in 2 days. */
async function world() {
  const t = await tempStore();
  const months = ['2025-12', '2026-01', '2026-02'];
  for (const [mid, cb] of [['m1', 200], ['m2', 130]] as const) {
    await insertStats(t.store, months.map((month) => ({ mid, month, network: 'mastercard' as const, cb: month === '2026-02' ? cb : 10, tx: 10_000, prevTx: 10_000 })));
  }
  await addEvent(t.store, 'n-1', 'chargeback.new', { case_number: 'CB-1', mid: 'm1', chargeback_guid: 'chb-1', due_date: '2026-03-05' });
  await t.store.run(`INSERT INTO chargebacks (mid, case_number, status, card_type, amount, date_received, first_seen_at, last_seen_at, landing_file)
                     VALUES ('m1', 'CB-1', 'New', 'mastercard', 75, TIMESTAMP '2026-02-20', now()::TIMESTAMP, now()::TIMESTAMP, 'fixture')`);
  await recordReportFetch(t.store, { kind: 'chargebacks', window: { from: '2026-02-01', to: '2026-02-28' }, serviceTime: '2026-03-03T06:00:00Z', fetchedAt: '2026-03-03T06:00:01Z', records: 1, quarantined: 0 });
  const asOf = new Date('2026-03-03T06:00:00Z');
  await evaluateAlerts(t.store, { asOf, rules: loadRules(), now: asOf });
  return t;
}

const env = (dir: string, extra: Record<string, string> = {}) => ({
  CBP_LOG_LEVEL: 'silent', CBP_DATA_DIR: dir, CBP_SMTP_URL: `smtp://127.0.0.1:${port}`, CBP_ALERT_EMAIL_TO: 'risk@example.test', ...extra,
});

describe('the digest e-mail', () => {
  it('sends the at-risk rows with headroom and fee, the cases due soon and two trend charts inline, through the local runner', async () => {
    const t = await world();
    try {
      const config = loadConfig({ env: env(t.dir) });
      const activities = createActivities({ config, store: t.store, clients: {} as ServiceClients, logger: createLogger({ level: 'silent' }), journalDir: path.join(t.dir, 'journal') });
      const before = mails.length;
      const sent = await createLocalRunner(activities).sendDigest();
      expect(sent).toMatchObject({ to: 'risk@example.test', day: '2026-03-03', atRisk: 4, due: 1, charts: 2, behind: null });
      // Besides the two ECP rows, the two EFM rows are unknown: the chargeback report lists fewer chargebacks than the MID report.
      expect(mails.length).toBe(before + 1);
      const raw = mails.at(-1)!.replace(/=\r?\n/g, '').replace(/\r?\n(?=[ \t])/g, '');
      expect(raw).toMatch(/Subject: \[cbp\] Digest 2026-03-03: 1 at a level, 1 on watch, 1 case due within 7 days/);
      // Headroom and over-by in words: m1 is 51 over ECM and 100 short of HECM; m2 is 20 short of ECM (1.5 % of 10,000).
      expect(raw).toContain('51 fewer Mastercard chargebacks in 2026-02 would have left ECM; 100 more Mastercard chargebacks in 2026-02 would have reached HECM');
      expect(raw).toContain('20 more Mastercard chargebacks in 2026-02 would have reached ECM');
      expect(raw).toMatch(/m1 case CB-1 \(mastercard, 75\): due 2026-03-05, 2 days left/);
      // Two PNGs, each referenced from the HTML by its Content-ID.
      const cids = [...raw.matchAll(/Content-ID: <([^>]+)>/gi)].map((m) => m[1]);
      expect(cids).toEqual(['digest-1@cbp', 'digest-2@cbp']);
      for (const c of cids) expect(raw).toContain(`cid:${c}`);
      expect((raw.match(/Content-Type: image\/png/gi) ?? []).length).toBe(2);
      const [run] = await t.store.all<{ workflow: string; status: string }>("SELECT workflow, status FROM runs WHERE workflow = 'sendDigest'");
      expect(run).toEqual({ workflow: 'sendDigest', status: 'ok' });
    } finally {
      cleanup(t.store, t.dir);
    }
  });

  it('is refused (exit 2) without e-mail settings, naming them; `cbp report --email` sends it from the store', async () => {
    const t = await world();
    t.store.close();
    try {
      const none = await runCbp(['report', '--email'], { cwd: t.dir, env: { CBP_DATA_DIR: t.dir, CBP_LOG_LEVEL: 'silent' } });
      expect(none.code).toBe(2);
      expect(none.stderr).toMatch(/CBP_SMTP_URL is not set.*CBP_ALERT_EMAIL_TO/s);
      const before = mails.length;
      const ok = await runCbp(['report', '--email', '--json'], { cwd: t.dir, env: env(t.dir) });
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ atRisk: 4, due: 1, charts: 2 });
      expect(mails.length).toBe(before + 1);
    } finally {
      cleanup(undefined, t.dir);
    }
  });
});

describe('the digest schedule', () => {
  const defs = (extra: Record<string, string>) => scheduleDefinitions(scheduleOptionsFromConfig(loadConfig({ env: { CBP_LOG_LEVEL: 'silent', ...extra } })));
  it('is weekly on Monday 07:00 by default where e-mail is configured; CBP_DIGEST_AT changes it or turns it off', () => {
    const mail = { CBP_SMTP_URL: 'smtp://127.0.0.1:2525', CBP_ALERT_EMAIL_TO: 'risk@example.test' };
    const d = defs(mail).find((x) => x.scheduleId === 'cbp-digest')!;
    expect(d.action).toMatchObject({ workflowType: WORKFLOW_TYPES.sendDigest });
    expect(d.spec.calendars?.[0]).toMatchObject({ dayOfWeek: 'MONDAY', hour: 7, minute: 0 });
    expect(defs({ ...mail, CBP_DIGEST_AT: 'daily 18:30' }).find((x) => x.scheduleId === 'cbp-digest')!.spec.calendars?.[0]).toEqual({ hour: 18, minute: 30, comment: 'cbp digest e-mail' });
    expect(defs({ ...mail, CBP_DIGEST_AT: 'off' }).some((x) => x.scheduleId === 'cbp-digest')).toBe(false);
    expect(defs({}).some((x) => x.scheduleId === 'cbp-digest')).toBe(false);
    expect(() => loadConfig({ env: { CBP_DIGEST_AT: 'monday' } })).toThrow(/CBP_DIGEST_AT/);
  });
});

describe.skipIf(skipTemporal)(temporalTitle('the digest through Temporal'), () => {
  const server = useTemporalEnv();
  it('sendDigestWorkflow sends one digest with the real activities and records its run; its history carries no secret', async () => {
    const t = await world();
    const environment = server();
    const config = loadConfig({ env: env(t.dir) });
    const activities = createActivities({ config, store: t.store, clients: {} as ServiceClients, logger: createLogger({ level: 'silent' }), journalDir: path.join(t.dir, 'journal') });
    const taskQueue = `cbp-test-${randomUUID()}`;
    const w = await createWorker({ connection: environment.nativeConnection, namespace: environment.namespace ?? 'default', activities, taskQueue, workflowBundle: await workflowBundle(), shutdownGraceTime: '2 seconds' });
    const running = w.run();
    try {
      const before = mails.length;
      const h = await environment.client.workflow.start(WORKFLOW_TYPES.sendDigest, { taskQueue, workflowId: 'cbp-digest', args: [{}] });
      expect(await h.result()).toMatchObject({ atRisk: 4, due: 1, charts: 2 });
      expect(mails.length).toBe(before + 1);
      const history = JSON.parse(historyToJSON(await h.fetchHistory()));
      expect(payloadViolations(history, { forbidden: [`smtp://127.0.0.1:${port}`] })).toEqual([]);
      if (process.env.CBP_RECORD_HISTORIES === '1') fs.writeFileSync(path.join(ROOT, 'test', 'fixtures', 'histories', 'send-digest.json'), `${JSON.stringify(history, null, 1)}\n`);
    } finally {
      await w.shutdown();
      await running;
      cleanup(t.store, t.dir);
    }
  });
});

describe('the digest counts as the report does', () => {
  it('counts MID × programs (not rows) at a level, names the overdue cases apart, and lists 20 due cases with the rest counted', () => {
    const row = (mid: string, metric: string, month: string) => ({ mid, network: 'visa', program: 'vamp', metric, month, state: 'level', level: 'excessive' }) as never;
    // Four MID × programs at a level, each with a count and an amount row, in two months: eight rows.
    const risk = ['a', 'b'].flatMap((mid) => ['2026-01', '2026-02'].flatMap((month) => ['count', 'amount'].map((m) => row(mid, m, month))));
    const due = Array.from({ length: 25 }, (_, i) => ({
      mid: 'm', case_number: `C-${i}`, status: 'New', network: 'visa', amount: 10, currency: 'USD', reason_code: null, date_received: null,
      due_date: '2026-03-01', days_left: i - 3, overdue: i < 3,
    }));
    const d: Digest = { day: '2026-03-03', months: ['2026-01', '2026-02'], risk, riskTotal: 8, series: { level: 4, watch: 0, unknown: 0 }, due, dueWithin: 7, charts: [], behind: null };
    expect(digestSubject(d)).toBe('[cbp] Digest 2026-03-03: 4 at a level, 0 on watch, 3 cases overdue, 22 cases due within 7 days');
    const text = digestText(d);
    expect(text.match(/^- m case C-/gm)).toHaveLength(DIGEST_DUE);
    expect(text).toContain('- 5 cases more: cbp disputes due');
    expect(digestHtml(d)).toContain('5 cases more: cbp disputes due');
  });
});
