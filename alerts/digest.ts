// The digest (issue #28): the report's at-risk rows with their headroom and fees, the representment cases due soon,
// and two trend charts, as one e-mail with the charts as inline PNGs (as the alert e-mails carry theirs). Sent by
// `cbp report --email` and by the `digest` schedule (workflows/digest.ts), under Temporal or the local runner.
import type { Store } from '../store/db.ts';
import { digestRiskRows, type DigestRiskRow, type SeriesStates } from '../store/digest.ts';
import { dueCases, serviceDay, type DueCase } from '../store/due.ts';
import { martFreshness } from '../store/ratio-mart.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import { headroomWords } from '../rules/headroom.ts';
import { feeWords } from '../rules/fees.ts';
import { chanceWords } from '../rules/forecast.ts';
import { daysText } from './due.ts';
import { noticeChart } from './notifiers/chart.ts';
import type { NoticeChart } from './notifiers/types.ts';
import type { Notice } from '../store/alerts.ts';
import type { Config } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';
import { sendMail, type EmailNotifierOptions } from './notifiers/email.ts';

/** At-risk rows and due cases a digest lists (the rest are counted), and trend charts it draws. */
export const DIGEST_ROWS = 20;
export const DIGEST_DUE = 20;
export const DIGEST_CHARTS = 2;

export interface Digest {
  /** the service's day the due cases are counted from (YYYY-MM-DD), else the real clock's */
  day: string;
  months: string[];
  risk: DigestRiskRow[];
  riskTotal: number;
  /** MID × program × month at a level, on watch, unknown: as the report counts them */
  series: SeriesStates;
  /** the cases due within dueWithin days, overdue first (DIGEST_DUE of them listed) */
  due: DueCase[];
  dueWithin: number;
  charts: Array<NoticeChart & { cid: string; title: string }>;
  /** why the kept ratio table is behind the data, and what to run; null when current */
  behind: string | null;
}

/** Reads what the digest shows from a store (read-only is enough). */
export async function buildDigest(store: Store, rules: RuleSet, opts: { now: Date; dueWithin: number }): Promise<Digest> {
  const day = (await serviceDay(store)) ?? opts.now.toISOString().slice(0, 10);
  const { months, rows, total, series } = await digestRiskRows(store, DIGEST_ROWS);
  const due = await dueCases(store, { today: day, within: opts.dueWithin });
  const behind = (await martFreshness(store)).behind;
  const charts: Digest['charts'] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    if (charts.length >= DIGEST_CHARTS || r.state === 'unknown') break;
    const key = `${r.mid}|${r.network}|${r.program}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const chart = await noticeChart(store, rules, { mid: r.mid, network: r.network, program: r.program, metric: r.metric, month: r.month } as Notice);
    if (chart) charts.push({ ...chart, cid: `digest-${charts.length + 1}@cbp`, title: `${r.mid} ${r.network} ${r.program}` });
  }
  return { day, months, risk: rows, riskTotal: total, series, due, dueWithin: opts.dueWithin, charts, behind };
}

const pct = (v: number | null) => (v === null ? '–' : `${(v * 100).toFixed(2)} %`);
const money = (v: number | null, c: string | null) => (v === null ? '–' : `${c ?? ''} ${v.toLocaleString('en-US', { maximumFractionDigits: 2 })}`.trim());
const esc = (t: string) => t.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const riskWords = (r: DigestRiskRow) => [chanceWords(r), headroomWords(r as never), feeWords(r as never)].filter(Boolean).join('; ');

const cases = (n: number) => `${n} case${n === 1 ? '' : 's'}`;
const overdue = (d: Digest) => d.due.filter((c) => c.overdue).length;

export function digestSubject(d: Digest): string {
  const late = overdue(d);
  return `[cbp] Digest ${d.day}: ${d.series.level} at a level, ${d.series.watch} on watch, ${late ? `${cases(late)} overdue, ` : ''}` +
    `${cases(d.due.length - late)} due within ${d.dueWithin} days`;
}

/** The due cases listed, and a line for those left out. */
const dueShown = (d: Digest) => ({ list: d.due.slice(0, DIGEST_DUE), more: Math.max(0, d.due.length - DIGEST_DUE) });
const dueMore = (n: number) => `${cases(n)} more: cbp disputes due`;

export function digestText(d: Digest): string {
  const out = [digestSubject(d).replace(/^\[cbp\] /, ''), ''];
  if (d.behind) out.push(`The kept ratio table is behind the data: ${d.behind}.`, '');
  out.push(`At risk (${d.months.join(' and ') || 'no month evaluated yet'}; ${d.risk.length} of ${d.riskTotal} rows at a level, on watch, unknown or likely to end the month at one):`);
  for (const r of d.risk) {
    out.push(`- ${r.mid} ${r.network} ${r.program} ${r.month}${r.is_partial ? ' (to date)' : ''}: ${r.state}${r.level ? ` ${r.level}` : ''}, ratio ${pct(r.ratio)}` +
      `${r.next_level ? `, next ${r.next_level}` : ''}${riskWords(r) ? `; ${riskWords(r)}` : ''}${r.state === 'unknown' && r.reason ? `; ${r.reason}` : ''}`);
  }
  if (!d.risk.length) out.push('- none');
  out.push('', `Representment overdue or due within ${d.dueWithin} days of ${d.day} (overdue first):`);
  const shown = dueShown(d);
  for (const c of shown.list) out.push(`- ${c.mid} case ${c.case_number} (${c.network ?? '-'}, ${money(c.amount, c.currency)}): due ${c.due_date}, ${daysText(c.days_left)}`);
  if (shown.more) out.push(`- ${dueMore(shown.more)}`);
  if (!d.due.length) out.push('- none');
  out.push('', 'More: cbp report (the whole report), cbp ratios, cbp disputes due.');
  return out.join('\n');
}

export function digestHtml(d: Digest): string {
  const cell = (t: string) => `<td style="padding: 2px 8px; border-bottom: 1px solid #eee">${esc(t)}</td>`;
  const risk = d.risk.map((r) => `<tr>${[r.mid, r.network, r.program, `${r.month}${r.is_partial ? ' (to date)' : ''}`, `${r.state}${r.level ? ` ${r.level}` : ''}`,
    pct(r.ratio), r.next_level ?? 'top', riskWords(r) || (r.state === 'unknown' ? (r.reason ?? '') : '')].map(cell).join('')}</tr>`).join('\n');
  const shown = dueShown(d);
  const due = shown.list.map((c) => `<tr>${[c.mid, c.case_number, c.network ?? '-', money(c.amount, c.currency), c.due_date, daysText(c.days_left)].map(cell).join('')}</tr>`).join('\n');
  const head = (cols: string[]) => `<tr>${cols.map((c) => `<th style="text-align: left; padding: 2px 8px">${esc(c)}</th>`).join('')}</tr>`;
  return [
    '<!doctype html><html><body style="font-family: Helvetica, Arial, sans-serif; color: #222">',
    `<h2>${esc(digestSubject(d).replace(/^\[cbp\] /, ''))}</h2>`,
    d.behind ? `<p style="color: #a00">The kept ratio table is behind the data: ${esc(d.behind)}.</p>` : '',
    `<h3>At risk (${esc(d.months.join(' and '))}): ${d.risk.length} of ${d.riskTotal}</h3>`,
    d.risk.length ? `<table style="border-collapse: collapse; font-size: 13px">${head(['MID', 'network', 'program', 'month', 'state', 'ratio', 'next level', 'chance, headroom and fee (estimates)'])}\n${risk}</table>` : '<p>None.</p>',
    `<h3>Representment overdue or due within ${d.dueWithin} days of ${esc(d.day)} (overdue first)</h3>`,
    d.due.length ? `<table style="border-collapse: collapse; font-size: 13px">${head(['MID', 'case', 'network', 'amount', 'due', 'days left'])}\n${due}</table>` : '<p>None.</p>',
    shown.more ? `<p>${esc(dueMore(shown.more))}</p>` : '',
    ...d.charts.map((c) => `<h3>${esc(c.title)}</h3><img src="cid:${esc(c.cid)}" width="${c.cssWidth}" height="${c.cssHeight}" alt="${esc(c.caption)}" style="max-width: 100%; height: auto; border: 1px solid #ddd"><p style="font-size: 12px; color: #555">${esc(c.caption)}</p>`),
    '<p style="font-size: 12px; color: #555">More: <code>cbp report</code>, <code>cbp ratios</code>, <code>cbp disputes due</code>.</p>',
    '</body></html>',
  ].join('\n');
}

/** Sends a digest as one e-mail (the charts inline); what was sent, for the caller's summary. */
export async function sendDigest(d: Digest, mail: EmailNotifierOptions): Promise<DigestSent> {
  await sendMail(mail, {
    subject: digestSubject(d), text: digestText(d), html: digestHtml(d),
    images: d.charts.map((c) => ({ cid: c.cid, filename: c.filename, png: c.png })),
  });
  return { to: mail.to, day: d.day, months: d.months, atRisk: d.risk.length, atRiskTotal: d.riskTotal, due: d.due.length, charts: d.charts.length, behind: d.behind };
}

export interface DigestSent {
  to: string; day: string; months: string[]; atRisk: number; atRiskTotal: number; due: number; charts: number; behind: string | null;
}

/** Where the digest goes (CBP_SMTP_URL, CBP_ALERT_EMAIL_FROM, CBP_ALERT_EMAIL_TO); a ConfigError naming what is missing. */
export function digestMailOptions(cfg: Pick<Config, 'smtpUrl' | 'alertEmailFrom' | 'alertEmailTo'>): EmailNotifierOptions {
  const { smtpUrl, alertEmailTo: to } = cfg;
  if (smtpUrl && to) return { smtpUrl, from: cfg.alertEmailFrom, to, name: 'digest' };
  const missing = [!smtpUrl && 'CBP_SMTP_URL', !to && 'CBP_ALERT_EMAIL_TO'].filter((x): x is string => Boolean(x));
  throw new ConfigError(missing.map((k) => `${k} is not set: the digest is an e-mail (set CBP_SMTP_URL and CBP_ALERT_EMAIL_TO)`));
}

/** What a sent digest says on the command line. */
export function digestSentText(d: DigestSent): string {
  return `digest sent to ${d.to} (service day ${d.day}): ${d.atRisk} of ${d.atRiskTotal} rows at risk, ${d.due} case(s) due soon, ${d.charts} chart(s)${d.behind ? `; the ratio table is behind: ${d.behind}` : ''}`;
}
