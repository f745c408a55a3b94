// Alert evaluation after every write: the ratio table judged again from the months that changed (store/ratio-refresh.ts),
// then notices from the judge's state changes (alerts/notices.ts, pure) recorded with the states (store/alerts.ts).
// Notice ids are a hash of what the notice says, so evaluating the same data twice writes nothing new.
import type { Store } from '../store/db.ts';
import { monthOf } from '../store/ratios.ts';
import { refreshRatios } from './refresh.ts';
import { judgedMonths, judgedRanges } from '../store/judged-months.ts';
import { unknownRowsOf } from '../store/status.ts';
import { deliveriesOf, levelsInForce, noticeHistory, priorNotices } from '../store/alert-history.ts';
import { noticeFlags, type Notice } from '../store/alerts.ts';
import { recordJudgement } from '../store/alert-record.ts';
import { recordedStates } from '../store/alert-states.ts';
import { addMonths } from '../lib/utc.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import type { JudgedMonth } from '../store/judged-months.ts';
import { judgeBatch } from './notices.ts';
import { deliveryState } from './outbox.ts';
import { likelyNotices } from './likely.ts';

export interface EvaluateAlertsOptions {
  asOf: Date | string;
  rules: RuleSet;
  /** First month whose notices are delivered (default: the month before asOf's). */
  notifySince?: string;
  /** Clock for created_at (default: now). */
  now?: Date;
  /** Judge every month again, the ratio inputs of every month computed again. */
  full?: boolean;
}

export interface EvaluateAlertsResult {
  rows: number; // ratio rows written
  levelsReached: number; projectedLevels: number; // series months at a level, and projected to one, among those noticed
  newNotices: Notice[]; // notices written by this run (already known ones are not repeated)
  fromMonth: string | null | undefined; // first month judged again (null: every month; undefined: none changed)
}

/** MIDs whose judged months are noticed together (one transaction of states and notices). */
const BATCH_MIDS = 1_000;

/**
 * Brings the ratio table up to date, then notices the months judged again and the month before asOf's (a notice of
 * history now within notifySince, a level standing), up to asOf's month, and records them.
 */
export async function evaluateAlerts(store: Store, opts: EvaluateAlertsOptions): Promise<EvaluateAlertsResult> {
  const asOfMonth = monthOf(opts.asOf);
  const now = (opts.now ?? new Date()).toISOString();
  const notifySince = opts.notifySince ?? addMonths(asOfMonth, -1);
  const refresh = await refreshRatios(store, opts.rules, { full: opts.full });
  const floor = [addMonths(asOfMonth, -1), notifySince].reduce((a, b) => (b < a ? b : a));
  const from = refresh.fromMonth === null ? null : refresh.fromMonth === undefined || floor < refresh.fromMonth ? floor : refresh.fromMonth;
  const result: EvaluateAlertsResult = { rows: refresh.rows, levelsReached: 0, projectedLevels: 0, newNotices: [], fromMonth: refresh.fromMonth };
  const known = await noticeFlags(store);
  for (const range of await judgedRanges(store, from)) {
    const { levels, projections } = await judgedMonths(store, { from, last: asOfMonth, range });
    for (const batch of byMidBatches(levels, projections, BATCH_MIDS)) {
      const prior = from === null ? [] : await priorNotices(store, { lo: batch.lo, hi: batch.hi, before: from });
      const recorded = await recordedStates(store, { lo: batch.lo, hi: batch.hi, from });
      const j = judgeBatch(batch.levels, batch.projections, recorded, { rules: opts.rules, notifySince, now, known, fromMonth: from, prior });
      await recordJudgement(store, { states: j.states, fresh: j.fresh, promoted: j.promoted.map((n) => n.notice_id) });
      for (const n of j.fresh) known.set(n.notice_id, n.notify);
      for (const n of j.promoted) known.set(n.notice_id, true);
      result.newNotices.push(...j.fresh, ...j.promoted);
      result.levelsReached += j.levelsReached;
      result.projectedLevels += j.projectedLevels;
    }
  }
  // The early warnings of the open months' chances (kept by the refresh), once per series, level and month.
  const likely = await likelyNotices(store, opts.rules, { notifySince, now, known });
  await recordJudgement(store, { states: [], fresh: likely.fresh, promoted: likely.promoted.map((n) => n.notice_id) });
  result.newNotices.push(...likely.fresh, ...likely.promoted);
  await store.releaseMemory('allocator');
  return result;
}

/** Judged months (sorted by MID) in batches of whole MIDs, with each batch's first and last MID. */
function byMidBatches(levels: JudgedMonth[], projections: JudgedMonth[], size: number) {
  const mids = [...new Set([...levels, ...projections].map((l) => l.mid))].sort();
  const out: Array<{ lo: string; hi: string; levels: JudgedMonth[]; projections: JudgedMonth[] }> = [];
  for (let i = 0; i < mids.length; i += size) {
    const part = new Set(mids.slice(i, i + size));
    const [lo, hi] = [mids[i], mids[Math.min(i + size, mids.length) - 1]];
    out.push({ lo, hi, levels: levels.filter((l) => part.has(l.mid)), projections: projections.filter((l) => part.has(l.mid)) });
  }
  return out;
}

/**
 * The alert history, newest first, each notice with its deliveries (one per notifier) and delivery_state; `redact` is
 * applied to every last_error shown (an older store may hold one unredacted).
 */
export async function listAlerts(
  store: Pick<Store, 'all'>,
  q: { mid?: string; kinds?: readonly string[]; limit?: number; redact?: (text: string) => string } = {},
): Promise<Array<Record<string, unknown>>> {
  const rows = await noticeHistory(store, { mid: q.mid, kinds: q.kinds, limit: q.limit ?? 1000 });
  const byNotice = await deliveriesOf(store, rows.map((r) => String(r.notice_id)));
  return rows.map((r) => {
    const deliveries = (byNotice.get(String(r.notice_id)) ?? []).map((d) => (d.last_error === null || !q.redact ? d : { ...d, last_error: q.redact(d.last_error) }));
    return { ...r, delivery_state: deliveryState(r.notify === true, deliveries), deliveries };
  });
}

export interface AfterLoadResult {
  /** ratio rows judged */
  ratios: number;
  /** mid × network × program at a level in alertsMonth */
  alerts: number;
  /** the latest month with observed ratio rows up to asOf's (month to date included); null: none */
  alertsMonth: string | null;
  /** new notices marked for delivery by this call */
  noticesQueued: number;
  /** mid × network × program × month unknown in asOf's month and the one before (a source missing), and what to load */
  unknown: { series: number; missing: string[] };
}

/** After every load (activities' computeRatios): evaluate, record, and mark new notices for delivery unless notify is false. */
export async function evaluateAfterLoad(store: Store, opts: { asOf: Date | string; rules: RuleSet; notify: boolean; now?: Date }): Promise<AfterLoadResult> {
  const r = await evaluateAlerts(store, { asOf: opts.asOf, rules: opts.rules, now: opts.now, notifySince: opts.notify ? undefined : "9999-12" });
  const month = monthOf(opts.asOf);
  const [before, now] = await Promise.all([unknownRowsOf(store, addMonths(month, -1)), unknownRowsOf(store, month)]);
  const missing = [...new Set([...before.missing, ...now.missing].sort((a, b) => b.series - a.series).map((m) => m.missing))];
  const inForce = await levelsInForce(store, month);
  return {
    ratios: r.rows, alerts: inForce.series, alertsMonth: inForce.month, noticesQueued: r.newNotices.filter((n) => n.notify).length,
    unknown: { series: before.series + now.series, missing },
  };
}
