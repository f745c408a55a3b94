// Webhook and Slack notifiers against a local HTTP server, and the outbox around them: a 500 then a 200
// is one delivery; a notifier that is down is retried later while the others deliver.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import type { Notice } from '../store/alerts.ts';
import { deliverNotices } from '../alerts/outbox.ts';
import { outboxRows } from '../store/alert-history.ts';
import { createWebhookNotifier, IDEMPOTENCY_HEADER, SIGNATURE_HEADER, sign, webhookBody } from '../alerts/notifiers/webhook.ts';
import { createSlackNotifier, slackMessage } from '../alerts/notifiers/slack.ts';
import type { Notifier } from '../alerts/notifiers/types.ts';
import { CHART_SIZE } from '../alerts/notifiers/chart.ts';
import { pngSize } from '../alerts/notifiers/png.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';
import { recordDueNotices } from '../store/due.ts';

interface Hit { path: string; headers: http.IncomingHttpHeaders; body: string }

function server(script: (hit: Hit, n: number) => number) {
  const hits: Hit[] = [];
  const s = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const hit = { path: req.url ?? '', headers: req.headers, body };
      hits.push(hit);
      res.statusCode = script(hit, hits.length);
      res.end(res.statusCode === 200 ? 'ok' : 'nope');
    });
  });
  return {
    hits,
    async start() {
      await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
      return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    },
    close: () => new Promise<void>((r) => s.close(() => r())),
  };
}

const SECRET = 'whsec-test-0123456789';
const notice: Notice = {
  notice_id: 'ntc_0123456789abcdef0123456789abcdef', kind: 'reached', mid: 'm1', network: 'mastercard', program: 'ecp', level: 'ecm',
  previous_level: null, month: '2026-01', metric: 'count', rule_id: 'mastercard.ecp.ecm', comparison: '>=', ratio_threshold: 0.015,
  numerator: 200, denominator: 10_000, denominator_month: '2025-12', ratio: 0.02, ratio_pct: 2, ratio_bps: 200, is_projection: false,
  is_partial: false, notify: true, message: 'm1 mastercard ecp: level ecm reached', created_at: '2026-02-01T00:00:00.000Z',
};

describe('webhook notifier', () => {
  const flaky = server((_h, n) => (n === 1 ? 500 : 200));
  let url = '';
  beforeAll(async () => { url = await flaky.start(); });
  afterAll(() => flaky.close());

  it('signs the JSON body with HMAC-SHA256 and sends the notice id as idempotency key', async () => {
    const n = createWebhookNotifier({ url: `${url}/hook`, secret: SECRET, backoffMs: 1 });
    await n.send(notice);
    const last = flaky.hits[flaky.hits.length - 1];
    expect(last.headers[SIGNATURE_HEADER]).toBe(sign(last.body, SECRET));
    expect(last.headers[IDEMPOTENCY_HEADER]).toBe(notice.notice_id);
    expect(last.headers['content-type']).toBe('application/json');
    expect(JSON.parse(last.body)).toMatchObject({ notice_id: notice.notice_id, kind: 'reached', ratio: 0.02, level: 'ecm' });
  });

  it('re-sends after a 500 and succeeds on the 200: one delivery, same idempotency key', () => {
    expect(flaky.hits.map((h) => h.headers[IDEMPOTENCY_HEADER])).toEqual([notice.notice_id, notice.notice_id]);
  });

  it('formats a Slack-compatible message with text', () => {
    const m = slackMessage({ ...notice, kind: 'projected', is_projection: true });
    expect(m.text).toContain('Projected breach');
    expect(JSON.stringify(m.blocks)).toContain('(projection)');
  });
});

describe('the outbox', () => {
  let store: Store;
  let dir: string;
  const hook = server((_h, n) => (n === 1 ? 500 : 200));
  const slack = server(() => 200);
  let hookUrl = '';
  let slackUrl = '';
  let deadUrl = '';
  const now = new Date('2026-02-10T06:00:00Z');

  beforeAll(async () => {
    ({ store, dir } = await tempStore());
    hookUrl = await hook.start();
    slackUrl = await slack.start();
    const dead = server(() => 200);
    deadUrl = await dead.start();
    await dead.close(); // nothing listens there any more
    await insertStats(store, [
      { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
      { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 },
    ]);
    const r = await evaluateAlerts(store, { asOf: now, rules: loadRules(), now });
    expect(r.newNotices.map((n) => [n.kind, n.notify])).toEqual([['reached', true]]);
  });
  afterAll(async () => {
    await hook.close();
    await slack.close();
    cleanup(store, dir);
  });

  const notifiers = (): Notifier[] => [
    createWebhookNotifier({ url: `${hookUrl}/hook`, secret: SECRET, backoffMs: 1 }),
    createSlackNotifier({ url: `${slackUrl}/services/T/B/X`, backoffMs: 1 }),
    createWebhookNotifier({ name: 'pager', url: `${deadUrl}/down`, retries: 1, backoffMs: 1 }),
  ];

  it('delivers through every notifier; one that is down is retried later and the others are unaffected', async () => {
    const r = await deliverNotices(store, notifiers(), { now, backoffMs: 60_000, chartRules: loadRules() });
    expect(r.byNotifier).toEqual({
      webhook: { sent: 1, retrying: 0, failed: 0 },
      slack: { sent: 1, retrying: 0, failed: 0 },
      pager: { sent: 0, retrying: 1, failed: 0 },
    });
    expect(hook.hits).toHaveLength(2); // 500, then 200: delivered once
    expect(slack.hits).toHaveLength(1);
    const rows = await outboxRows(store);
    expect(rows.map((o) => [o.notifier, o.status, o.attempts])).toEqual(
      expect.arrayContaining([['webhook', 'sent', 1], ['slack', 'sent', 1], ['pager', 'pending', 1]]),
    );
    expect(rows.find((o) => o.notifier === 'pager')!.last_error).toMatch(/unreachable/);
  });

  it("attaches the notice's trend chart to the webhook body as a signed base64 PNG; Slack names the command that draws it", () => {
    const last = hook.hits[hook.hits.length - 1];
    expect(last.headers[SIGNATURE_HEADER]).toBe(sign(last.body, SECRET));
    const body = JSON.parse(last.body) as { mid: string; chart: { content_type: string; encoding: string; width: number; height: number; caption: string; filename: string; data: string } };
    expect(body.chart).toMatchObject({ content_type: 'image/png', encoding: 'base64', width: CHART_SIZE.width * 2, height: CHART_SIZE.height * 2 });
    expect(body.chart.filename).toBe('cbp-m1-mastercard-ecp-2026-01.png');
    expect(body.chart.caption).toMatch(/^Mastercard ECP count ratio of m1 per month/);
    expect(pngSize(Buffer.from(body.chart.data, 'base64'))).toEqual({ width: body.chart.width, height: body.chart.height });
    const slackBody = JSON.parse(slack.hits[0].body) as { text: string; blocks: unknown[] };
    expect(JSON.stringify(slackBody.blocks)).toContain('cbp report --mid m1');
    expect(JSON.stringify(slackBody)).not.toMatch(/image|base64/);
  });

  it('sends the webhook body with chart null when the delivery draws no chart', () => {
    // The first attempt (a 500) and the retried one carry the same body: a redelivery signs the same bytes.
    expect(hook.hits[0].body).toBe(hook.hits[1].body);
    expect(JSON.parse(webhookBody(notice)).chart).toBeNull();
  });

  it('never sends a notice twice, and waits for the retry time of a failed row', async () => {
    const r = await deliverNotices(store, notifiers(), { now: new Date(now.getTime() + 1_000) });
    expect(r.sent + r.retrying + r.failed).toBe(0);
    expect(hook.hits).toHaveLength(2);
    expect(slack.hits).toHaveLength(1);
  });

  it('delivers the retried row once its notifier is back', async () => {
    const back = server(() => 200);
    const backUrl = await back.start();
    try {
      const later = new Date(now.getTime() + 120_000);
      const r = await deliverNotices(store, [createWebhookNotifier({ name: 'pager', url: `${backUrl}/up`, backoffMs: 1 })], { now: later });
      expect(r.byNotifier.pager).toEqual({ sent: 1, retrying: 0, failed: 0 });
      expect(back.hits).toHaveLength(1);
      const pager = (await outboxRows(store)).find((o) => o.notifier === 'pager')!;
      expect([pager.status, pager.attempts, pager.last_error]).toEqual(['sent', 2, null]);
    } finally {
      await back.close();
    }
  });

  it('gives up after maxAttempts and marks the row failed, keeping it', async () => {
    await store.run("UPDATE alert_outbox SET status = 'pending', next_attempt_at = '2000-01-01'::TIMESTAMP WHERE notifier = 'pager'");
    const r = await deliverNotices(store, [createWebhookNotifier({ name: 'pager', url: `${deadUrl}/down`, retries: 0 })], { now, maxAttempts: 3 });
    expect(r.failed).toBe(1);
    expect((await outboxRows(store)).find((o) => o.notifier === 'pager')!.status).toBe('failed');
  });
});

describe('the outbox\'s sent marks', () => {
  let store: Store;
  let dir: string;
  const now = new Date('2026-02-10T06:00:00Z');
  beforeAll(async () => {
    ({ store, dir } = await tempStore());
    await recordDueNotices(store, Array.from({ length: 40 }, (_, i) => ({
      notice: { ...notice, notice_id: `ntc_due_${String(i).padStart(2, '0')}`, kind: 'due', created_at: now.toISOString() },
      case_number: `c${i}`, due_date: '2026-02-14', days_left: 4,
    })));
  });
  afterAll(() => cleanup(store, dir));
  const quick = (name: string, sent: string[]): Notifier => ({ name, send: async (n) => { sent.push(n.notice_id); } });

  it('are written together while sends go on (a group commit): 40 deliveries in fewer transactions, each sent once', async () => {
    let transactions = 0;
    // Each commit made slow, as on a lake: the sends made meanwhile join the next one.
    const slow: Store = { ...store, transaction: async (fn, o) => { transactions++; await new Promise((r) => setTimeout(r, 20)); return store.transaction(fn, o); } };
    const sent: string[] = [];
    const r = await deliverNotices(slow, [quick('fast', sent)], { now });
    expect(r.byNotifier.fast).toEqual({ sent: 40, retrying: 0, failed: 0 });
    expect(new Set(sent).size).toBe(40);
    expect(transactions).toBeGreaterThan(1);
    expect(transactions).toBeLessThan(10);
    const rows = (await outboxRows(store)).filter((o) => o.notifier === 'fast');
    expect(rows.map((o) => [o.status, o.attempts])).toEqual(Array(40).fill(['sent', 1]));
    expect((await deliverNotices(store, [quick('fast', sent)], { now })).sent).toBe(0);
  });

  it('that cannot be written fail the delivery run, and leave the deliveries pending to be sent again', async () => {
    // The first transaction queues the deliveries; every one after it (the marks) fails.
    let calls = 0;
    const broken: Store = { ...store, transaction: async (fn, o) => (++calls === 1 ? store.transaction(fn, o) : Promise.reject(new Error('disk full'))) };
    const sent: string[] = [];
    await expect(deliverNotices(broken, [quick('other', sent)], { now })).rejects.toThrow(/disk full/);
    // Sending stops once a mark fails: a few went out before the first commit failed, not all 40.
    expect(sent.length).toBeGreaterThan(0);
    expect(sent.length).toBeLessThan(40);
    const rows = (await outboxRows(store)).filter((o) => o.notifier === 'other');
    expect(rows.length).toBe(40);
    expect(rows.every((o) => o.status === 'pending')).toBe(true);
  });
});

describe('notifiers from configuration', () => {
  it('builds each notifier only when its settings are present', async () => {
    const { notifiersFromConfig } = await import('../alerts/notifiers/index.ts');
    const { loadConfig } = await import('../lib/config.ts');
    const none = notifiersFromConfig(loadConfig({ env: { CBP_LOG_LEVEL: 'silent' } }));
    expect(none).toEqual([]);
    const all = notifiersFromConfig(
      loadConfig({
        env: {
          CBP_LOG_LEVEL: 'silent',
          CBP_ALERT_WEBHOOK_URL: 'http://127.0.0.1:1/hook',
          CBP_ALERT_WEBHOOK_SECRET: SECRET,
          CBP_SLACK_WEBHOOK_URL: 'http://127.0.0.1:1/services/x',
          CBP_SMTP_URL: 'smtp://127.0.0.1:1',
          CBP_ALERT_EMAIL_TO: 'risk@example.test',
        },
      }),
    );
    expect(all.map((n) => n.name)).toEqual(['webhook', 'slack', 'email']);
    for (const n of all) await n.close?.();
  });
});
