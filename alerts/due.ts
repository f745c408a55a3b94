// Representment deadline notices (kind `due`): once per open case when its due date is `leadDays` or fewer days
// away (level due_soon), and once more when it has passed (level overdue). They are rows of the alerts table and go
// out through the outbox and notifiers as ratio notices do (alerts/outbox.ts): queued once per notifier, sent once.
// "Today" is the service's day (store/due.ts serviceDay), as the pipeline's windows judge time.
import { createHash } from 'node:crypto';
import type { Store } from '../store/db.ts';
import type { Notice } from '../store/alerts.ts';
import { dueCases, raisedDueNotices, recordDueNotices, serviceDay, type DueCase, type DueNoticeRow } from '../store/due.ts';

export const DUE_PROGRAM = 'representment';
/** A case first seen overdue by more than this many days is recorded as history, not sent (a first load of old cases). */
export const OVERDUE_NOTIFY_DAYS = 7;

export function dueNoticeId(mid: string, caseNumber: string, level: 'due_soon' | 'overdue'): string {
  const h = createHash('sha256').update(['due', mid, caseNumber, level].join('\u0000')).digest('hex');
  return `ntc_${h.slice(0, 32)}`;
}

/** "3 days left", "due today", "1 day ago". */
export function daysText(daysLeft: number): string {
  if (daysLeft === 0) return 'due today';
  const n = Math.abs(daysLeft);
  return `${n} day${n === 1 ? '' : 's'} ${daysLeft > 0 ? 'left' : 'ago'}`;
}

export function dueMessage(c: DueCase): string {
  const what = [c.network, c.amount === null ? null : `${c.amount.toFixed(2)} ${c.currency ?? ''}`.trim(), c.reason_code ? `reason ${c.reason_code}` : null].filter(Boolean).join(', ');
  const head = c.overdue ? `OVERDUE — representment was due ${c.due_date} (${daysText(c.days_left)})` : `representment due ${c.due_date} (${daysText(c.days_left)})`;
  return `${c.mid} case ${c.case_number}: ${head}; ${c.status}${what ? `, ${what}` : ''}: answer with evidence before the deadline or the dispute is lost`;
}

/** The notices the cases call for on their day (pure): due_soon within leadDays, overdue once past. */
export function dueNotices(cases: DueCase[], opts: { leadDays: number; now: string }): DueNoticeRow[] {
  const out: DueNoticeRow[] = [];
  for (const c of cases) {
    const level = c.days_left < 0 ? 'overdue' : c.days_left <= opts.leadDays ? 'due_soon' : null;
    if (level === null) continue;
    const notice: Notice = {
      notice_id: dueNoticeId(c.mid, c.case_number, level),
      kind: 'due', mid: c.mid, network: c.network ?? 'unknown', program: DUE_PROGRAM, level,
      previous_level: null, month: c.due_date.slice(0, 7), metric: null, rule_id: null, comparison: null,
      ratio_threshold: null, numerator: null, denominator: null, denominator_month: null, ratio: null, ratio_pct: null, ratio_bps: null,
      is_projection: false, is_partial: false,
      notify: level === 'due_soon' || c.days_left >= -OVERDUE_NOTIFY_DAYS,
      message: dueMessage(c), created_at: opts.now, case_number: c.case_number, due_date: c.due_date,
    };
    out.push({ notice, case_number: c.case_number, due_date: c.due_date, days_left: c.days_left });
  }
  return out;
}

export interface QueueDueResult {
  /** the day the cases were judged on (YYYY-MM-DD) */
  today: string;
  /** notices recorded now (to be sent by the outbox) */
  queued: number;
}

/**
 * Records the due notices the open cases call for today that were not raised before. today: the service's day,
 * else (no fetch recorded a service time) now's UTC day.
 */
export async function queueDueNotices(store: Store, opts: { leadDays: number; now: Date; today?: string }): Promise<QueueDueResult> {
  const today = opts.today ?? (await serviceDay(store)) ?? opts.now.toISOString().slice(0, 10);
  const raised = await raisedDueNotices(store);
  const fresh = dueNotices(await dueCases(store, { today, within: opts.leadDays }), { leadDays: opts.leadDays, now: opts.now.toISOString() })
    .filter((r) => !raised.has(r.notice.notice_id));
  await recordDueNotices(store, fresh);
  return { today, queued: fresh.length };
}
