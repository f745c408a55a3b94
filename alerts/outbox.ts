// Delivery of notices through the alert_outbox table: one row per notice × notifier, with status,
// attempts, last_error and next_attempt_at. A failing notifier only delays its own rows; the others go
// on. A row is marked sent right after its notifier accepted it, so a later run never sends it again.
// last_error is copied into the analysts' snapshot: every secret is redacted from it before it is written.
// The statements on the outbox are store/alert-history.ts's; this module decides what to send, when, and what to record.
import type { Logger } from 'pino';
import type { Store } from '../store/db.ts';
import { deliveryErrors, dueDeliveries, markDeliveryFailed, markDeliveriesSent, queueDeliveries, requeueFailedDeliveries, rewriteDeliveryErrors, unsentNoticeCount } from '../store/alert-history.ts';
import type { Delivery } from '../store/alerts.ts';
import { scrub } from '../lib/log.ts';
import { DAY_MS } from '../lib/utc.ts';
import { describeError } from '../lib/errors.ts';
import type { Notifier } from './notifiers/types.ts';
import type { RuleSet } from '../rules/thresholds.ts';
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
  /** The rules whose thresholds the notices' trend charts draw (alerts/notifiers/chart.ts); without them the
   * notices go without a chart. */
  chartRules?: RuleSet;
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
  const changed = (await deliveryErrors(store))
    .map((r) => ({ ...r, last_error: redact(r.last_error).slice(0, ERROR_CHARS), stored: r.last_error }))
    .filter((r) => r.last_error !== r.stored);
  await rewriteDeliveryErrors(store, changed);
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

/** Creates the missing outbox rows of every notify-able notice for each notifier. */
export async function enqueueNotices(store: Store, notifiers: string[], opts: { now?: Date; lookbackDays?: number } = {}): Promise<void> {
  const now = opts.now ?? new Date();
  const since = new Date(now.getTime() - (opts.lookbackDays ?? 30) * DAY_MS);
  for (const name of notifiers) await queueDeliveries(store, name, { now, since });
}

/**
 * Sends every due outbox row. Notifiers run side by side, each through its own rows in notice order;
 * store writes are serialised by Store.transaction (one DuckDB connection).
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
  // Loaded only when charts are drawn: ECharts and resvg are heavy, and the CLI imports this module at start.
  const chartOf = opts.chartRules ? (await import('./notifiers/chart.ts')).noticeCharts(store, opts.chartRules, opts.logger) : null;
  await Promise.all(
    notifiers.map(async (notifier) => {
      const stats = (result.byNotifier[notifier.name] = { sent: 0, retrying: 0, failed: 0 });
      let lastError = '';
      const marks = sentMarks(store, notifier.name, now);
      for (const due of await dueDeliveries(store, notifier.name, now)) {
        if (marks.failed()) break; // what is sent now could not be marked: it waits for the next run
        const { notice } = due;
        const attempts = due.attempts + 1;
        try {
          await notifier.send(notice, chartOf ? { chart: () => chartOf(notice) } : {});
          marks.add({ noticeId: notice.notice_id, attempts });
          stats.sent++;
        } catch (e) {
          const failed = attempts >= maxAttempts;
          const delay = Math.min(maxBackoff, backoff * 2 ** (attempts - 1));
          lastError = redact(describeError(e)).slice(0, ERROR_CHARS);
          await markDeliveryFailed(store, {
            noticeId: notice.notice_id,
            notifier: notifier.name,
            attempts,
            error: lastError,
            givenUp: failed,
            nextAttemptAt: new Date(now.getTime() + delay),
          });
          if (failed) stats.failed++;
          else stats.retrying++;
        }
      }
      await marks.done();
      if (stats.retrying + stats.failed > 0) {
        opts.logger?.warn(
          { notifier: notifier.name, sent: stats.sent, retrying: stats.retrying, failed: stats.failed, lastError },
          `alert notifier ${notifier.name}: ${stats.retrying + stats.failed} deliver${stats.retrying + stats.failed === 1 ? 'y' : 'ies'} failed (${stats.failed} given up); last error: ${lastError}`,
        );
      }
    }),
  );
  for (const s of Object.values(result.byNotifier)) {
    result.sent += s.sent;
    result.retrying += s.retrying;
    result.failed += s.failed;
  }
  return result;
}

/**
 * A notifier's sent marks as a group commit: each transaction writes every mark made while the one before it committed,
 * so sending never waits for a commit, and a crash resends at most the deliveries of one commit (on a lake, a commit
 * takes tens of milliseconds). docs/ratios.md, "Notices".
 */
function sentMarks(store: Store, notifier: string, at: Date) {
  const queued: Array<{ noticeId: string; attempts: number }> = [];
  let writing: Promise<void> | null = null;
  let failure: { error: unknown } | null = null;
  const write = async () => {
    while (queued.length) {
      const batch = queued.splice(0, 500);
      await markDeliveriesSent(store, notifier, batch, at);
    }
  };
  return {
    add(mark: { noticeId: string; attempts: number }) {
      queued.push(mark);
      writing ??= write()
        .catch((error: unknown) => { failure ??= { error }; })
        .finally(() => { writing = null; });
    },
    failed: () => failure !== null,
    /** Waits for every mark; throws if one could not be written (its deliveries stay pending: sent again next time). */
    async done() {
      while (writing) await writing;
      if (failure) throw failure.error;
    },
  };
}

/**
 * Notices marked for delivery that no notifier has sent (none configured, or every delivery still failing):
 * with no notifier configured, the people these notices are for have been told nothing.
 */
export async function untoldNotices(store: Pick<Store, 'all'>): Promise<number> {
  return unsentNoticeCount(store);
}

/** Sets failed rows back to pending (after fixing a notifier's configuration). */
export async function requeueFailed(store: Store, notifier?: string): Promise<void> {
  await requeueFailedDeliveries(store, notifier);
}

/**
 * Where a notice stands: history (recorded, never to be delivered), unsent (to be delivered, but no notifier
 * has a row for it: none configured, or it was older than the lookback when one was set), pending (queued,
 * not tried yet), retrying (a notifier failed and will try again), failed (a notifier gave up), sent (every
 * notifier that has it sent it).
 */
export type DeliveryState = 'history' | 'unsent' | 'pending' | 'retrying' | 'failed' | 'sent';

export function deliveryState(notify: boolean, deliveries: Delivery[]): DeliveryState {
  if (!notify) return 'history';
  if (deliveries.length === 0) return 'unsent';
  if (deliveries.some((d) => d.status === 'failed')) return 'failed';
  if (deliveries.some((d) => d.status === 'pending' && d.attempts > 0)) return 'retrying';
  if (deliveries.some((d) => d.status !== 'sent')) return 'pending';
  return 'sent';
}
