// The alert state machine. After every load: ratios → levels (rules/evaluate.ts) → notices by transition
// (reached, escalated, resolved, projected) → the alerts history and alert_states tables. Notice ids are a
// hash of what the notice says, so evaluating the same data twice writes nothing new.
import { createHash } from 'node:crypto';
import type { Store } from '../store/db.ts';
import { midRanges, monthOf, ratioMids, toRatioRow } from '../store/ratios.ts';
import { addMonths, evaluateRows, rulesFor, type MonthLevel, type RatioRow } from '../rules/evaluate.ts';
import { evaluateProjections } from '../rules/projection.ts';
import type { RuleSet } from '../rules/thresholds.ts';

export const NOTICE_KINDS = ['reached', 'escalated', 'resolved', 'projected'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

export interface Notice {
  notice_id: string;
  kind: NoticeKind;
  mid: string;
  network: string;
  program: string;
  level: string;
  previous_level: string | null;
  month: string;
  metric: string | null;
  rule_id: string | null;
  comparison: string | null;
  ratio_threshold: number | null;
  numerator: number | null;
  denominator: number | null;
  denominator_month: string | null;
  ratio: number | null;
  ratio_pct: number | null;
  ratio_bps: number | null;
  is_projection: boolean;
  is_partial: boolean;
  notify: boolean;
  message: string;
  created_at: string;
}

export function noticeId(kind: NoticeKind, mid: string, network: string, program: string, level: string, month: string): string {
  const h = createHash('sha256').update([kind, mid, network, program, level, month].join('\u0000')).digest('hex');
  return `ntc_${h.slice(0, 32)}`;
}

function pct(r: number | null): string {
  return r === null ? 'no ratio' : `${(r * 100).toFixed(3)} %`;
}

export function noticeMessage(n: Pick<Notice, 'kind' | 'mid' | 'network' | 'program' | 'level' | 'previous_level' | 'month' | 'ratio' | 'numerator' | 'denominator' | 'denominator_month' | 'comparison' | 'ratio_threshold' | 'is_partial'>): string {
  const what = `${n.mid} ${n.network} ${n.program}`;
  const fig = `${pct(n.ratio)} (${n.numerator ?? '-'} / ${n.denominator ?? '-'}${n.denominator_month && n.denominator_month !== n.month ? ` of ${n.denominator_month}` : ''})`;
  const thr = n.ratio_threshold === null ? '' : `, threshold ${n.comparison ?? '>='} ${pct(n.ratio_threshold)}`;
  const mtd = n.is_partial ? ' month to date' : '';
  switch (n.kind) {
    case 'reached': return `${what}: level ${n.level} reached in ${n.month}${mtd}: ${fig}${thr}`;
    case 'escalated': return `${what}: escalated from ${n.previous_level} to ${n.level} in ${n.month}${mtd}: ${fig}${thr}`;
    case 'resolved': return `${what}: level ${n.level} left in ${n.month}${n.previous_level ? ` (now ${n.previous_level})` : ''}: ${fig}`;
    case 'projected': return `${what}: PROJECTION — at the current run rate ${n.month} would end at level ${n.level}: ${fig}${thr}`;
  }
}

function build(kind: NoticeKind, l: MonthLevel, level: string, previous: string | null, notify: boolean, now: string): Notice {
  const row: RatioRow | null = l.row;
  const base = {
    kind, mid: l.mid, network: l.network, program: l.program, level, previous_level: previous, month: l.month,
    metric: row?.metric ?? null,
    rule_id: kind === 'resolved' ? null : l.rule?.id ?? null,
    comparison: kind === 'resolved' ? null : l.rule?.comparison ?? null,
    ratio_threshold: kind === 'resolved' ? null : l.rule?.ratio_threshold ?? null,
    numerator: row?.numerator ?? null,
    denominator: row?.denominator ?? null,
    denominator_month: row?.denominator_month ?? null,
    ratio: row?.ratio ?? null,
    ratio_pct: row?.ratio_pct ?? null,
    ratio_bps: row?.ratio_bps ?? null,
    is_projection: kind === 'projected',
    is_partial: l.is_partial,
  };
  return {
    notice_id: noticeId(kind, l.mid, l.network, l.program, level, l.month),
    ...base,
    notify,
    message: noticeMessage(base),
    created_at: now,
  };
}

/**
 * Notices from the month-by-month levels of each series: a level reached from none, a higher level
 * (escalated), a level left (resolved, closed months only: evaluateSeries never lowers a level on a
 * month-to-date month), and a projected level above the observed one. Only months at or after
 * notifySince are marked for delivery; earlier ones are history (a first load of 36 months must not page
 * anyone 36 times).
 */
export function deriveNotices(levels: MonthLevel[], projections: MonthLevel[], opts: { notifySince: string; now: string }): Notice[] {
  const out: Notice[] = [];
  const series = new Map<string, MonthLevel[]>();
  for (const l of levels) {
    const k = `${l.mid}\u0000${l.network}\u0000${l.program}`;
    const s = series.get(k);
    if (s) s.push(l);
    else series.set(k, [l]);
  }
  const actualAt = new Map<string, MonthLevel>();
  for (const [k, s] of series) {
    s.sort((a, b) => (a.month < b.month ? -1 : a.month > b.month ? 1 : 0));
    let prev: MonthLevel | null = null;
    for (const l of s) {
      actualAt.set(`${k}\u0000${l.month}`, l);
      const notify = l.month >= opts.notifySince;
      const pl = prev?.level ?? null;
      const pr = prev?.rank ?? null;
      if (l.level !== null && (pl === null || pr === null)) out.push(build('reached', l, l.level, null, notify, opts.now));
      else if (l.level !== null && pr !== null && l.rank !== null && l.rank > pr) out.push(build('escalated', l, l.level, pl, notify, opts.now));
      else if (pl !== null && (l.level === null || (l.rank !== null && pr !== null && l.rank < pr))) {
        out.push(build('resolved', l, pl, l.level, notify, opts.now));
      }
      // A month missing from the series (no row at all) does not reset the previous level.
      prev = l;
    }
  }
  for (const p of projections) {
    if (p.level === null || p.rank === null) continue;
    const a = actualAt.get(`${p.mid}\u0000${p.network}\u0000${p.program}\u0000${p.month}`);
    if (a && a.rank !== null && a.rank >= p.rank) continue;
    out.push(build('projected', p, p.level, a?.level ?? null, p.month >= opts.notifySince, opts.now));
  }
  return out;
}

/** A month an earlier evaluation recorded as holding a level (alert_states, status reached). */
export interface RecordedLevel {
  mid: string;
  network: string;
  program: string;
  level: string;
  month: string;
}

/**
 * Levels later figures took back: a closed month recorded as holding a level that its own figures, as the
 * store now has them, no longer give (a corrected report re-fetched, a MID report's revised totals).
 * deriveNotices sees falls from one month to the next; this sees a month that no longer holds what was
 * recorded, including a series that now never reaches any threshold. Each level taken back is a resolved
 * notice for that month (level: the recorded one; previous_level: the one now in force), and its state
 * becomes resolved, so it is said once. A recorded level below the one now in force was superseded, not
 * taken back. Ranks come from the rules in force (rankOf), never from stored ones, so renumbering ranks
 * changes nothing; a level the rules no longer have counts as above any. Paged like every other notice:
 * only for months at or after notifySince.
 */
export function revisedNotices(
  levels: MonthLevel[],
  recorded: RecordedLevel[],
  opts: { notifySince: string; now: string; rankOf: (r: RecordedLevel) => number | undefined },
): Notice[] {
  const key = (x: { mid: string; network: string; program: string; month: string }) => `${x.mid}\u0000${x.network}\u0000${x.program}\u0000${x.month}`;
  const at = new Map(levels.map((l) => [key(l), l]));
  const out: Notice[] = [];
  for (const r of recorded) {
    const l = at.get(key(r));
    // A month with no figures now is left alone (a gap is not a fall), as is a month to date: its level can still rise.
    if (!l || l.is_partial || l.is_projection || l.level === r.level) continue;
    const rank = opts.rankOf(r);
    if (l.level !== null && l.rank !== null && rank !== undefined && rank <= l.rank) continue;
    out.push(build('resolved', l, r.level, l.level, r.month >= opts.notifySince, opts.now));
  }
  return out;
}

/**
 * The notices that established a level still in force in a month at or after notifySince: for each series,
 * the latest reached / escalated notice (or resolved notice stepping down to a lower level) at or before
 * the series' latest month, when that month still has a level. When cbp first meets a merchant already in
 * a program (a backfill found the level months ago), this is the notice that must reach someone once.
 */
export function standingNotices(levels: MonthLevel[], notices: Notice[], notifySince: string): Notice[] {
  const key = (x: { mid: string; network: string; program: string }) => `${x.mid}\u0000${x.network}\u0000${x.program}`;
  const latest = new Map<string, MonthLevel>();
  for (const l of levels) {
    const k = key(l);
    const cur = latest.get(k);
    if (!cur || l.month > cur.month) latest.set(k, l);
  }
  const establishing = new Map<string, Notice>();
  const sorted = notices.filter((n) => n.kind !== 'projected').sort((a, b) => (a.month < b.month ? -1 : a.month > b.month ? 1 : 0));
  for (const n of sorted) {
    const l = latest.get(key(n));
    if (!l || n.month > l.month) continue;
    if (n.kind === 'resolved' && n.previous_level === null) establishing.delete(key(n));
    else establishing.set(key(n), n);
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

/**
 * One page per level a run learns about at once. When a run meets several months no earlier run recorded for
 * one mid × network × program × level (a first run, a run after a gap or a backfill), each would page: a
 * level left in May and reached again in June, or reached in May and left in June, is one story, and paging
 * both tells it twice. Of the notices this run would page for the first time (fresh, or history promoted),
 * not projections, and whose month no earlier run recorded for that level, only those of the newest month
 * (the month the figures are for) page; the older ones stay in the history (notify false), visible in
 * `cbp alerts`. Notices about months an earlier run recorded (revised figures taking a level back) and
 * notices already paged are left as they are. Returns the notices it turned into history.
 */
export function pageNewestOnly(
  notices: Notice[],
  opts: { alreadyPaged: (noticeId: string) => boolean; recorded: ReadonlySet<string> },
): Notice[] {
  const level = (n: Notice) => `${n.mid}\u0000${n.network}\u0000${n.program}\u0000${n.level}`;
  const groups = new Map<string, Notice[]>();
  for (const n of notices) {
    if (!n.notify || n.kind === 'projected' || opts.alreadyPaged(n.notice_id)) continue;
    if (opts.recorded.has(`${level(n)}\u0000${n.month}`)) continue;
    const g = groups.get(level(n));
    if (g) g.push(n);
    else groups.set(level(n), [n]);
  }
  const demoted: Notice[] = [];
  for (const g of groups.values()) {
    const newest = g.reduce((m, n) => (n.month > m ? n.month : m), g[0].month);
    for (const n of g) {
      if (n.month === newest) continue;
      n.notify = false;
      demoted.push(n);
    }
  }
  return demoted;
}

/** Key of a recorded state: mid × network × program × level × month. */
export function recordedKey(r: { mid: string; network: string; program: string; level: string; month: string }): string {
  return `${r.mid}\u0000${r.network}\u0000${r.program}\u0000${r.level}\u0000${r.month}`;
}

// Levels earlier runs recorded for this batch's MIDs: reached (what revised figures may take back) and
// resolved; projections are not a level reached.
const RECORDED_SQL = `SELECT mid, network, program, level, month, status FROM alert_states WHERE status IN ('reached', 'resolved') AND mid >= $lo AND mid <= $hi`;

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

/** The lowest ratio threshold of each network × program × metric some enabled rule reads. */
export function targetFloors(set: RuleSet): Array<{ network: string; program: string; metric: string; min: number }> {
  const all = [...set.rules, ...Object.values(set.mids).flatMap((m) => m.rules)].filter((r) => r.enabled);
  const m = new Map<string, { network: string; program: string; metric: string; min: number }>();
  for (const r of all) {
    const k = `${r.network}|${r.program}|${r.metric}`;
    const f = m.get(k);
    if (!f) m.set(k, { network: r.network, program: r.program, metric: r.metric, min: r.ratio_threshold });
    else f.min = Math.min(f.min, r.ratio_threshold);
  }
  return [...m.values()];
}

/** network|program|metric pairs some enabled rule reads: the only ratio rows evaluation needs. */
export function ruleTargets(set: RuleSet): string[] {
  const all = [...set.rules, ...Object.values(set.mids).flatMap((m) => m.rules)];
  return [...new Set(all.filter((r) => r.enabled).map((r) => `${r.network}|${r.program}|${r.metric}`))].sort();
}

const NOTICE_COLS = [
  'notice_id', 'kind', 'mid', 'network', 'program', 'level', 'previous_level', 'month', 'metric', 'rule_id', 'comparison',
  'ratio_threshold', 'numerator', 'denominator', 'denominator_month', 'ratio', 'ratio_pct', 'ratio_bps', 'is_projection',
  'is_partial', 'notify', 'message', 'created_at',
] as const;

async function insertChunked(store: Pick<Store, 'run'>, head: string, cols: readonly string[], rows: unknown[][], tail: string): Promise<void> {
  const CHUNK = 400;
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows.slice(i, i + CHUNK);
    const params: unknown[] = [];
    const values = part.map((r) => `(${r.map((v) => { params.push(v); return `$${params.length}`; }).join(', ')})`);
    await store.run(`${head} (${cols.join(', ')}) VALUES ${values.join(', ')} ${tail}`, params as never);
  }
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
  const targets = ruleTargets(opts.rules);
  const result: EvaluateAlertsResult = { rows: 0, levelsReached: 0, projectedLevels: 0, newNotices: [] };
  if (targets.length === 0) return result;
  // Only series (mid × network × program) with at least one month at or above the lowest threshold any
  // rule of theirs sets can reach a level; the rest are never fetched into memory. Values are enums and
  // numbers from the validated rule set, so they are written into the SQL as literals.
  const floors = targetFloors(opts.rules);
  const values = floors.map((f) => `('${f.network}', '${f.program}', '${f.metric}', ${f.min.toString()}::DOUBLE)`).join(', ');
  // A plain IN list on program is pushed down into the views (the join on t alone is not).
  const programs = [...new Set(floors.map((f) => `'${f.program}'`))].join(', ');
  const sql = `WITH t(network, program, metric, min_threshold) AS (VALUES ${values}),
     r AS MATERIALIZED (
       SELECT m.*, t.min_threshold FROM mart_ratios m JOIN t USING (network, program, metric)
        WHERE m.month <= $asof AND m.mid >= $lo AND m.mid <= $hi AND m.program IN (${programs})),
     hot AS (SELECT DISTINCT mid, network, program FROM r WHERE ratio >= min_threshold
             UNION SELECT mid, network, program FROM alert_states WHERE status = 'reached')
     SELECT r.* EXCLUDE (min_threshold) FROM r SEMI JOIN hot USING (mid, network, program)
      ORDER BY mid, network, program, metric, month, is_projection`;
  // notice_id → notify. A notice recorded as history (notify false, e.g. by a backfill) whose month is now
  // within notifySince is promoted once: a breach found by a backfill in the current months still pages.
  const known = new Map((await store.all<{ notice_id: string; notify: boolean }>('SELECT notice_id, notify FROM alerts')).map((r) => [r.notice_id, r.notify === true]));
  // The rank a level has under the rules in force for that MID (the highest, should two rules share a level).
  const rankOf = (r: RecordedLevel): number | undefined => {
    const ranks = rulesFor(opts.rules, r.mid).filter((x) => x.network === r.network && x.program === r.program && x.level === r.level).map((x) => x.rank);
    return ranks.length ? Math.max(...ranks) : undefined;
  };
  for (const [lo, hi] of midRanges(await ratioMids(store), opts.batchMids ?? 1000)) {
    const rows = (await store.all<Record<string, unknown>>(sql, { asof: asOfMonth, lo, hi })).map(toRatioRow);
    result.rows += rows.length;
    const levels = evaluateRows(rows, opts.rules);
    const projections = evaluateProjections(rows, opts.rules);
    const notices = deriveNotices(levels, projections, { notifySince, now });
    const states = await store.all<RecordedLevel & { status: string }>(RECORDED_SQL, { lo, hi });
    const recorded = states.filter((s) => s.status === 'reached');
    notices.push(...revisedNotices(levels, recorded, { notifySince, now, rankOf }).filter((n) => !notices.some((m) => m.notice_id === n.notice_id)));
    // A level still in force now is paged once, even when it was reached in a month recorded as history.
    for (const n of standingNotices(levels, notices, notifySince)) n.notify = true;
    // ... and once only, however many months of it this run meets for the first time.
    pageNewestOnly(notices, { alreadyPaged: (id) => known.get(id) === true, recorded: new Set(states.map(recordedKey)) });
    const fresh = notices.filter((n) => !known.has(n.notice_id));
    const promoted = notices.filter((n) => n.notify && known.get(n.notice_id) === false);
    for (const n of fresh) known.set(n.notice_id, n.notify);
    for (const n of promoted) known.set(n.notice_id, true);
    result.newNotices.push(...fresh, ...promoted);
    const reached = levels.filter((l) => l.level !== null);
    const projected = projections.filter((p) => p.level !== null);
    result.levelsReached += reached.length;
    result.projectedLevels += projected.length;
    await writeStates(store, reached, projected, notices, levels, fresh, promoted, now);
  }
  return result;
}

async function writeStates(
  store: Store, reached: MonthLevel[], projected: MonthLevel[], notices: Notice[], levels: MonthLevel[], fresh: Notice[], promoted: Notice[], now: string,
): Promise<void> {
  const stateRows = new Map<string, unknown[]>();
  const addState = (l: MonthLevel, level: string, status: string, rank: number) => {
    const key = [l.mid, l.network, l.program, level, l.month].join('\u0000');
    stateRows.set(key, [l.mid, l.network, l.program, level, l.month, status, rank, l.row?.ratio ?? null, l.row?.numerator ?? null,
      l.row?.denominator ?? null, l.is_partial, now]);
  };
  for (const p of projected) addState(p, p.level as string, 'projected', p.rank as number);
  for (const l of reached) addState(l, l.level as string, 'reached', l.rank as number);
  const resolved = notices.filter((n) => n.kind === 'resolved');
  if (resolved.length) {
    const byKey = new Map(levels.map((l) => [`${l.mid}\u0000${l.network}\u0000${l.program}\u0000${l.month}`, l]));
    for (const n of resolved) {
      const l = byKey.get(`${n.mid}\u0000${n.network}\u0000${n.program}\u0000${n.month}`);
      if (l) addState(l, n.level, 'resolved', -1);
    }
  }
  if (stateRows.size === 0 && fresh.length === 0 && promoted.length === 0) return;
  await store.run(`CREATE TEMP TABLE IF NOT EXISTS _cbp_alert_states_stage (
    mid VARCHAR, network VARCHAR, program VARCHAR, level VARCHAR, month VARCHAR, status VARCHAR, rank INTEGER,
    ratio DOUBLE, numerator DOUBLE, denominator DOUBLE, is_partial BOOLEAN, seen VARCHAR)`);
  await store.transaction(async (s) => {
    if (stateRows.size) {
      await s.run('DELETE FROM _cbp_alert_states_stage');
      // The appender: thousands of states per batch would make parameter lists slow.
      const app = await s.conn.createAppender('_cbp_alert_states_stage', 'main', 'temp');
      try {
        for (const r of stateRows.values()) {
          for (let i = 0; i < 6; i++) app.appendVarchar(r[i] as string);
          app.appendInteger(r[6] as number);
          for (let i = 7; i < 10; i++) { const v = r[i] as number | null; if (v === null || !Number.isFinite(v)) app.appendNull(); else app.appendDouble(v); }
          app.appendBoolean(r[10] as boolean);
          app.appendVarchar(r[11] as string);
          app.endRow();
        }
        app.flushSync();
      } finally {
        app.closeSync();
      }
      await s.run(
        `INSERT INTO alert_states (mid, network, program, level, month, status, rank, ratio, numerator, denominator, is_partial, first_seen_at, updated_at)
         SELECT mid, network, program, level, month, status, rank, ratio, numerator, denominator, is_partial, seen::TIMESTAMP, seen::TIMESTAMP
           FROM _cbp_alert_states_stage
         ON CONFLICT (mid, network, program, level, month) DO UPDATE SET status = excluded.status, rank = excluded.rank,
           ratio = excluded.ratio, numerator = excluded.numerator, denominator = excluded.denominator,
           is_partial = excluded.is_partial, updated_at = excluded.updated_at`,
      );
    }
    if (fresh.length) {
      await insertChunked(s, 'INSERT INTO alerts', NOTICE_COLS, fresh.map((n) => NOTICE_COLS.map((c) => n[c])), 'ON CONFLICT DO NOTHING');
    }
    if (promoted.length) {
      const ids = promoted.map((n) => n.notice_id);
      await s.run(`UPDATE alerts SET notify = true WHERE notice_id IN (${ids.map((_, i) => `$${i + 1}`).join(', ')})`, ids);
    }
  });
}

/** One notifier's delivery of a notice (an alert_outbox row). */
export interface Delivery {
  notifier: string;
  /** pending | sent | failed (given up; `cbp alerts requeue` puts it back) */
  status: string;
  attempts: number;
  /** The last failure, secrets redacted; null once sent. */
  last_error: string | null;
  next_attempt_at: string | null;
  sent_at: string | null;
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

const stamp = (v: unknown): string | null => (v === null || v === undefined ? null : `${String(v).replace(' ', 'T').replace(/(\.\d+)?$/, '')}Z`);

/**
 * The alert history, newest first, each notice with its deliveries (one per notifier, last error included)
 * and its delivery_state. `redact` is applied to every last_error shown (they are redacted when stored; a
 * store written before that may still hold one).
 */
export async function listAlerts(
  store: Pick<Store, 'all'>,
  q: { mid?: string; limit?: number; redact?: (text: string) => string } = {},
): Promise<Array<Record<string, unknown>>> {
  const params: Record<string, string | number> = { lim: q.limit ?? 1000 };
  if (q.mid) params.mid = q.mid;
  const rows = await store.all<Record<string, unknown>>(
    `SELECT a.*, (SELECT string_agg(o.notifier || ':' || o.status, ', ' ORDER BY o.notifier) FROM alert_outbox o WHERE o.notice_id = a.notice_id) AS delivery
       FROM alerts a ${q.mid ? 'WHERE a.mid = $mid' : ''} ORDER BY a.created_at DESC, a.month DESC, a.mid LIMIT $lim`,
    params,
  );
  const byNotice = new Map<string, Delivery[]>();
  const CHUNK = 500;
  for (let i = 0; i < rows.length; i += CHUNK) {
    const ids = rows.slice(i, i + CHUNK).map((r) => String(r.notice_id));
    const out = await store.all<Record<string, unknown>>(
      `SELECT notice_id, notifier, status, attempts, last_error, next_attempt_at, sent_at FROM alert_outbox
        WHERE notice_id IN (${ids.map((_, j) => `$${j + 1}`).join(', ')}) ORDER BY notice_id, notifier`,
      ids,
    );
    for (const o of out) {
      const err = (o.last_error as string | null) ?? null;
      const d: Delivery = {
        notifier: String(o.notifier),
        status: String(o.status),
        attempts: Number(o.attempts),
        last_error: err === null || !q.redact ? err : q.redact(err),
        next_attempt_at: o.status === 'pending' ? stamp(o.next_attempt_at) : null,
        sent_at: stamp(o.sent_at),
      };
      const list = byNotice.get(String(o.notice_id));
      if (list) list.push(d);
      else byNotice.set(String(o.notice_id), [d]);
    }
  }
  return rows.map((r) => {
    const deliveries = byNotice.get(String(r.notice_id)) ?? [];
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
export async function evaluateAfterLoad(store: Store, opts: { asOf: Date | string; rules: RuleSet; notify: boolean; now?: Date }): Promise<AfterLoadResult> {
  const r = await evaluateAlerts(store, { asOf: opts.asOf, rules: opts.rules, now: opts.now, notifySince: opts.notify ? undefined : '9999-12' });
  const month = monthOf(opts.asOf);
  const firing = await store.all<{ n: number | string }>(
    "SELECT count(DISTINCT (mid, network, program)) AS n FROM alert_states WHERE month = $m AND status = 'reached'",
    { m: month },
  );
  return { ratios: r.rows, alerts: Number(firing[0]?.n ?? 0), noticesQueued: r.newNotices.filter((n) => n.notify).length };
}
