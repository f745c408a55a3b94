// The e-mail notifier against a real SMTP server on loopback (smtp-server).
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEmailNotifier } from '../alerts/notifiers/email.ts';
import type { Notice } from '../alerts/engine.ts';
import { NotifyError } from '../alerts/errors.ts';

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
