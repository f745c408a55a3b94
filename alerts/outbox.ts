// Delivery of notices through the alert_outbox table: one row per notice × notifier, with status,
// attempts, last_error and next_attempt_at. A failing notifier only delays its own rows; the others go
// on. A row is marked sent right after its notifier accepted it, so a later run never sends it again.
import type { Store } from '../store/db.ts';
import { scrub } from '../lib/log.ts';
import { describeError } from '../lib/errors.ts';
import type { Notice } from './engine.ts';
import type { Notifier } from './notifiers/types.ts';

export interface DeliverOptions {
  now?: Date;
  /** attempts before a row is marked failed (default 12; `cbp alerts requeue` sets it back to pending) */
  maxAttempts?: number;
  /** first retry delay in ms, doubled per attempt, capped at maxBackoffMs (default 60 000 / 6 h) */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** only notices created this recently get rows for a notifier (default 30 days): a notifier added
   * later is not flooded with the history */
  lookbackDays?: number;
}

export interface DeliverResult {
  sent: number;
  retrying: number;
  failed: number;
  byNotifier: Record<string, { sent: number; retrying: number; failed: number }>;
}

const ts = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');

/** Creates the missing outbox rows of every notify-able notice for each notifier. */
export async function enqueueNotices(store: Store, notifiers: string[], opts: { now?: Date; lookbackDays?: number } = {}): Promise<void> {
  const now = opts.now ?? new Date();
  const since = new Date(now.getTime() - (opts.lookbackDays ?? 30) * 86_400_000);
  for (const name of notifiers) {
    await store.run(
      `INSERT INTO alert_outbox (notice_id, notifier, status, attempts, last_error, next_attempt_at, sent_at, created_at)
       SELECT a.notice_id, $name, 'pending', 0, NULL, $now::TIMESTAMP, NULL, $now::TIMESTAMP
         FROM alerts a
        WHERE a.notify AND a.created_at >= $since::TIMESTAMP
          AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.notifier = $name)
       ON CONFLICT DO NOTHING`,
      { name, now: ts(now), since: ts(since) },
    );
  }
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
  };
}

/**
 * Sends every due outbox row. Notifiers run side by side, each through its own rows in notice order;
 * store writes are serialised (one DuckDB connection).
 */
export async function deliverNotices(store: Store, notifiers: Notifier[], opts: DeliverOptions = {}): Promise<DeliverResult> {
  const now = opts.now ?? new Date();
  const maxAttempts = opts.maxAttempts ?? 12;
  const backoff = opts.backoffMs ?? 60_000;
  const maxBackoff = opts.maxBackoffMs ?? 6 * 3_600_000;
  await enqueueNotices(store, notifiers.map((n) => n.name), { now, lookbackDays: opts.lookbackDays });
  const result: DeliverResult = { sent: 0, retrying: 0, failed: 0, byNotifier: {} };
  let writes: Promise<unknown> = Promise.resolve();
  const write = (sql: string, params: Record<string, string | number | null>) => {
    const p = writes.then(() => store.run(sql, params as never));
    writes = p.catch(() => undefined);
    return p;
  };
  await Promise.all(
    notifiers.map(async (notifier) => {
      const stats = (result.byNotifier[notifier.name] = { sent: 0, retrying: 0, failed: 0 });
      const rows = await store.all<Record<string, unknown>>(
        `SELECT a.*, o.attempts AS outbox_attempts FROM alert_outbox o JOIN alerts a USING (notice_id)
          WHERE o.notifier = $name AND o.status = 'pending' AND o.next_attempt_at <= $now::TIMESTAMP
          ORDER BY a.created_at, a.month, a.notice_id`,
        { name: notifier.name, now: ts(now) },
      );
      for (const r of rows) {
        const notice = toNotice(r);
        const attempts = Number(r.outbox_attempts) + 1;
        try {
          await notifier.send(notice);
          await write(
            `UPDATE alert_outbox SET status = 'sent', attempts = $attempts, sent_at = $now::TIMESTAMP, last_error = NULL
              WHERE notice_id = $id AND notifier = $name`,
            { attempts, now: ts(now), id: notice.notice_id, name: notifier.name },
          );
          stats.sent++;
        } catch (e) {
          const failed = attempts >= maxAttempts;
          const delay = Math.min(maxBackoff, backoff * 2 ** (attempts - 1));
          await write(
            `UPDATE alert_outbox SET status = $status, attempts = $attempts, last_error = $err, next_attempt_at = $next::TIMESTAMP
              WHERE notice_id = $id AND notifier = $name`,
            {
              status: failed ? 'failed' : 'pending',
              attempts,
              err: scrub(describeError(e)).slice(0, 1000),
              next: ts(new Date(now.getTime() + delay)),
              id: notice.notice_id,
              name: notifier.name,
            },
          );
          if (failed) stats.failed++;
          else stats.retrying++;
        }
      }
    }),
  );
  await writes;
  for (const s of Object.values(result.byNotifier)) {
    result.sent += s.sent;
    result.retrying += s.retrying;
    result.failed += s.failed;
  }
  return result;
}

/** Sets failed rows back to pending (after fixing a notifier's configuration). */
export async function requeueFailed(store: Store, notifier?: string): Promise<void> {
  await store.run(
    `UPDATE alert_outbox SET status = 'pending', next_attempt_at = current_timestamp::TIMESTAMP
      WHERE status = 'failed' ${notifier ? 'AND notifier = $name' : ''}`,
    notifier ? { name: notifier } : undefined,
  );
}

export interface OutboxRow {
  notice_id: string;
  notifier: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

export async function outboxRows(store: Pick<Store, 'all'>): Promise<OutboxRow[]> {
  const rows = await store.all<Record<string, unknown>>('SELECT notice_id, notifier, status, attempts, last_error FROM alert_outbox ORDER BY notice_id, notifier');
  return rows.map((r) => ({ notice_id: String(r.notice_id), notifier: String(r.notifier), status: String(r.status), attempts: Number(r.attempts), last_error: (r.last_error as string | null) ?? null }));
}
