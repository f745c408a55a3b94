// Notices from the judged months (the SQL judge's state changes: alerts/judged-month.ts) and what earlier evaluations
// recorded: transitions (reached, escalated, resolved, projected, watch, unknown), the paging rules, and the states to
// record. No I/O. Notice ids are a hash of what the notice says, so judging the same data twice says nothing new.
import { addMonths } from '../lib/utc.ts';
import { rulesFor } from '../rules/rule-set.ts';
import { watchOf, type RuleSet } from '../rules/thresholds.ts';
import type { AlertStateRow, Notice, RecordedState } from '../store/alerts.ts';
import { build } from './notice-text.ts';
import { seriesIndex, seriesKey, type SeriesMonths } from './judged-month.ts';
import type { JudgedMonth } from '../store/judged-months.ts';

/** A level at a series' month in an index (undefined: none). */
function levelAt(index: Map<string, SeriesMonths>, x: { mid: string; network: string; program: string; month: string }): JudgedMonth | undefined {
  return index.get(seriesKey(x))?.byMonth.get(x.month);
}

const byMonthOrder = (a: JudgedMonth, b: JudgedMonth) => (a.month < b.month ? -1 : a.month > b.month ? 1 : 0);

/** A series' levels by month (stable: levels of one month keep their order); the list itself when already sorted. */
function monthSorted(levels: JudgedMonth[]): JudgedMonth[] {
  for (let i = 1; i < levels.length; i++) if (levels[i - 1].month > levels[i].month) return [...levels].sort(byMonthOrder);
  return levels;
}

/** Notices from each series' monthly levels: reached, escalated, resolved (closed months only) and a projected level above
 * the observed one. Only months from notifySince on are delivered (a first load of 36 months must not page 36 times). */
export function deriveNotices(index: Map<string, SeriesMonths>, projections: JudgedMonth[], opts: { notifySince: string; now: string; watch?: boolean }): Notice[] {
  const out: Notice[] = [];
  for (const series of index.values()) {
    let prev: JudgedMonth | null = null;
    for (const l of monthSorted(series.levels)) {
      const notify = l.month >= opts.notifySince;
      const pl = prev?.level ?? null;
      const pr = prev?.rank ?? null;
      if (l.level !== null && (pl === null || pr === null)) out.push(build('reached', l, l.level, null, notify, opts.now));
      else if (l.level !== null && pr !== null && l.rank !== null && l.rank > pr) out.push(build('escalated', l, l.level, pl, notify, opts.now));
      else if (pl !== null && (l.level === null || (l.rank !== null && pr !== null && l.rank < pr))) {
        out.push(build('resolved', l, pl, l.level, notify, opts.now));
      }
      // The watch band entered (thresholds file watch.notify): once per month the series is in it.
      if (opts.watch && l.level === null && l.watch !== null && pl === null) out.push(build('watch', l, l.watch, null, notify, opts.now));
      // A closed month that cannot be judged (a source not loaded) where a level is held unmet, or near: what to load,
      // once a month. A level met on what is loaded needs no more (a missing source can only add to its numerator), and
      // a month to date holds its level anyway (its chargeback report lags the MID report by a day as a rule).
      const heldUnmet = l.level !== null && !l.met.includes(l.level);
      if (l.missing_sources && !l.is_projection && !l.is_partial && (heldUnmet || (opts.watch && l.level === null && l.watch !== null))) {
        out.push(build('unknown', l, (l.level ?? l.watch) as string, l.level, notify, opts.now));
      }
      // A month missing from the series (no row at all) does not reset the previous level.
      prev = l;
    }
  }
  for (const p of projections) {
    if (p.level === null || p.rank === null) continue;
    const a = levelAt(index, p);
    if (a && a.rank !== null && a.rank >= p.rank) continue;
    out.push(build('projected', p, p.level, a?.level ?? null, p.month >= opts.notifySince, opts.now));
  }
  return out;
}

/** A month an earlier evaluation recorded as holding a level (alert_states, status reached); any state's key. */
export type RecordedLevel = Pick<AlertStateRow, 'mid' | 'network' | 'program' | 'level' | 'month'>;

/**
 * Levels later figures took back: a closed month recorded at a level its figures no longer give is resolved, once, for
 * that month (previous_level: the level now in force; one below it was superseded). Ranks from the rules in force
 * (rankOf); a level they no longer have counts as above any. Paged only for months at or after notifySince.
 */
export function revisedNotices(index: Map<string, SeriesMonths>, recorded: RecordedLevel[], opts: { notifySince: string; now: string; rankOf: (r: RecordedLevel) => number | undefined }): Notice[] {
  const out: Notice[] = [];
  let series: SeriesMonths | undefined;
  let last: RecordedLevel | undefined;
  for (const r of recorded) {
    // Recorded states come series by series too (store/alert-states.ts recordedStates): one key per run of them.
    if (last === undefined || r.mid !== last.mid || r.network !== last.network || r.program !== last.program) series = index.get(seriesKey(r));
    last = r;
    const l = series?.byMonth.get(r.month);
    // A month with no figures now is left alone (a gap is not a fall), as is a month to date: its level can still rise.
    if (!l || l.is_partial || l.is_projection || l.level === r.level) continue;
    const rank = opts.rankOf(r);
    if (l.level !== null && l.rank !== null && rank !== undefined && rank <= l.rank) continue;
    out.push(build('resolved', l, r.level, l.level, r.month >= opts.notifySince, opts.now));
  }
  return out;
}

/** Per series whose latest month still has a level, the notice that established it (the latest reached, escalated or
 * resolved-to-a-lower-level): a merchant found already in a program by a backfill must reach someone once. */
function standingNotices(index: Map<string, SeriesMonths>, notices: Notice[], notifySince: string): Notice[] {
  const latest = new Map<string, JudgedMonth>();
  for (const [k, series] of index) {
    let cur: JudgedMonth | undefined;
    for (const l of series.levels) if (!cur || l.month > cur.month) cur = l;
    if (cur) latest.set(k, cur);
  }
  const establishing = new Map<string, Notice>();
  const sorted = notices.filter((n) => n.kind !== 'projected' && n.kind !== 'watch' && n.kind !== 'unknown').sort((a, b) => (a.month < b.month ? -1 : a.month > b.month ? 1 : 0));
  for (const n of sorted) {
    const k = seriesKey(n);
    const l = latest.get(k);
    if (!l || n.month > l.month) continue;
    if (n.kind === 'resolved' && n.previous_level === null) establishing.delete(k);
    else establishing.set(k, n);
  }
  const out: Notice[] = [];
  for (const [k, l] of latest) {
    if (l.level === null || l.month < notifySince) continue;
    const n = establishing.get(k);
    const inForce = n ? (n.kind === 'resolved' ? n.previous_level : n.level) : null;
    if (n && inForce === l.level) out.push(n);
  }
  return out;
}

/** One page per level a run learns about at once: of the notices it would page first (not projections, of months no
 * earlier run recorded for the level), the newest month's; the older stay as history (`cbp alerts`), and are returned. */
export function pageNewestOnly(
  notices: Notice[],
  opts: { alreadyPaged: (noticeId: string) => boolean; recorded: { has(key: string): boolean }; known?: (noticeId: string) => boolean },
): Notice[] {
  const level = (n: Notice) => `${n.mid}\u0000${n.network}\u0000${n.program}\u0000${n.level}`;
  const groups = new Map<string, Notice[]>();
  for (const n of notices) {
    if (!n.notify || n.kind === 'projected' || n.kind === 'watch' || n.kind === 'unknown') continue;
    // A notice already paged is never demoted, but a newer one keeps older ones of its level in the history:
    // a run that meets them again (the next evaluation of the same months) says no more than the first.
    const paged = opts.alreadyPaged(n.notice_id);
    if (!paged && !opts.known?.(n.notice_id) && opts.recorded.has(`${level(n)}\u0000${n.month}`)) continue;
    const g = groups.get(level(n));
    if (g) g.push(n);
    else groups.set(level(n), [n]);
  }
  const demoted: Notice[] = [];
  for (const g of groups.values()) {
    const newest = g.reduce((m, n) => (n.month > m ? n.month : m), g[0].month);
    for (const n of g) {
      if (n.month === newest || opts.alreadyPaged(n.notice_id)) continue;
      n.notify = false;
      demoted.push(n);
    }
  }
  return demoted;
}

/** Key of a recorded state: mid × network × program × level × month. */
export function recordedKey(r: RecordedLevel): string {
  return `${seriesKey(r)}\u0000${r.level}\u0000${r.month}`;
}

/** What one batch of MIDs comes to (judgeBatch). */
export interface BatchJudgement {
  /** every notice the figures give, delivery flags settled (recorded ones included) */
  notices: Notice[];
  /** notices not recorded before: to be written */
  fresh: Notice[];
  /** notices recorded as history (notify false) now to be delivered */
  promoted: Notice[];
  /** the states to record: each level projected, reached, or resolved (taken back or left), unless recorded as it is (changedStates) */
  states: AlertStateRow[];
  /** mid × network × program × month with a level reached */
  levelsReached: number;
  projectedLevels: number;
  /** the month-by-month levels judged (observed) and the projected months' */
  levels: JudgedMonth[];
  projections: JudgedMonth[];
}

/**
 * One batch of MIDs' notices: transitions (deriveNotices), levels taken back (revisedNotices), a level in force paged
 * once (standingNotices), newest month only (pageNewestOnly). `recorded`: earlier states; `known`: notice_id → notify.
 * A history notice whose month is now within notifySince is promoted once (a backfill's breach of the current months pages).
 */
export function judgeBatch(
  judged: JudgedMonth[],
  allProjections: JudgedMonth[],
  recorded: RecordedState[],
  opts: {
    rules: RuleSet; notifySince: string; now: string; known: ReadonlyMap<string, boolean>;
    /**
     * First month noticed: the judged months start the month before it (transitions into it are from there); levels,
     * notices and states are of months from here on. null: every month.
     */
    fromMonth?: string | null;
    /** each series' latest level notice before fromMonth (store/alert-history.ts priorNotices): a level standing since then */
    prior?: Notice[];
  },
): BatchJudgement {
  const { rules, notifySince, now, known } = opts;
  const from = opts.fromMonth ?? null;
  // The rank a level has under the rules in force for that MID (the highest, should two rules share a level).
  const rankOf = (r: RecordedLevel): number | undefined => {
    const ranks = rulesFor(rules, r.mid).filter((x) => x.network === r.network && x.program === r.program && x.level === r.level).map((x) => x.rank);
    return ranks.length ? Math.max(...ranks) : undefined;
  };
  const levels = from === null ? judged : judged.filter((l) => l.month >= from);
  const projections = from === null ? allProjections : allProjections.filter((l) => l.month >= from);
  // Transitions into the first month judged are from the month before it.
  const before = from === null ? judged : judged.filter((l) => l.month >= addMonths(from, -1));
  const beforeIndex = seriesIndex(before);
  const index = before === levels ? beforeIndex : seriesIndex(levels);
  const derived = deriveNotices(beforeIndex, projections, { notifySince, now, watch: watchOf(rules).notify });
  const notices = from === null ? derived : derived.filter((n) => n.month >= from);
  // Projected states are read only to leave unchanged ones unwritten (below): a projection is not a level recorded.
  const levelsRecorded = recorded.filter((s) => s.status !== 'projected');
  const reachedBefore = levelsRecorded.filter((s) => s.status === 'reached' && (from === null || s.month >= from));
  const ids = new Set(notices.map((n) => n.notice_id));
  notices.push(...revisedNotices(index, reachedBefore, { notifySince, now, rankOf }).filter((n) => !ids.has(n.notice_id)));
  // A level still in force now is paged once, even when it was reached in a month recorded as history
  // (before fromMonth: the prior notice that established it).
  const prior = opts.prior ?? [];
  for (const n of standingNotices(index, [...prior, ...notices], notifySince)) {
    n.notify = true;
    if (prior.includes(n)) notices.push(n);
  }
  // ... and once only, however many months of it this run meets for the first time.
  // (The recorded months are looked up only for a notice neither paged nor known: made into a set when one is.)
  let recordedSet: Set<string> | undefined;
  const recordedMonths = { has: (k: string) => (recordedSet ??= new Set(levelsRecorded.map(recordedKey))).has(k) };
  pageNewestOnly(notices, { alreadyPaged: (id) => known.get(id) === true, recorded: recordedMonths, known: (id) => known.has(id) });
  const fresh = notices.filter((n) => !known.has(n.notice_id));
  const promoted = notices.filter((n) => n.notify && known.get(n.notice_id) === false);
  const reached = levels.filter((l) => l.level !== null);
  const projected = projections.filter((p) => p.level !== null);
  return {
    notices,
    fresh,
    promoted,
    states: changedStates(stateRows({ reached, projected, index, notices, now }), recorded),
    levelsReached: reached.length,
    projectedLevels: projected.length,
    levels,
    projections,
  };
}

/** The states to record, one per mid × network × program × level × month: projected levels, then reached ones (which
 * win over a projection), then the levels resolved notices leave (status resolved, rank -1). */
export function stateRows(b: { reached: JudgedMonth[]; projected: JudgedMonth[]; index: Map<string, SeriesMonths>; notices: Notice[]; now: string }): AlertStateRow[] {
  // One row per state, in the order each was first added (a later one of the same state replaces it there).
  const rows: AlertStateRow[] = [];
  const at = stateSlots<number>();
  const add = (l: JudgedMonth, level: string, status: AlertStateRow['status'], rank: number) => {
    const row: AlertStateRow = {
      mid: l.mid, network: l.network, program: l.program, level, month: l.month, status, rank,
      ratio: l.row?.ratio ?? null, numerator: l.row?.numerator ?? null, denominator: l.row?.denominator ?? null,
      is_partial: l.is_partial, seen: b.now,
    };
    const i = at.get(at.key(row));
    if (i === undefined) { at.set(at.key(row), rows.length); rows.push(row); } else rows[i] = row;
  };
  for (const p of b.projected) add(p, p.level as string, 'projected', p.rank as number);
  for (const l of b.reached) add(l, l.level as string, 'reached', l.rank as number);
  for (const n of b.notices) {
    if (n.kind !== 'resolved') continue;
    const l = levelAt(b.index, n);
    if (l) add(l, n.level, 'resolved', -1);
  }
  return rows;
}

/** A map keyed by state: mid × network × program × level × month. */
function stateSlots<T>(): Map<string, T> & { key(x: RecordedLevel): string } {
  return Object.assign(new Map<string, T>(), { key: recordedKey });
}

/** A figure as alert_states holds it: a non-finite number is recorded as NULL (store/alert-record.ts stageRows). */
const held = (v: number | null | undefined): number | null => (v === null || v === undefined || !Number.isFinite(v) ? null : v);

/**
 * The states that differ from the recorded ones (status, rank, is_partial, ratio, numerator or denominator), or were
 * not recorded: an unchanged state is not written again (store/alert-record.ts recordJudgement, which compares the same
 * columns in SQL too). A recorded state read without its figures counts as changed.
 */
export function changedStates(states: AlertStateRow[], recorded: RecordedState[]): AlertStateRow[] {
  if (recorded.length === 0 || states.length === 0) return states;
  const was = stateSlots<RecordedState>();
  for (const r of recorded) if (r.rank !== undefined) was.set(was.key(r), r);
  return states.filter((s) => {
    const r = was.get(was.key(s));
    return r === undefined || r.status !== s.status || r.rank !== s.rank || r.is_partial !== s.is_partial
      || held(r.ratio) !== held(s.ratio) || held(r.numerator) !== held(s.numerator) || held(r.denominator) !== held(s.denominator);
  });
}
