// Alert evaluation after every load: ratios → levels (rules/evaluate.ts) → notices by transition and the
// states to record (alerts/notices.ts, pure) → the alert tables (store/alerts.ts). Notice ids are a hash of
// what the notice says, so evaluating the same data twice writes nothing new.
import type { Store } from '../store/db.ts';
import { midRanges, monthOf, ratioMids, ratioRowsOf } from '../store/ratios.ts';
import { deliveriesOf, levelsReachedIn, noticeFlags, noticeHistory, ratioRowsForAlerts, recordEvaluation, recordedStates, writeExplanations, type ExplanationRow } from '../store/alerts.ts';
import { addMonths } from '../rules/evaluate.ts';
import { explainWith } from '../rules/explain.ts';
import type { RuleSet } from '../rules/thresholds.ts';
import type { RatioRow } from '../contract/ratios.ts';
import { deliveryState, judgeBatch, targetFloors, type BatchJudgement, type Notice } from './notices.ts';

// The pure part, where its callers have always found it.
export {
  NOTICE_KINDS,
  deliveryState,
  deriveNotices,
  noticeId,
  noticeMessage,
  pageNewestOnly,
  recordedKey,
  revisedNotices,
  ruleTargets,
  standingNotices,
  targetFloors,
  type Delivery,
  type DeliveryState,
  type Notice,
  type NoticeKind,
  type RecordedLevel,
} from './notices.ts';

export interface EvaluateAlertsOptions {
  asOf: Date | string;
  rules: RuleSet;
  /** First month whose notices are delivered (default: the month before asOf's). */
  notifySince?: string;
  /** Clock for created_at (default: now). */
  now?: Date;
}

export interface EvaluateAlertsResult {
  /** ratio rows judged (only program × metric pairs some enabled rule reads) */
  rows: number;
  /** mid × network × program × month judged with a level reached */
  levelsReached: number;
  projectedLevels: number;
  /** notices written by this run (already known ones are not repeated) */
  newNotices: Notice[];
}

/**
 * Evaluates every rule over the store's ratios and records states and new notices. MIDs are judged in
 * batches (batchMids at a time, default 1,000), and only series that can reach a level are fetched, so
 * 10,000 MIDs × 36 months never sit in memory at once.
 */
export async function evaluateAlerts(store: Store, opts: EvaluateAlertsOptions & { batchMids?: number }): Promise<EvaluateAlertsResult> {
  const asOfMonth = monthOf(opts.asOf);
  const now = (opts.now ?? new Date()).toISOString();
  const notifySince = opts.notifySince ?? addMonths(asOfMonth, -1);
  const result: EvaluateAlertsResult = { rows: 0, levelsReached: 0, projectedLevels: 0, newNotices: [] };
  // Only series that can reach a level under some enabled rule are read (store/alerts.ts).
  const floors = targetFloors(opts.rules);
  if (floors.length === 0) return result;
  // notice_id → notify, kept up to date batch by batch.
  const known = await noticeFlags(store);
  const take = async (rows: RatioRow[], j: BatchJudgement, where: { range?: [string, string]; mids?: string[] }) => {
    for (const n of j.fresh) known.set(n.notice_id, n.notify);
    for (const n of j.promoted) known.set(n.notice_id, true);
    result.rows += rows.length;
    result.newNotices.push(...j.fresh, ...j.promoted);
    result.levelsReached += j.levelsReached;
    result.projectedLevels += j.projectedLevels;
    await recordEvaluation(store, { states: j.states, fresh: j.fresh, promoted: j.promoted.map((n) => n.notice_id) });
    const explained = explainWith(rows, j.levels, j.projections, opts.rules).map(explanationRow);
    await writeExplanations(store, { ...where, asOfMonth, rows: explained, at: now });
  };
  // MIDs monitored in a group are judged as the group for the group's programs (a pass of their own below).
  const groups = Object.entries(opts.rules.groups ?? {});
  const grouped = new Map<string, Set<string>>();
  for (const [, g] of groups) for (const m of g.mids) grouped.set(m, new Set(g.programs));
  for (const [lo, hi] of midRanges(await ratioMids(store), opts.batchMids ?? 1000)) {
    let rows = await ratioRowsForAlerts(store, { floors, asOfMonth, lo, hi });
    if (grouped.size) rows = rows.filter((r) => !grouped.get(r.mid)?.has(r.program));
    const j = judgeBatch(rows, await recordedStates(store, { lo, hi }), { rules: opts.rules, notifySince, now, known });
    await take(rows, j, { range: [lo, hi] });
  }
  for (const [id, g] of groups) {
    const rows = await ratioRowsOf(store, { mids: g.mids, programs: g.programs, asOf: `${asOfMonth}-01T00:00:00Z` });
    const j = judgeBatch(rows, await recordedStates(store, { lo: id, hi: id }), { rules: opts.rules, notifySince, now, known });
    await take(rows, j, { mids: [] });
  }
  return result;
}

function explanationRow(r: ReturnType<typeof explainWith>[number]): ExplanationRow {
  return {
    mid: r.mid, network: r.network, program: r.program, metric: r.metric, month: r.month, is_projection: r.is_projection,
    level: r.level, state: r.state, next_level: r.next_level, next_threshold: r.next_threshold, closeness: r.closeness,
    reason: r.reason, region: r.region, region_source: r.region_source, monitored_as: r.monitored_as,
    superseded_by: r.superseded_by, certainty: r.certainty, certainty_note: r.certainty_note,
  };
}

/**
 * The alert history, newest first, each notice with its deliveries (one per notifier, last error included)
 * and its delivery_state. `redact` is applied to every last_error shown (they are redacted when stored; a
 * store written before that may still hold one).
 */
export async function listAlerts(
  store: Pick<Store, 'all'>,
  q: { mid?: string; limit?: number; redact?: (text: string) => string } = {},
): Promise<Array<Record<string, unknown>>> {
  const rows = await noticeHistory(store, { mid: q.mid, limit: q.limit ?? 1000 });
  const byNotice = await deliveriesOf(store, rows.map((r) => String(r.notice_id)));
  return rows.map((r) => {
    const deliveries = (byNotice.get(String(r.notice_id)) ?? []).map((d) => (d.last_error === null || !q.redact ? d : { ...d, last_error: q.redact(d.last_error) }));
    return { ...r, delivery_state: deliveryState(r.notify === true, deliveries), deliveries };
  });
}

export interface AfterLoadResult {
  /** ratio rows judged */
  ratios: number;
  /** mid × network × program at a level in asOf's month (observed, month-to-date included) */
  alerts: number;
  /** new notices marked for delivery by this call */
  noticesQueued: number;
}

/**
 * What the orchestration calls after every load (activities' computeRatios): evaluate, record, and mark
 * new notices for delivery unless notify is false (a backfill records history without paging anyone).
 */
/**
 * What the orchestration calls after every load (activities' computeRatios): evaluate, record, and mark
 * new notices for delivery unless notify is false (a backfill records history without paging anyone).
 */
export async function evaluateAfterLoad(store: Store, opts: { asOf: Date | string; rules: RuleSet; notify: boolean; now?: Date }): Promise<AfterLoadResult> {
  const r = await evaluateAlerts(store, { asOf: opts.asOf, rules: opts.rules, now: opts.now, notifySince: opts.notify ? undefined : '9999-12' });
  return { ratios: r.rows, alerts: await levelsReachedIn(store, monthOf(opts.asOf)), noticesQueued: r.newNotices.filter((n) => n.notify).length };
}
