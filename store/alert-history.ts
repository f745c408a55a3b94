// The notice history (alerts) and its deliveries (alert_outbox): what `cbp alerts` lists and alerts/outbox.ts delivers.
// Its writes go through Store.transaction too.
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';
import { jsonList, jsonParam, jsonRows } from './insert-rows.ts';
import { sqlTimestamp } from '../lib/utc.ts';
import type { Delivery, Notice, OutboxRow } from './alerts.ts';

type ReadStore = Pick<Store, 'all'>;

/**
 * For MIDs lo..hi (or these ids), each series' latest notice before month `before` that says what level it is at
 * (reached, escalated, resolved): where an evaluation of the later months only finds a level standing.
 */
export async function priorNotices(store: ReadStore, q: { lo: string; hi: string; before: string }): Promise<Notice[]> {
  const rows = await store.all<Record<string, unknown>>(
    `SELECT * FROM alerts WHERE mid >= $lo AND mid <= $hi AND month < $before AND kind IN ('reached', 'escalated', 'resolved')
      QUALIFY row_number() OVER (PARTITION BY mid, network, program ORDER BY month DESC, created_at DESC, notice_id) = 1`,
    { lo: q.lo, hi: q.hi, before: q.before },
  );
  return rows.map(toNotice);
}

/** A TIMESTAMP parameter: UTC wall time, as the columns hold it. */
const ts = sqlTimestamp;

/** A TIMESTAMP column read back as UTC ISO 8601 (seconds). */
const stamp = (v: unknown): string | null => (v === null || v === undefined ? null : `${String(v).replace(' ', 'T').replace(/(\.\d+)?$/, '')}Z`);

/**
 * The series at a level in the latest month with observed ratio rows up to `upTo` (the month a user means: a store of
 * files that end months ago still has levels in force), and that month; null when there is none.
 */
export async function levelsInForce(store: ReadStore, upTo: string): Promise<{ month: string | null; series: number }> {
  const [r] = await store.all<{ month: string | null; n: number | string | null }>(
    `SELECT max(month) AS month, count(DISTINCT (mid, network, program)) FILTER (WHERE state = 'level') AS n FROM ratio_mart
      WHERE NOT is_projection AND month = (SELECT max(month) FROM ratio_mart WHERE NOT is_projection AND month <= $m)`,
    { m: upTo },
  );
  return { month: r?.month ?? null, series: Number(r?.n ?? 0) };
}

/**
 * The notice history as stored, the levels' notices first, each part newest first (created_at, then month, then mid),
 * of the kinds asked for (all: none given), at most limit notices, with
 * `delivery`: each notifier's status as "notifier:status" joined by ", ".
 */
export async function noticeHistory(store: ReadStore, q: { mid?: string; kinds?: readonly string[]; limit: number }): Promise<Array<Record<string, unknown>>> {
  const params: Record<string, string | number> = { lim: q.limit };
  const where: string[] = [];
  if (q.mid) { where.push('a.mid = $mid'); params.mid = q.mid; }
  if (q.kinds?.length) {
    where.push(`a.kind IN (${q.kinds.map((_, i) => `$k${i}`).join(', ')})`);
    q.kinds.forEach((k, i) => (params[`k${i}`] = k));
  }
  // The levels' notices first (a portfolio's many due-date notices would bury them), each part newest first.
  return store.all<Record<string, unknown>>(
    `SELECT a.*, (SELECT string_agg(o.notifier || ':' || o.status, ', ' ORDER BY o.notifier) FROM alert_outbox o WHERE o.notice_id = a.notice_id) AS delivery
       FROM alerts a ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY a.kind IN ('due', 'pipeline_failed', 'pipeline_recovered'), a.created_at DESC, a.month DESC, a.mid LIMIT $lim`,
    params,
  );
}

/**
 * The deliveries of these notices (one per notifier, by notifier name), last_error as stored; next_attempt_at
 * only while a delivery is pending.
 */
export async function deliveriesOf(store: ReadStore, noticeIds: string[]): Promise<Map<string, Delivery[]>> {
  const byNotice = new Map<string, Delivery[]>();
  if (noticeIds.length === 0) return byNotice;
  const out = await store.all<Record<string, unknown>>(
    `SELECT notice_id, notifier, status, attempts, last_error, next_attempt_at, sent_at FROM alert_outbox
      WHERE notice_id IN (${jsonRows(1)}) ORDER BY notice_id, notifier`,
    [jsonList(noticeIds)],
  );
  for (const o of out) {
    const d: Delivery = {
      notifier: String(o.notifier),
      status: String(o.status),
      attempts: Number(o.attempts),
      last_error: (o.last_error as string | null) ?? null,
      next_attempt_at: o.status === 'pending' ? stamp(o.next_attempt_at) : null,
      sent_at: stamp(o.sent_at),
    };
    const list = byNotice.get(String(o.notice_id));
    if (list) list.push(d);
    else byNotice.set(String(o.notice_id), [d]);
  }
  return byNotice;
}

/** Every stored delivery error (to be checked for secrets). */
export async function deliveryErrors(store: ReadStore): Promise<Array<{ notice_id: string; notifier: string; last_error: string }>> {
  return store.all('SELECT notice_id, notifier, last_error FROM alert_outbox WHERE last_error IS NOT NULL');
}

/** Replaces stored delivery errors, in one transaction. */
export async function rewriteDeliveryErrors(store: Store, rows: Array<{ notice_id: string; notifier: string; last_error: string }>): Promise<void> {
  if (rows.length === 0) return;
  await store.transaction(async (s) => {
    for (const r of rows) {
      await s.run('UPDATE alert_outbox SET last_error = $err WHERE notice_id = $id AND notifier = $name', { err: r.last_error, id: r.notice_id, name: r.notifier });
    }
  });
}

/**
 * Queues every notice marked for delivery and created at or after since that this notifier has no delivery
 * of yet (pending, due now). Returns how many were queued; writes nothing when there are none.
 */
export async function queueDeliveries(store: Store, notifier: string, q: { now: Date; since: Date }): Promise<number> {
  const [{ n }] = await store.all<{ n: number | bigint }>(
    `SELECT count(*) AS n FROM alerts a WHERE a.notify AND a.created_at >= $since::TIMESTAMP
        AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.notifier = $name)`,
    { name: notifier, since: ts(q.since) },
  );
  if (Number(n) === 0) return 0;
  await store.transaction((s) => s.run(
    upsertSql(s, {
      into: 'alert_outbox',
      columns: ['notice_id', 'notifier', 'status', 'attempts', 'last_error', 'next_attempt_at', 'sent_at', 'created_at'],
      rows: `SELECT a.notice_id, $name, 'pending', 0, NULL, $now::TIMESTAMP, NULL, $now::TIMESTAMP
               FROM alerts a
              WHERE a.notify AND a.created_at >= $since::TIMESTAMP
                AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.notifier = $name)`,
      key: ['notice_id', 'notifier'],
    }),
    { name: notifier, now: ts(q.now), since: ts(q.since) },
  ));
  return Number(n);
}

function toNotice(r: Record<string, unknown>): Notice {
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    notice_id: String(r.notice_id),
    kind: r.kind as Notice['kind'],
    mid: String(r.mid),
    network: String(r.network),
    program: String(r.program),
    level: String(r.level),
    previous_level: (r.previous_level as string | null) ?? null,
    month: String(r.month),
    metric: (r.metric as string | null) ?? null,
    rule_id: (r.rule_id as string | null) ?? null,
    comparison: (r.comparison as string | null) ?? null,
    ratio_threshold: n(r.ratio_threshold),
    numerator: n(r.numerator),
    denominator: n(r.denominator),
    denominator_month: (r.denominator_month as string | null) ?? null,
    ratio: n(r.ratio),
    ratio_pct: n(r.ratio_pct),
    ratio_bps: n(r.ratio_bps),
    is_projection: r.is_projection === true,
    is_partial: r.is_partial === true,
    notify: r.notify === true,
    message: String(r.message),
    created_at: String(r.created_at),
    // a due notice's case (dueDeliveries joins due_notices)
    ...(r.due_case_number ? { case_number: String(r.due_case_number), due_date: String(r.due_due_date) } : {}),
  };
}

/** This notifier's pending deliveries due at now, in notice order, each with the attempts made so far. */
export async function dueDeliveries(store: ReadStore, notifier: string, now: Date): Promise<Array<{ notice: Notice; attempts: number }>> {
  const rows = await store.all<Record<string, unknown>>(
    `SELECT a.*, o.attempts AS outbox_attempts, d.case_number AS due_case_number, strftime(d.due_date, '%Y-%m-%d') AS due_due_date
       FROM alert_outbox o JOIN alerts a USING (notice_id) LEFT JOIN due_notices d USING (notice_id)
      WHERE o.notifier = $name AND o.status = 'pending' AND o.next_attempt_at <= $now::TIMESTAMP
      ORDER BY a.created_at, a.month, a.notice_id`,
    { name: notifier, now: ts(now) },
  );
  return rows.map((r) => ({ notice: toNotice(r), attempts: Number(r.outbox_attempts) }));
}

/** Deliveries a notifier accepted: sent, never to be sent again; written in one transaction. */
export async function markDeliveriesSent(store: Store, notifier: string, sent: Array<{ noticeId: string; attempts: number }>, at: Date): Promise<void> {
  if (!sent.length) return;
  await store.transaction((s) => s.run(
    `UPDATE alert_outbox o SET status = 'sent', attempts = m.attempts, sent_at = $2::TIMESTAMP, last_error = NULL
       FROM (${jsonRows(2, ['', '::INTEGER'])}) m(notice_id, attempts)
      WHERE o.notice_id = m.notice_id AND o.notifier = $3`,
    [jsonParam(sent.map((d) => [d.noticeId, d.attempts])), ts(at), notifier],
  ));
}

/** A failed attempt: tried again at nextAttemptAt, or given up (failed). error must already be redacted. */
export async function markDeliveryFailed(
  store: Store,
  d: { noticeId: string; notifier: string; attempts: number; error: string; givenUp: boolean; nextAttemptAt: Date },
): Promise<void> {
  await store.transaction((s) => s.run(
    `UPDATE alert_outbox SET status = $status, attempts = $attempts, last_error = $err, next_attempt_at = $next::TIMESTAMP
      WHERE notice_id = $id AND notifier = $name`,
    { status: d.givenUp ? 'failed' : 'pending', attempts: d.attempts, err: d.error, next: ts(d.nextAttemptAt), id: d.noticeId, name: d.notifier },
  ));
}

/** Notices marked for delivery that no notifier has sent. */
export async function unsentNoticeCount(store: ReadStore): Promise<number> {
  const [r] = await store.all<{ n: number | bigint }>(
    `SELECT count(*) AS n FROM alerts a
      WHERE a.notify AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.status = 'sent')`,
  );
  return Number(r?.n ?? 0);
}

/** Deliveries given up (of one notifier, or all). */
export async function failedDeliveryCount(store: ReadStore, notifier?: string): Promise<number> {
  const [{ n }] = await store.all<{ n: number | bigint }>(
    `SELECT count(*) AS n FROM alert_outbox WHERE status = 'failed' ${notifier ? 'AND notifier = $name' : ''}`,
    notifier ? { name: notifier } : undefined,
  );
  return Number(n);
}

/** Sets deliveries given up (of one notifier, or all) back to pending, due now. */
export async function requeueFailedDeliveries(store: Store, notifier?: string): Promise<void> {
  await store.transaction((s) =>
    s.run(
      `UPDATE alert_outbox SET status = 'pending', next_attempt_at = current_timestamp::TIMESTAMP
        WHERE status = 'failed' ${notifier ? 'AND notifier = $name' : ''}`,
      notifier ? { name: notifier } : undefined,
    ),
  );
}

/** Every delivery, by notice and notifier. */
export async function outboxRows(store: ReadStore): Promise<OutboxRow[]> {
  const rows = await store.all<Record<string, unknown>>('SELECT notice_id, notifier, status, attempts, last_error FROM alert_outbox ORDER BY notice_id, notifier');
  return rows.map((r) => ({ notice_id: String(r.notice_id), notifier: String(r.notifier), status: String(r.status), attempts: Number(r.attempts), last_error: (r.last_error as string | null) ?? null }));
}
