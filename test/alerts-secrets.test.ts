// Notifier endpoints that echo secrets back: a Slack-style hook answering 500 with the request path (its
// token) and an SMTP server refusing AUTH with the password in its reply. What the outbox stores in
// alert_outbox.last_error (copied into the analysts' snapshot) and what it logs holds none of it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { deliverNotices } from '../alerts/outbox.ts';
import { outboxRows } from '../store/alert-history.ts';
import { createSlackNotifier } from '../alerts/notifiers/slack.ts';
import { createEmailNotifier } from '../alerts/notifiers/email.ts';
import { createRedactor } from '../alerts/redact.ts';
import { createActivities } from '../activities/index.ts';
import type { ServiceClients } from '../client/index.ts';
import { SETTINGS, loadConfig, shownValue } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

const TOKEN = 'xYz123SecretToken456abc';
const SLACK_PATH = `/services/T0AB12CD3/B0EF45GH6/${TOKEN}`;
const SMTP_USER = 'alerts-bot@example.test';
const SMTP_PASS = 'p@ss/w0rd:hunter2!';
const PLAIN = Buffer.from(`\u0000${SMTP_USER}\u0000${SMTP_PASS}`).toString('base64');

/** Every spelling of a secret that must not appear. */
const FORBIDDEN = [
  TOKEN, SLACK_PATH, 'T0AB12CD3', 'B0EF45GH6', encodeURIComponent(SLACK_PATH), encodeURIComponent(TOKEN),
  SMTP_PASS, encodeURIComponent(SMTP_PASS), Buffer.from(SMTP_PASS).toString('base64'), PLAIN, 'hunter2', SMTP_USER, encodeURIComponent(SMTP_USER),
];

function expectNoSecret(text: string): void {
  for (const s of FORBIDDEN) expect(text.toLowerCase(), `holds ${s}`).not.toContain(s.toLowerCase());
}

// A Slack-compatible hook that fails, quoting the request path as written and percent-encoded.
const echoes: string[] = [];
const slack = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    echoes.push(req.url ?? '');
    res.statusCode = 500;
    res.end(`no_service: ${req.url} (${encodeURIComponent(req.url ?? '')})`);
  });
});

// An SMTP server that refuses the credentials and repeats them: as given, percent-encoded, and the AUTH PLAIN argument.
const auths: string[] = [];
const smtp = new SMTPServer({
  disabledCommands: ['STARTTLS'],
  allowInsecureAuth: true,
  authMethods: ['PLAIN', 'LOGIN'],
  logger: false,
  onAuth(auth, _session, cb) {
    auths.push(auth.password ?? '');
    const plain = Buffer.from(`\u0000${auth.username}\u0000${auth.password}`).toString('base64');
    cb(new Error(`Invalid password ${auth.password} (${encodeURIComponent(auth.password ?? '')}) for ${auth.username}, AUTH PLAIN ${plain}`));
  },
});

// A generic webhook whose path is its credential (Zapier hooks/catch/<id>/<key>/, Discord, Teams), answering
// 404 with the path it was asked for.
const HOOK_PATH = '/hooks/catch/123456/Tok3nSecretValue/';
const hookEchoes: string[] = [];
const hook = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    hookEchoes.push(req.url ?? '');
    res.statusCode = 404;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ error: `no hook at ${req.url}` }));
  });
});

let slackUrl = '';
let smtpUrl = '';
let hookUrl = '';
let store: Store;
let dir = '';
const now = new Date('2026-02-10T06:00:00Z');

function capture() {
  const lines: string[] = [];
  const destination = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  return { lines, logger: createLogger({ level: 'debug', destination }) };
}

beforeAll(async () => {
  await new Promise<void>((r) => slack.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}${HOOK_PATH}`;
  slackUrl = `http://127.0.0.1:${(slack.address() as AddressInfo).port}${SLACK_PATH}`;
  smtpUrl = `smtp://${encodeURIComponent(SMTP_USER)}:${encodeURIComponent(SMTP_PASS)}@127.0.0.1:${(smtp.server.address() as AddressInfo).port}`;
  ({ store, dir } = await tempStore());
  await insertStats(store, [
    { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 },
  ]);
  const r = await evaluateAlerts(store, { asOf: now, rules: loadRules(), now });
  expect(r.newNotices.filter((n) => n.notify)).toHaveLength(1);
});
afterAll(async () => {
  await new Promise<void>((r) => slack.close(() => r()));
  await new Promise<void>((r) => smtp.close(() => r()));
  await new Promise<void>((r) => hook.close(() => r()));
  cleanup(store, dir);
});

describe('delivery errors hold no secret', () => {
  it('stores and logs a Slack 500 that echoes the hook path, and an SMTP refusal that echoes the password, without them', async () => {
    // The configuration as a user sets it; the activity passes its secrets to the outbox.
    const config = loadConfig({
      env: { CBP_LOG_LEVEL: 'silent', CBP_SLACK_WEBHOOK_URL: slackUrl, CBP_SMTP_URL: smtpUrl, CBP_ALERT_EMAIL_TO: 'risk@example.test' },
    });
    const { lines, logger } = capture();
    const acts = createActivities({ config, store, clients: {} as ServiceClients, logger, now: () => now });
    const r = await acts.deliverNotices();
    expect(r).toMatchObject({ sent: 0, failed: 2, notifiers: ['slack', 'email'] });
    // The endpoints did receive (and echo) the secrets: the test would prove nothing otherwise.
    expect(echoes[0]).toBe(SLACK_PATH);
    expect(auths[0]).toBe(SMTP_PASS);

    const rows = await outboxRows(store);
    const slackRow = rows.find((o) => o.notifier === 'slack')!;
    const emailRow = rows.find((o) => o.notifier === 'email')!;
    // Still useful: who answered what.
    expect(slackRow.last_error).toMatch(/^slack: 127\.0\.0\.1:\d+ answered 500: no_service: \[REDACTED\]/);
    expect(emailRow.last_error).toMatch(/^email: SMTP 127\.0\.0\.1:\d+: .*535.*Invalid password \[REDACTED\]/);
    for (const o of rows) expectNoSecret(o.last_error ?? '');

    const logged = lines.join('');
    expect(logged).toContain('alert notifier slack: 1 delivery failed');
    expect(logged).toContain('alert notifier email: 1 delivery failed');
    expectNoSecret(logged);
  });

  it('redacts the secrets of notifiers built by hand, and rewrites an error stored before redaction', async () => {
    // A row written by an earlier version: the raw echo.
    await store.run(`UPDATE alert_outbox SET last_error = $e, status = 'pending', next_attempt_at = '2000-01-01'::TIMESTAMP WHERE notifier = 'slack'`, {
      e: `slack: answered 500: no_service: ${SLACK_PATH}`,
    });
    const { lines, logger } = capture();
    const notifiers = [
      createSlackNotifier({ url: slackUrl, retries: 0 }),
      createEmailNotifier({ smtpUrl, from: 'cbp@example.test', to: 'risk@example.test' }),
    ];
    try {
      // No configured secrets at all: each notifier's own are enough.
      const r = await deliverNotices(store, notifiers, { now: new Date(now.getTime() + 86_400_000), logger });
      expect(r.redacted).toBe(1);
      expect(r.retrying).toBe(2);
    } finally {
      for (const n of notifiers) await n.close?.();
    }
    const rows = await outboxRows(store);
    expect(rows.map((o) => o.attempts).sort()).toEqual([2, 2]);
    for (const o of rows) {
      expect(o.last_error).toContain('[REDACTED]');
      expectNoSecret(o.last_error ?? '');
    }
    expectNoSecret(lines.join(''));
  });
});

describe('a generic webhook whose path is its token', () => {
  it('stores and logs a 404 that echoes the path without the token, and config show masks it, as a Slack hook', async () => {
    const config = loadConfig({ env: { CBP_LOG_LEVEL: 'silent', CBP_ALERT_WEBHOOK_URL: hookUrl } });
    const { lines, logger } = capture();
    const acts = createActivities({ config, store, clients: {} as ServiceClients, logger, now: () => now });
    const r = await acts.deliverNotices();
    expect(r).toMatchObject({ sent: 0, notifiers: ['webhook'] });
    expect(hookEchoes[0]).toBe(HOOK_PATH);
    const row = (await outboxRows(store)).find((o) => o.notifier === 'webhook')!;
    expect(row.last_error).toMatch(/^webhook: 127\.0\.0\.1:\d+ answered 404: \{"error":"no hook at \[REDACTED\]/);
    const logged = lines.join('');
    expect(logged).toContain('alert notifier webhook: 1 delivery failed');
    for (const text of [row.last_error ?? '', logged]) {
      for (const secret of ['Tok3nSecretValue', '123456', encodeURIComponent(HOOK_PATH)]) expect(text, secret).not.toContain(secret);
    }
    // What cbp config show prints: the host and the plain words of the path, the tokens masked.
    expect(shownValue(SETTINGS.find((d) => d.env === 'CBP_ALERT_WEBHOOK_URL')!, hookUrl)).toBe(hookUrl.replace('123456/Tok3nSecretValue', '****/****'));
  });
});

describe('the redactor', () => {
  it('removes a secret as written, percent-encoded in either case, JSON-escaped and in base64', () => {
    const redact = createRedactor(['a/b c+d', 'tok3n-XYZ']);
    const text = [
      'a/b c+d', 'a%2Fb%20c%2Bd', 'a%2fb%20c%2bd', 'a\\/b c+d', Buffer.from('a/b c+d').toString('base64'), 'TOK3N-xyz', 'a/b%20c+d',
    ].join(' | ');
    expect(redact(text)).toBe(Array(7).fill('[REDACTED]').join(' | '));
  });

  it('leaves short values and ordinary text alone', () => {
    expect(createRedactor(['abc', '', undefined as never])('abc and more')).toBe('abc and more');
  });
});
