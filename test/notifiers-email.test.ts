// The e-mail notifier against a real SMTP server on loopback (smtp-server); the notice's trend chart travels as
// an inline PNG (multipart/related, cid:) drawn from the store at delivery time.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chartCid, createEmailNotifier } from '../alerts/notifiers/email.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import type { Notice } from '../store/alerts.ts';
import { NotifyError } from '../alerts/errors.ts';
import { deliverNotices } from '../alerts/outbox.ts';
import { outboxRows } from '../store/alert-history.ts';
import { CHART_SIZE } from '../alerts/notifiers/chart.ts';
import { pngSize } from '../alerts/notifiers/png.ts';
import { loadRules } from '../rules/thresholds.ts';
import type { Store } from '../store/db.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

const ARTIFACTS = fileURLToPath(new URL('../test-artifacts/alerts', import.meta.url));

/** The MIME parts of a raw message, each with its headers (lower-cased names) and raw body; nested multiparts flattened. */
function mimeParts(raw: string): Array<{ headers: Record<string, string>; body: string }> {
  const split = (text: string) => {
    const i = text.search(/\r?\n\r?\n/);
    const head = text.slice(0, i).replace(/\r?\n[ \t]+/g, ' ');
    const headers: Record<string, string> = {};
    for (const line of head.split(/\r?\n/)) {
      const c = line.indexOf(':');
      if (c > 0) headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
    }
    return { headers, body: text.slice(i).replace(/^\r?\n\r?\n/, '') };
  };
  const walk = (text: string): Array<{ headers: Record<string, string>; body: string }> => {
    const part = split(text);
    const boundary = /boundary="?([^";]+)"?/i.exec(part.headers['content-type'] ?? '')?.[1];
    if (!boundary || !/^multipart\//i.test(part.headers['content-type'] ?? '')) return [part];
    const pieces = part.body.split(`--${boundary}`).slice(1, -1);
    return [part, ...pieces.flatMap((p) => walk(p.replace(/^\r?\n/, '')))];
  };
  return walk(raw);
}

interface Mail { from: string; to: string[]; data: string }
const mails: Mail[] = [];
let rejectNext = false;
const smtp = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  onData(stream, session, cb) {
    let data = '';
    stream.on('data', (c) => (data += c));
    stream.on('end', () => {
      if (rejectNext) {
        rejectNext = false;
        const err = new Error('mailbox busy') as Error & { responseCode: number };
        err.responseCode = 451;
        return cb(err);
      }
      mails.push({ from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '', to: session.envelope.rcptTo.map((r) => r.address), data });
      cb();
    });
  },
});
let port = 0;

beforeAll(async () => {
  await new Promise<void>((r) => smtp.listen(0, '127.0.0.1', () => r()));
  port = (smtp.server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => smtp.close(() => r())));

const notice: Notice = {
  notice_id: 'ntc_fedcba9876543210fedcba9876543210', kind: 'escalated', mid: 'm1', network: 'mastercard', program: 'ecp', level: 'hecm',
  previous_level: 'ecm', month: '2026-02', metric: 'count', rule_id: 'mastercard.ecp.hecm', comparison: '>=', ratio_threshold: 0.03,
  numerator: 350, denominator: 10_000, denominator_month: '2026-01', ratio: 0.035, ratio_pct: 3.5, ratio_bps: 350, is_projection: false,
  is_partial: false, notify: true, message: 'm1 mastercard ecp: escalated from ecm to hecm in 2026-02', created_at: '2026-03-01T00:00:00.000Z',
};

describe('e-mail notifier', () => {
  it('sends one mail per notice over SMTP, the notice id as Message-ID', async () => {
    const n = createEmailNotifier({ smtpUrl: `smtp://127.0.0.1:${port}`, from: 'cbp@example.test', to: 'risk@example.test, ops@example.test' });
    try {
      await n.send(notice);
    } finally {
      await n.close?.();
    }
    expect(mails).toHaveLength(1);
    expect(mails[0].from).toBe('cbp@example.test');
    expect(mails[0].to).toEqual(['risk@example.test', 'ops@example.test']);
    expect(mails[0].data).toContain(`Message-ID: <${notice.notice_id}@cbp>`);
    expect(mails[0].data).toContain('Subject: [cbp] ESCALATED mastercard ecp hecm: m1 2026-02');
    expect(mails[0].data).toContain('Denominator:  10000 (2026-01)');
  });

  it('reports a temporary SMTP refusal as a retryable error', async () => {
    rejectNext = true;
    const n = createEmailNotifier({ smtpUrl: `smtp://127.0.0.1:${port}`, from: 'cbp@example.test', to: 'risk@example.test' });
    try {
      await expect(n.send(notice)).rejects.toSatisfy((e) => e instanceof NotifyError && e.retryable && /451/.test(e.message));
    } finally {
      await n.close?.();
    }
    expect(mails).toHaveLength(1);
  });
});

describe('e-mail notice with its trend chart', () => {
  let store: Store;
  let dir: string;
  const now = new Date('2026-02-10T06:00:00Z');

  beforeAll(async () => {
    ({ store, dir } = await tempStore());
    await insertStats(store, [
      { mid: 'm9', network: 'mastercard', month: '2025-11', cb: 10, tx: 10_000 },
      { mid: 'm9', network: 'mastercard', month: '2025-12', cb: 40, tx: 10_000 },
      { mid: 'm9', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 },
    ]);
    const r = await evaluateAlerts(store, { asOf: now, rules: loadRules(), now });
    expect(r.newNotices.filter((n) => n.notify).map((n) => [n.mid, n.kind, n.program])).toEqual([['m9', 'reached', 'ecp']]);
  });
  afterAll(() => cleanup(store, dir));

  it('carries the chart as an inline PNG of the MID × program that fired, shown by the HTML part through its cid', async () => {
    const before = mails.length;
    const n = createEmailNotifier({ smtpUrl: `smtp://127.0.0.1:${port}`, from: 'cbp@example.test', to: 'risk@example.test' });
    try {
      const r = await deliverNotices(store, [n], { now, chartRules: loadRules() });
      expect(r.byNotifier.email).toEqual({ sent: 1, retrying: 0, failed: 0 });
    } finally {
      await n.close?.();
    }
    expect(mails).toHaveLength(before + 1);
    const raw = mails[mails.length - 1].data;
    const parts = mimeParts(raw);
    expect(parts[0].headers['content-type']).toMatch(/^multipart\//);
    const png = parts.filter((p) => /^image\/png/i.test(p.headers['content-type'] ?? ''));
    expect(png).toHaveLength(1);
    expect(png[0].headers['content-transfer-encoding']).toMatch(/base64/i);
    expect(png[0].headers['content-disposition']).toMatch(/^inline/);
    const bytes = Buffer.from(png[0].body.replace(/\s+/g, ''), 'base64');
    // A real PNG, drawn at twice the chart's CSS size.
    expect(pngSize(bytes)).toEqual({ width: CHART_SIZE.width * 2, height: CHART_SIZE.height * 2 });
    expect(bytes.length).toBeGreaterThan(10_000); // axes, lines and text, not an empty canvas
    // Kept as a test artifact (git-ignored), to look at as the recipient would.
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS, 'email-chart.png'), bytes);
    const notice = (await outboxRows(store)).find((o) => o.notifier === 'email')!;
    const cid = png[0].headers['content-id'];
    expect(cid).toBe(`<${chartCid({ notice_id: notice.notice_id } as Notice)}>`);
    const html = parts.find((p) => /^text\/html/i.test(p.headers['content-type'] ?? ''));
    expect(html).toBeDefined();
    const htmlText = /quoted-printable/i.test(html!.headers['content-transfer-encoding'] ?? '')
      ? html!.body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      : html!.body;
    expect(htmlText).toContain(`src="cid:${cid.slice(1, -1)}"`);
    expect(htmlText).toMatch(/alt="Mastercard ECP count ratio of m9 per month/);
    // The text part is still there for clients that show text only.
    expect(parts.some((p) => /^text\/plain/i.test(p.headers['content-type'] ?? ''))).toBe(true);
  });

  it('sends the mail without a chart when no rules are given to draw it with', async () => {
    const n = createEmailNotifier({ smtpUrl: `smtp://127.0.0.1:${port}`, from: 'cbp@example.test', to: 'risk@example.test' });
    try {
      await n.send(notice, {});
    } finally {
      await n.close?.();
    }
    const raw = mails[mails.length - 1].data;
    expect(mimeParts(raw).some((p) => /^image\//i.test(p.headers['content-type'] ?? ''))).toBe(false);
  });
});
