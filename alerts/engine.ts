// Alert evaluation after every load: ratios → levels (rules/evaluate.ts) → notices by transition and the
// states to record (alerts/notices.ts, pure) → the alert tables (store/alerts.ts). Notice ids are a hash of
// what the notice says, so evaluating the same data twice writes nothing new.
import type { Store } from '../store/db.ts';
import { monthOf, ratioRowsOf } from '../store/ratios.ts';
import { refreshRatioInputs, touchedMonths } from '../store/ratio-inputs.ts';
import { explainedMids, writeRatioMart, type MartScope } from '../store/ratio-mart.ts';
import { unknownRowsOf } from '../store/status.ts';
import { createHash } from 'node:crypto';
import {
  deliveriesOf, hotSeriesRows, lastEvaluation, levelsReachedIn, noticeFlags, noticeHistory, priorNotices, openBatchWriter, recordedStates, stageHotSeries,
  saveEvaluation, stageRules, clearExplanations, forgetEvaluation, CAPTURE_MONTH, type EvaluatedRules, type MidClassRow, type RecordedState, type RulePickRow, type RuleTableRow,
  type SourceMark,
} from '../store/alerts.ts';
import { regionInfo, rulesFor } from '../rules/evaluate.ts';
import { CONDITION_LABELS, figure, percent } from '../rules/explain.ts';
import { addMonths } from '../rules/evaluate.ts';
import { explainEach } from '../rules/explain.ts';
import { watchOf, type RuleSet } from '../rules/thresholds.ts';
import type { RatioRow } from '../contract/ratios.ts';
import { deliveryState, judgeBatch, ruleTargets, targetFloors, type Notice } from './notices.ts';

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
  /**
   * Judge every month, the ratio inputs of every month computed again (store/ratio-inputs.ts). Default: only the months touched since the last evaluation under the same rules (by
   * any writer: store/alerts.ts sourceMarks), the months since its asOf, asOf's month and the one before —
   * plus lookbackMonths before them for the streaks; every month when there was none.
   */
  full?: boolean;
}

/**
 * Months of history a level in force at month m depends on: an entry at most months_to_leave − 1 months
 * before m, whose streak began at most months_to_enter − 1 months before that; one more for the month
 * before the first judged (its level is what a notice of the first month is a transition from).
 */
export function lookbackMonths(set: RuleSet): number {
  const all = [...set.rules, ...Object.values(set.mids).flatMap((m) => m.rules)].filter((r) => r.enabled);
  return Math.max(1, ...all.map((r) => r.months_to_enter + r.months_to_leave));
}

export { touchedMonths };

/**
 * Contiguous ranges of MIDs (in the order given: SQL's) covering every MID, each holding at most `size` hot ones,
 * with its hot MIDs: the batches an evaluation judges and writes in. Cut by position, never by comparing strings in
 * JS (SQL's order is the one the ranges are used in).
 */
export function hotRanges(mids: Array<{ mid: string; hot: boolean }>, size: number): Array<{ lo: string; hi: string; hot: string[] }> {
  const out: Array<{ lo: string; hi: string; hot: string[] }> = [];
  let start = 0;
  let hot: string[] = [];
  mids.forEach((m, i) => {
    if (m.hot) hot.push(m.mid);
    if (hot.length === Math.max(1, size) && i + 1 < mids.length) {
      out.push({ lo: mids[start].mid, hi: m.mid, hot });
      start = i + 1;
      hot = [];
    }
  });
  if (start < mids.length) out.push({ lo: mids[start].mid, hi: mids[mids.length - 1].mid, hot });
  return out;
}

/**
 * The rule set as SQL reads it (store/alerts.ts stageRules: which series are hot): the rules of MIDs without an
 * entry of their own (class ''), and of each MID with one, in rulesFor's order; the MIDs' classes and regions.
 */
export function ruleTables(set: RuleSet): { rules: RuleTableRow[]; classes: MidClassRow[] } {
  const rules: RuleTableRow[] = [];
  const classes: MidClassRow[] = [];
  const add = (cls: string, list: ReturnType<typeof rulesFor>) => {
    const first = new Map<string, number>();
    list.forEach((r, ord) => {
      const k = `${r.network}\u0000${r.program}\u0000${r.level}`;
      if (!first.has(k)) first.set(k, ord);
      rules.push({
        class: cls, ord, level_ord: first.get(k) as number, level: r.level, rank: r.rank, network: r.network, program: r.program, metric: r.metric,
        comparison: r.comparison, threshold: r.ratio_threshold, threshold_text: percent(r.ratio_threshold),
        from_month: r.effective_from ? r.effective_from.slice(0, 7) : '0000-00', to_month: r.effective_to ? r.effective_to.slice(0, 7) : '9999-99',
        certainty: r.certainty, certainty_note: r.certainty_note ?? null,
        conditions: r.conditions.map((c) => ({ field: c.field, comparison: c.comparison, value: c.value, label: CONDITION_LABELS[c.field], value_text: figure(c.value) })),
      });
    });
  };
  add('', rulesFor({ ...set, mids: {} }, '\u0000'));
  for (const mid of Object.keys(set.mids)) {
    const cls = `mid:${mid}`;
    add(cls, rulesFor(set, mid));
    const { region, source } = regionInfo(set, mid);
    classes.push({ mid, class: cls, region, region_source: source });
  }
  return { rules, classes };
}

/**
 * For each class × network × program × metric, the rule a row is measured against when no level is near
 * (rules/explain.ts explainRow: the first rule of the lowest-ranked level in force), over the ranges of months in
 * which that choice holds: what mart_ratios explains the rows evaluation did not store with.
 */
export function rulePicks(rules: RuleTableRow[]): RulePickRow[] {
  const by = new Map<string, RuleTableRow[]>();
  for (const r of rules) {
    const k = `${r.class}\u0000${r.network}\u0000${r.program}\u0000${r.metric}`;
    const l = by.get(k);
    if (l) l.push(r);
    else by.set(k, [r]);
  }
  // A level's rank is the highest of its rules' for the class × network × program, whatever the metric and the
  // months (rules/evaluate.ts evaluateSeries): the order levels are measured in.
  const levelRank = new Map<string, number>();
  for (const r of rules) {
    const k = `${r.class}\u0000${r.network}\u0000${r.program}\u0000${r.level}`;
    levelRank.set(k, Math.max(levelRank.get(k) ?? -Infinity, r.rank));
  }
  const rankOf = (r: RuleTableRow) => levelRank.get(`${r.class}\u0000${r.network}\u0000${r.program}\u0000${r.level}`) as number;
  const out: RulePickRow[] = [];
  for (const list of by.values()) {
    // The months where the rules in force change: every rule's first month and the month after its last.
    const starts = new Set<string>(['0000-00']);
    for (const r of list) {
      starts.add(r.from_month);
      if (r.to_month !== '9999-99') starts.add(addMonths(r.to_month, 1));
    }
    const sorted = [...starts].sort();
    sorted.forEach((from, i) => {
      const to = i + 1 < sorted.length ? addMonths(sorted[i + 1], -1) : '9999-99';
      const live = list.filter((r) => r.from_month <= from && r.to_month >= from)
        .sort((a, b) => rankOf(a) - rankOf(b) || a.level_ord - b.level_ord || a.ord - b.ord);
      const p = live[0];
      if (!p) return;
      out.push({
        class: p.class, network: p.network, program: p.program, metric: p.metric, from_month: from, to_month: to,
        level: p.level, comparison: p.comparison, threshold: p.threshold, threshold_text: p.threshold_text,
        certainty: p.certainty, certainty_note: p.certainty_note, conditions: p.conditions,
        bands: live.map((r) => ({ comparison: r.comparison, threshold: r.threshold, conditions: r.conditions.map((c) => ({ field: c.field, cmp: c.comparison, value: c.value })) })),
      });
    });
  }
  return out;
}

/** A rule set's identity: another one means every month is judged again. */
export function rulesHash(set: RuleSet): string {
  return createHash('sha256').update(JSON.stringify(set)).digest('hex').slice(0, 32);
}

export interface EvaluateAlertsResult {
  /** ratio rows judged (only program × metric pairs some enabled rule reads) */
  rows: number;
  /** mid × network × program × month judged with a level reached */
  levelsReached: number;
  projectedLevels: number;
  /** notices written by this run (already known ones are not repeated) */
  newNotices: Notice[];
  /** first month judged (null: every month) */
  fromMonth: string | null;
  /**
   * milliseconds spent per phase: inputs (fingerprints, and the ratio inputs of months whose sources changed computed
   * again: store/ratio-inputs.ts), marks (the last evaluation's), sql (hot series found and read), rules (levels and
   * notices, JS), explain (hot rows' explanations, JS), writes
   */
  timings: Record<'inputs' | 'marks' | 'sql' | 'rules' | 'explain' | 'writes' | 'mart', number>;
  /** ratio_mart rows written (the months from fromMonth on) */
  martRows: number;
}

/**
 * Evaluates every rule over the store's ratios and records states, new notices and the explanations of the
 * series the rules judged. First the ratio inputs kept per month are brought up to date (store/ratio-inputs.ts:
 * only the months whose sources changed are computed again). Then one statement finds the hot series of every
 * MID: a month in a level's watch band under the MID's rules, or a level recorded as reached. Only those reach
 * JS, batchMids hot MIDs at a time (default 1,000: a batch is one transaction), to be judged (rules/evaluate.ts),
 * noticed and explained in groups of whole MIDs of about judgeRows rows (default JUDGE_ROWS); every other row can be
 * at no level, in no watch band and owes no notice, and mart_ratios explains it when read from the rules saved with
 * the evaluation (saveEvaluation). So 10,000 MIDs × 36 months never sit in memory, and a full evaluation writes the
 * few rows the rules can move.
 */
export async function evaluateAlerts(store: Store, opts: EvaluateAlertsOptions & { batchMids?: number; judgeRows?: number }): Promise<EvaluateAlertsResult> {
  const asOfMonth = monthOf(opts.asOf);
  const now = (opts.now ?? new Date()).toISOString();
  const notifySince = opts.notifySince ?? addMonths(asOfMonth, -1);
  const timings = { inputs: 0, marks: 0, sql: 0, rules: 0, explain: 0, writes: 0, mart: 0 };
  const result: EvaluateAlertsResult = { rows: 0, levelsReached: 0, projectedLevels: 0, newNotices: [], fromMonth: null, timings, martRows: 0 };
  const timed = async <T>(phase: keyof typeof timings, fn: () => Promise<T> | T): Promise<T> => {
    const t0 = performance.now();
    try { return await fn(); } finally { timings[phase] += performance.now() - t0; }
  };
  // Only the network × program × metric some enabled rule reads are computed (store/alerts.ts).
  const floors = targetFloors(opts.rules);
  // Which months to judge: those touched since the last evaluation (and every month after its asOf), else all.
  const hash = rulesHash(opts.rules);
  // The ratio inputs of the months whose sources changed are computed again (all of them the first time), and the
  // fingerprints they reflect are those this evaluation compares with the last one's.
  const { marks } = await timed('inputs', async () => {
    const r = await refreshRatioInputs(store, { all: opts.full });
    // What the refresh's queries freed goes back to the system before the judging allocates its own.
    await store.releaseMemory('allocator');
    return r;
  });
  const last = opts.full ? null : await timed('marks', () => lastEvaluation(store));
  let fromMonth: string | null = null;
  const touched = last ? touchedMonths(last.marks, marks) : [];
  // Events' capture began at another day (CAPTURE_MONTH): every month's rows say so, every month is judged.
  if (last && last.rulesHash === hash && last.asOfMonth <= asOfMonth && !touched.includes(CAPTURE_MONTH)) {
    fromMonth = [addMonths(asOfMonth, -1), addMonths(last.asOfMonth, 1), ...touched].reduce((a, b) => (b < a ? b : a));
  }
  result.fromMonth = fromMonth;
  // What the kept mart rewrites (store/ratio-mart.ts): the months whose sources changed and those past the last
  // evaluation's whole; of the others, the rows of MIDs with explanations stored before or after (and grouped MIDs).
  const mart: MartScope = {
    fromMonth, wholeMonths: touched, wholeAfter: last?.asOfMonth,
    mids: fromMonth === null ? [] : [...await explainedMids(store, fromMonth), ...Object.values(opts.rules.groups ?? {}).flatMap((g) => g.mids)],
  };
  const windowFrom = fromMonth === null ? null : addMonths(fromMonth, -lookbackMonths(opts.rules));
  // notice_id → notify, kept up to date group by group.
  const known = await noticeFlags(store);
  // Judges a batch's rows (sorted by MID) in groups of whole MIDs of about JUDGE_ROWS rows, each group's states and
  // explanations staged as soon as it is judged (store/alerts.ts openBatchWriter), then records the batch in one
  // transaction. A group's levels, projections and explanations are garbage once staged: memory holds one group's,
  // not the batch's (tens of thousands of rows in a full evaluation).
  const judgeAndRecord = async (rows: RatioRow[], recorded: RecordedState[], prior: Notice[], where: { range?: [string, string]; mids?: string[] }, size = opts.judgeRows ?? JUDGE_ROWS) => {
    const recordedOf = byMid(recorded);
    const priorOf = byMid(prior);
    const fresh: Notice[] = [];
    const promoted: Notice[] = [];
    // Alone on the connection (store.exclusive) from the staging tables' creation to their drop: no other caller's
    // statement lands between the appenders' rows and the batch's transaction.
    await store.exclusive(async () => {
      const writer = await timed('writes', () => openBatchWriter(store, { ...where, asOfMonth, fromMonth, at: now }));
      try {
        const groups = midGroups(rows, size);
        for (const group of groups) {
          // A group is judged with its MIDs' recorded states and prior notices: those of a MID without rows judge
          // nothing (no level of theirs to revise or stand), so none is lost.
          const one = groups.length === 1;
          const j = await timed('rules', () => judgeBatch(group, one ? recorded : group.mids.flatMap((m) => recordedOf.get(m) ?? []), {
            rules: opts.rules, notifySince, now, known, fromMonth, prior: one ? prior : group.mids.flatMap((m) => priorOf.get(m) ?? []),
          }));
          for (const n of j.fresh) known.set(n.notice_id, n.notify);
          for (const n of j.promoted) known.set(n.notice_id, true);
          fresh.push(...j.fresh);
          promoted.push(...j.promoted);
          result.rows += group.length;
          result.levelsReached += j.levelsReached;
          result.projectedLevels += j.projectedLevels;
          await timed('explain', () => {
            writer.states(j.states);
            const shown = fromMonth === null ? group : group.filter((r) => r.month >= fromMonth);
            explainEach(shown, j.levels, j.projections, opts.rules, (r, e) => writer.explain(r, e));
          });
        }
        // One transaction a batch: its states, notices and explanations are recorded together or not at all.
        await timed('writes', () => writer.commit({ fresh, promoted: promoted.map((n) => n.notice_id) }));
      } finally {
        await writer.close();
      }
    });
    result.newNotices.push(...fresh, ...promoted);
  };
  // MIDs monitored in a group are judged as the group for the group's programs (a pass of their own below).
  const groups = Object.entries(opts.rules.groups ?? {});
  const grouped = new Map<string, Set<string>>();
  for (const [, g] of groups) for (const m of g.mids) grouped.set(m, new Set(g.programs));
  const tables = ruleTables(opts.rules);
  const evaluated: EvaluatedRules = {
    picks: rulePicks(tables.rules), targets: ruleTargets(opts.rules), classes: tables.classes,
    defaultRegion: opts.rules.defaultRegion, watchFraction: watchOf(opts.rules).fraction,
    grouped: [...grouped].flatMap(([mid, ps]) => [...ps].map((program) => ({ mid, program }))),
  };
  // Until this evaluation is recorded, none is: one that stops half way (killed, failed) leaves the next to judge
  // every month again, and mart_ratios explains no row it did not store meanwhile.
  await timed('writes', () => forgetEvaluation(store));
  if (floors.length === 0) {
    // No rule reads any ratio: nothing to judge, and nothing a stored explanation could still say.
    await timed('writes', () => clearExplanations(store));
    await saveEvaluation(store, { marks, asOfMonth, rulesHash: hash, firstMonth: fromMonth, at: now, rules: evaluated });
    result.martRows = (await timed('mart', () => writeRatioMart(store, mart))).rows;
    return result;
  }
  const conditions = await stageRules(store, { ...tables, grouped: evaluated.grouped });
  const watchFraction = watchOf(opts.rules).fraction;
  // The hot series of every MID in one statement over the kept inputs; then their rows, judged and written a batch
  // of hot MIDs at a time (every MID with a hot series or explanations stored in one of the batches: a batch's writes
  // replace what its range held).
  // The months the kept inputs may hold: those of the MID report when they were refreshed (store/ratio-inputs.ts).
  const statMonths = [...new Set(marks.filter((m) => m.source === 'mid_stats').map((m) => m.month))];
  const mids = await timed('sql', () => stageHotSeries(store, { floors, watchFraction, conditions, asOfMonth, fromMonth: windowFrom, recordedFrom: windowFrom }));
  for (const { lo, hi, hot } of hotRanges(mids, opts.batchMids ?? 1_000)) {
    let rows = await timed('sql', () => hotSeriesRows(store, { floors, asOfMonth, mids: hot, fromMonth: windowFrom, months: statMonths }));
    if (grouped.size) rows = rows.filter((r) => !grouped.get(r.mid)?.has(r.program));
    const prior = fromMonth === null ? [] : await timed('sql', () => priorNotices(store, { lo, hi, before: fromMonth }));
    const recorded = await timed('sql', () => recordedStates(store, { lo, hi, from: fromMonth }));
    await judgeAndRecord(rows, recorded, prior, { range: [lo, hi] });
  }
  for (const [id, g] of groups) {
    const all = await ratioRowsOf(store, { mids: g.mids, programs: g.programs, asOf: `${asOfMonth}-01T00:00:00Z` });
    const rows = windowFrom === null ? all : all.filter((r) => r.month >= windowFrom);
    const prior = fromMonth === null ? [] : await priorNotices(store, { lo: id, hi: id, before: fromMonth });
    // A group's rows are judged together (its MIDs' rows as the group's).
    await judgeAndRecord(rows, await recordedStates(store, { lo: id, hi: id, from: fromMonth }), prior, { mids: [] }, Infinity);
  }
  await timed('writes', async () => {
    await saveEvaluation(store, { marks, asOfMonth, rulesHash: hash, firstMonth: fromMonth, at: now, rules: evaluated });
  });
  // The kept mart of the months judged, from the explanations just recorded (store/ratio-mart.ts).
  result.martRows = (await timed('mart', () => writeRatioMart(store, mart))).rows;
  // The cache stays (the next evaluation reads the same blocks); the memory the queries freed goes back.
  await store.releaseMemory('allocator');
  return result;
}

/**
 * About this many ratio rows are judged together (alerts/engine.ts evaluateAlerts): few enough that a group's levels
 * and explanations die young in the JS heap (measured over a re-judge of 28,800 rows: groups of 2,000 rows left
 * 25–30 MB promoted to the old generation, groups of 100 about 5), many enough that the per-group work stays small
 * (the judging took as long at 100 rows a group as at 2,000).
 */
const JUDGE_ROWS = 250;

/**
 * Rows sorted by MID as groups of whole MIDs, each closed once it holds at least `size` rows, with its MIDs. A MID's
 * rows are never split: its series are judged whole (streaks, notices). Compares MIDs for equality only (never their
 * order: SQL's is the one the rows come in).
 */
export function midGroups(rows: RatioRow[], size: number): Array<RatioRow[] & { mids: string[] }> {
  const out: Array<RatioRow[] & { mids: string[] }> = [];
  let start = 0;
  let mids: string[] = [];
  for (let i = 0; i < rows.length; i++) {
    const mid = rows[i].mid;
    if (i > start && mid !== rows[i - 1].mid) {
      if (i - start >= size) {
        out.push(Object.assign(rows.slice(start, i), { mids }));
        start = i;
        mids = [];
      }
    }
    if (i === start || mid !== rows[i - 1].mid) mids.push(mid);
  }
  if (start < rows.length) out.push(Object.assign(rows.slice(start), { mids }));
  return out;
}

/** Items by their MID (each list in the order given). */
function byMid<T extends { mid: string }>(items: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const x of items) {
    const list = out.get(x.mid);
    if (list) list.push(x);
    else out.set(x.mid, [x]);
  }
  return out;
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
  /** mid × network × program × month unknown in asOf's month and the one before (a source missing), and what to load */
  unknown: { series: number; missing: string[] };
}

/**
 * What the orchestration calls after every load (activities' computeRatios): evaluate, record, and mark
 * new notices for delivery unless notify is false (a backfill records history without paging anyone).
 */
export async function evaluateAfterLoad(store: Store, opts: { asOf: Date | string; rules: RuleSet; notify: boolean; now?: Date }): Promise<AfterLoadResult> {
  const r = await evaluateAlerts(store, { asOf: opts.asOf, rules: opts.rules, now: opts.now, notifySince: opts.notify ? undefined : '9999-12' });
  const month = monthOf(opts.asOf);
  const [before, now] = await Promise.all([unknownRowsOf(store, addMonths(month, -1)), unknownRowsOf(store, month)]);
  const missing = [...new Set([...before.missing, ...now.missing].sort((a, b) => b.series - a.series).map((m) => m.missing))];
  return {
    ratios: r.rows, alerts: await levelsReachedIn(store, month), noticesQueued: r.newNotices.filter((n) => n.notify).length,
    unknown: { series: before.series + now.series, missing },
  };
}
