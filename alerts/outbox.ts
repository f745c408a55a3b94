// Delivery of notices through the alert_outbox table: one row per notice × notifier, with status,
// attempts, last_error and next_attempt_at. A failing notifier only delays its own rows; the others go
// on. A row is marked sent right after its notifier accepted it, so a later run never sends it again.
// last_error is copied into the analysts' snapshot: every secret is redacted from it before it is written.
import type { Logger } from 'pino';
import type { Store } from '../store/db.ts';
import { scrub } from '../lib/log.ts';
import { describeError } from '../lib/errors.ts';
import type { Notice } from './engine.ts';
import type { Notifier } from './notifiers/types.ts';
import { createRedactor } from './redact.ts';

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
  /** Values never to store or log (the configuration's secretValues(cfg)); each notifier's own secrets are
   * added, and everything lib/log.ts has registered. */
  secrets?: Iterable<string>;
  /** Where failed deliveries are reported (one warn line per notifier, errors redacted). */
  logger?: Pick<Logger, 'warn'>;
}

/** Longest last_error kept (after redaction: a secret is never cut in half and left readable). */
const ERROR_CHARS = 1000;

/** The redaction every stored or logged delivery error goes through. */
export function deliveryRedactor(secrets: Iterable<string> = [], notifiers: Notifier[] = []): (text: string) => string {
  const redact = createRedactor([...secrets, ...notifiers.flatMap((n) => n.secrets ?? [])]);
  // Its own forms first: they are longer (a path with its slash) than what lib/log.ts may have registered.
  return (text) => scrub(redact(text));
}

/**
 * Rewrites stored last_error values that hold a secret (written before redaction covered it, or before a
 * secret was configured as one), so the next published snapshot no longer carries them. Returns the count.
 */
export async function redactStoredErrors(store: Store, redact: (text: string) => string): Promise<number> {
  const rows = await store.all<{ notice_id: string; notifier: string; last_error: string }>(
    'SELECT notice_id, notifier, last_error FROM alert_outbox WHERE last_error IS NOT NULL',
  );
  const changed = rows.map((r) => ({ ...r, clean: redact(r.last_error).slice(0, ERROR_CHARS) })).filter((r) => r.clean !== r.last_error);
  if (changed.length === 0) return 0;
  await store.transaction(async (s) => {
    for (const r of changed) {
      await s.run('UPDATE alert_outbox SET last_error = $err WHERE notice_id = $id AND notifier = $name', { err: r.clean, id: r.notice_id, name: r.notifier });
    }
  });
  return changed.length;
}

export interface DeliverResult {
  /** Stored errors of earlier deliveries rewritten because they held a secret (see redactStoredErrors). */
  redacted: number;
  sent: number;
  retrying: number;
  failed: number;
  byNotifier: Record<string, { sent: number; retrying: number; failed: number }>;
}

const ts = (d: Date) => d.toISOString().replace('T', ' ').replace('Z', '');

// Every write goes through Store.transaction, which raises the store's generation: the snapshot's publish
// step then knows delivery states changed (what `cbp alerts` shows analysts).

/** Creates the missing outbox rows of every notify-able notice for each notifier. */
export async function enqueueNotices(store: Store, notifiers: string[], opts: { now?: Date; lookbackDays?: number } = {}): Promise<void> {
  const now = opts.now ?? new Date();
  const since = new Date(now.getTime() - (opts.lookbackDays ?? 30) * 86_400_000);
  for (const name of notifiers) {
    const [{ n }] = await store.all<{ n: number | bigint }>(
      `SELECT count(*) AS n FROM alerts a WHERE a.notify AND a.created_at >= $since::TIMESTAMP
          AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.notifier = $name)`,
      { name, since: ts(since) },
    );
    if (Number(n) === 0) continue;
    await store.transaction((s) => s.run(
      `INSERT INTO alert_outbox (notice_id, notifier, status, attempts, last_error, next_attempt_at, sent_at, created_at)
       SELECT a.notice_id, $name, 'pending', 0, NULL, $now::TIMESTAMP, NULL, $now::TIMESTAMP
         FROM alerts a
        WHERE a.notify AND a.created_at >= $since::TIMESTAMP
          AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.notifier = $name)
       ON CONFLICT DO NOTHING`,
      { name, now: ts(now), since: ts(since) },
    ));
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
  const redact = deliveryRedactor(opts.secrets, notifiers);
  const redacted = await redactStoredErrors(store, redact);
  await enqueueNotices(store, notifiers.map((n) => n.name), { now, lookbackDays: opts.lookbackDays });
  const result: DeliverResult = { redacted, sent: 0, retrying: 0, failed: 0, byNotifier: {} };
  let writes: Promise<unknown> = Promise.resolve();
  const write = (sql: string, params: Record<string, string | number | null>) => {
    const p = writes.then(() => store.transaction((s) => s.run(sql, params as never)));
    writes = p.catch(() => undefined);
    return p;
  };
  await Promise.all(
    notifiers.map(async (notifier) => {
      const stats = (result.byNotifier[notifier.name] = { sent: 0, retrying: 0, failed: 0 });
      let lastError = '';
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
          lastError = redact(describeError(e)).slice(0, ERROR_CHARS);
          await write(
            `UPDATE alert_outbox SET status = $status, attempts = $attempts, last_error = $err, next_attempt_at = $next::TIMESTAMP
              WHERE notice_id = $id AND notifier = $name`,
            {
              status: failed ? 'failed' : 'pending',
              attempts,
              err: lastError,
              next: ts(new Date(now.getTime() + delay)),
              id: notice.notice_id,
              name: notifier.name,
            },
          );
          if (failed) stats.failed++;
          else stats.retrying++;
        }
      }
      if (stats.retrying + stats.failed > 0) {
        opts.logger?.warn(
          { notifier: notifier.name, sent: stats.sent, retrying: stats.retrying, failed: stats.failed, lastError },
          `alert notifier ${notifier.name}: ${stats.retrying + stats.failed} deliver${stats.retrying + stats.failed === 1 ? 'y' : 'ies'} failed (${stats.failed} given up); last error: ${lastError}`,
        );
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

/**
 * Notices marked for delivery that no notifier has sent (none configured, or every delivery still failing):
 * with no notifier configured, the people these notices are for have been told nothing.
 */
export async function untoldNotices(store: Pick<Store, 'all'>): Promise<number> {
  const [r] = await store.all<{ n: number | bigint }>(
    `SELECT count(*) AS n FROM alerts a
      WHERE a.notify AND NOT EXISTS (SELECT 1 FROM alert_outbox o WHERE o.notice_id = a.notice_id AND o.status = 'sent')`,
  );
  return Number(r?.n ?? 0);
}

/** Sets failed rows back to pending (after fixing a notifier's configuration). */
export async function requeueFailed(store: Store, notifier?: string): Promise<void> {
  await store.transaction((s) =>
    s.run(
      `UPDATE alert_outbox SET status = 'pending', next_attempt_at = current_timestamp::TIMESTAMP
        WHERE status = 'failed' ${notifier ? 'AND notifier = $name' : ''}`,
      notifier ? { name: notifier } : undefined,
    ),
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
