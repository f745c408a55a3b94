// E-mail over SMTP (nodemailer). The notice id becomes the Message-ID, so a mail client threads and
// de-duplicates a repeat after a crash window. With the notice's trend chart, the mail is text and HTML, the
// HTML showing the chart as an inline PNG (a cid: attachment, multipart/related), which mail clients show
// without fetching anything.
import nodemailer from 'nodemailer';
import type { Notice } from '../../store/alerts.ts';
import type { NoticeChart, Notifier } from './types.ts';
import { NotifyError } from '../errors.ts';
import { secretUrlParts } from '../../lib/urls.ts';
import { createRedactor } from '../redact.ts';
import { isPipelineNotice, pipelineDetails } from '../pipeline-notices.ts';

export interface EmailNotifierOptions {
  /** CBP_SMTP_URL, e.g. smtps://user:pass@host:465 or smtp://host:25 */
  smtpUrl: string;
  /** CBP_ALERT_EMAIL_FROM */
  from: string;
  /** CBP_ALERT_EMAIL_TO, comma-separated */
  to: string;
  name?: string;
  /** extra nodemailer transport options (tests: ignoreTLS) */
  transport?: Record<string, unknown>;
}

export function emailSubject(n: Notice): string {
  if (isPipelineNotice(n)) return `[cbp] ${n.kind === 'pipeline_failed' ? 'PIPELINE FAILED' : 'PIPELINE RECOVERED'} ${n.program}: ${n.level}`;
  if (n.kind === 'due') return `[cbp] ${n.level === 'overdue' ? 'OVERDUE' : 'DUE'} representment: ${n.mid} case ${n.case_number ?? '-'} by ${n.due_date ?? n.month}`;
  const kind = n.kind === 'projected' ? 'PROJECTED' : n.kind.toUpperCase();
  return `[cbp] ${kind} ${n.network} ${n.program} ${n.level}: ${n.mid} ${n.month}`;
}

export function emailText(n: Notice): string {
  if (isPipelineNotice(n)) {
    const d = pipelineDetails(n);
    return [n.message, '', `Workflow:     ${d.workflow}`, `Error code:   ${d.error_code}`, `Run:          ${d.run_id ?? '-'}`, `See more:     ${d.command ?? '-'}`, '', `Notice ${n.notice_id}`].join('\n');
  }
  if (n.kind === 'due') {
    return [n.message, '', `MID:          ${n.mid}`, `Case:         ${n.case_number ?? '-'}`, `Due date:     ${n.due_date ?? n.month}`,
      `Network:      ${n.network}`, '', `Notice ${n.notice_id}`].join('\n');
  }
  return [
    n.message,
    '',
    `MID:          ${n.mid}`,
    `Network:      ${n.network}`,
    `Program:      ${n.program} (${n.metric ?? '-'})`,
    `Level:        ${n.level}${n.previous_level ? ` (before: ${n.previous_level})` : ''}`,
    `Month:        ${n.month}${n.is_partial ? ' (month to date)' : ''}${n.is_projection ? ' — PROJECTION to month end' : ''}`,
    `Ratio:        ${n.ratio_pct === null ? 'no ratio' : `${n.ratio_pct} % = ${n.ratio_bps} bps`}`,
    `Numerator:    ${n.numerator ?? '-'}`,
    `Denominator:  ${n.denominator ?? '-'} (${n.denominator_month ?? '-'})`,
    `Threshold:    ${n.ratio_threshold === null ? '-' : `${n.comparison} ${n.ratio_threshold * 100} %`} (${n.rule_id ?? '-'})`,
    '',
    `Notice ${n.notice_id}`,
  ].join('\n');
}

/** The Content-ID of the chart's inline PNG (cid:<this> in the HTML). */
export function chartCid(n: Notice): string {
  return `chart-${n.notice_id}@cbp`;
}

const escapeHtml = (t: string) => t.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The HTML part of a mail with a chart: the chart, its caption, and the text part as preformatted text. */
export function emailHtml(n: Notice, chart: NoticeChart): string {
  return [
    '<!doctype html><html><body style="font-family: Helvetica, Arial, sans-serif; color: #222">',
    `<p>${escapeHtml(n.message)}</p>`,
    `<img src="cid:${escapeHtml(chartCid(n))}" width="${chart.cssWidth}" height="${chart.cssHeight}" alt="${escapeHtml(chart.caption)}" style="max-width: 100%; height: auto; border: 1px solid #ddd">`,
    `<p style="font-size: 12px; color: #555">${escapeHtml(chart.caption)}</p>`,
    `<pre style="font-size: 13px">${escapeHtml(emailText(n))}</pre>`,
    '</body></html>',
  ].join('\n');
}

/**
 * The SMTP URL's credentials in every shape a server may echo them: the URL as a secret URL (the whole URL,
 * user, password, query values), and the AUTH PLAIN argument (base64 of NUL user NUL password).
 */
export function smtpSecrets(smtpUrl: string, transport?: Record<string, unknown>): string[] {
  const out = secretUrlParts(smtpUrl);
  let user = '';
  let pass = '';
  try {
    const u = new URL(smtpUrl);
    user = decodeURIComponent(u.username);
    pass = decodeURIComponent(u.password);
  } catch {
    // Not a URL: the whole value (above) is all there is to keep out.
  }
  const auth = transport?.auth as { user?: unknown; pass?: unknown } | undefined;
  if (typeof auth?.user === 'string') { user = auth.user; out.push(auth.user); }
  if (typeof auth?.pass === 'string') { pass = auth.pass; out.push(auth.pass); }
  if (pass) out.push(Buffer.from(`\u0000${user}\u0000${pass}`, 'utf8').toString('base64'));
  return out;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(invalid SMTP URL)';
  }
}

/**
 * A failed send as a NotifyError: 5xx SMTP replies are permanent for that message, everything else (connection, 4xx)
 * may pass later. A server may quote the credentials in its reply (nodemailer puts the reply in the message, and the
 * command and response in fields): the message is redacted, and the raw error is not kept as cause.
 */
function smtpFailure(name: string, smtpUrl: string, redact: (t: string) => string, e: unknown): NotifyError {
  const err = e as { responseCode?: number; message?: string };
  const permanent = typeof err.responseCode === 'number' && err.responseCode >= 500;
  const text = redact(`${err.responseCode ?? ''} ${(err.message ?? String(e)).split('\n')[0]}`.trim());
  return new NotifyError(name, `SMTP ${hostOf(smtpUrl)}: ${text}`, !permanent);
}

/** One e-mail of text, HTML and inline PNGs (the digest, alerts/digest.ts), sent and the transport closed. */
export async function sendMail(o: EmailNotifierOptions, m: { subject: string; text: string; html: string; images: Array<{ cid: string; filename: string; png: Buffer }> }): Promise<void> {
  const transporter = nodemailer.createTransport(o.smtpUrl, o.transport as never);
  const redact = createRedactor(smtpSecrets(o.smtpUrl, o.transport));
  try {
    await transporter.sendMail({
      from: o.from, to: o.to, subject: m.subject, text: m.text, html: m.html,
      attachments: m.images.map((i) => ({ filename: i.filename, content: i.png, contentType: 'image/png', cid: i.cid, contentDisposition: 'inline' as const })),
    });
  } catch (e) {
    throw smtpFailure(o.name ?? 'email', o.smtpUrl, redact, e);
  } finally {
    transporter.close();
  }
}

export function createEmailNotifier(o: EmailNotifierOptions): Notifier {
  const name = o.name ?? 'email';
  const transporter = nodemailer.createTransport(o.smtpUrl, o.transport as never);
  const secrets = smtpSecrets(o.smtpUrl, o.transport);
  const redact = createRedactor(secrets);
  return {
    name,
    secrets,
    async send(n, ctx) {
      const chart = (await ctx?.chart?.()) ?? null;
      try {
        await transporter.sendMail({
          from: o.from,
          to: o.to,
          subject: emailSubject(n),
          text: emailText(n),
          ...(chart
            ? {
                html: emailHtml(n, chart),
                attachments: [{ filename: chart.filename, content: chart.png, contentType: 'image/png', cid: chartCid(n), contentDisposition: 'inline' as const }],
              }
            : {}),
          messageId: `<${n.notice_id}@cbp>`,
          headers: { 'X-Cbp-Notice-Id': n.notice_id },
        });
      } catch (e) {
        throw smtpFailure(name, o.smtpUrl, redact, e);
      }
    },
    close() {
      transporter.close();
    },
  };
}
