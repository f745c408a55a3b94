// The oracle: the levels each mid × network × program reaches each month, judged in JavaScript month by month. The
// SQL judge (sql/views/43_ratio_judge.sql) must equal it (test/ratio-judge.test.ts); nothing in production runs it.
import type { Network } from '../../contract/common.ts';
import type { RatioRow } from '../../contract/ratios.ts';
import { watchOf, type Program, type Rule, type RuleSet } from '../../rules/thresholds.ts';
import { groupOf, inForceBetween, meets, rulesFor } from '../../rules/rule-set.ts';
import { addMonths } from '../../lib/utc.ts';
import { seriesKey, type SeriesMonths } from '../../alerts/judged-month.ts';

export type { RatioRow } from '../../contract/ratios.ts';
export { compare, groupOf, inForce, meets, regionInfo, regionOf, rulesFor } from '../../rules/rule-set.ts';

export interface MonthLevel {
  mid: string;
  network: Network;
  program: Program;
  month: string;
  /** highest level in force this month (streaks applied), or null */
  level: string | null;
  rank: number | null;
  /** levels whose conditions hold this month on their own (before streaks) */
  met: string[];
  /** the row the level was decided on (the metric of the winning rule), for notices */
  row: RatioRow | null;
  rule: Rule | null;
  is_partial: boolean;
  is_projection: boolean;
  /** the highest-ranked level whose watch band (every condition × the watch fraction) this month's figures meet, when no level is in force */
  watch: string | null;
  /** the level of another program Mastercard assesses instead this month (EFM over ECP), else null */
  superseded_by: string | null;
  /** what this month's figures need that is not loaded (a row's missing_sources), else null: nothing met or missed */
  missing_sources?: string | null;
  /** each level's streak after this month (what explanations name) */
  streaks: LevelRun[];
}

/** One level's streak state after a month. */
export interface LevelRun {
  level: string;
  rank: number;
  /** rules of this level in force this month (effective dates) */
  live: Rule[];
  met: boolean;
  metRun: number;
  missRun: number;
  enter: number;
  leave: number;
  in: boolean;
}

// Month arithmetic is lib/utc.ts's (re-exported: the alert engine and its tests read it from here).
export { addMonths };

interface LevelStreak {
  level: string;
  rank: number;
  rules: Rule[];
  in: boolean;
  metRun: number;
  missRun: number;
}

/**
 * Evaluates one mid × network × program over its months. Missing months count as "not met" (a gap breaks
 * a streak); a month-to-date month, or one whose figures miss a source (missing_sources), can enter a level but
 * never leaves one, since its figures can still grow.
 */
export function evaluateSeries(rows: RatioRow[], rules: Rule[], watchFraction = 0.8): MonthLevel[] {
  if (rows.length === 0) return [];
  const { mid, network, program } = rows[0];
  rows = ruledRows(rows, rules);
  if (rows.length === 0) return [];
  const byMonth = new Map<string, RatioRow[]>();
  for (const r of rows) {
    const l = byMonth.get(r.month);
    if (l) l.push(r);
    else byMonth.set(r.month, [r]);
  }
  let first = rows[0].month;
  let last = first;
  for (const m of byMonth.keys()) { if (m < first) first = m; if (m > last) last = m; }
  const levels: LevelStreak[] = [];
  const byLevel = new Map<string, LevelStreak>();
  for (const r of rules) {
    if (r.network !== network || r.program !== program) continue;
    const s = byLevel.get(r.level);
    if (s) { s.rules.push(r); s.rank = Math.max(s.rank, r.rank); }
    else { const n = { level: r.level, rank: r.rank, rules: [r], in: false, metRun: 0, missRun: 0 }; byLevel.set(r.level, n); levels.push(n); }
  }
  // A lower level an HECM-like level steps down to: any level but an early warning.
  const early = levels.map((s) => s.rules.some((r) => r.early_warning));
  const out: MonthLevel[] = [];
  const lives: Rule[][] = new Array(levels.length);
  const hits: Array<{ rule: Rule; row: RatioRow } | null> = new Array(levels.length);
  // Bounded: one step per calendar month between the first and the last row.
  for (let m = first, guard = 0; m <= last && guard < 2400; m = addMonths(m, 1), guard++) {
    const monthRows = byMonth.get(m) ?? [];
    let partial = false;
    let projection = false;
    // A month whose figures miss a source (missing_sources) neither meets nor misses: a level is held, never left on it.
    let unknown: string | null = null;
    let countRow: RatioRow | undefined;
    let amountRow: RatioRow | undefined;
    for (const r of monthRows) {
      if (r.is_partial) partial = true;
      if (r.is_projection) projection = true;
      else if (r.missing_sources) unknown ??= r.missing_sources;
      if (r.metric === 'count') countRow ??= r;
      else if (r.metric === 'amount') amountRow ??= r;
    }
    const met: string[] = [];
    let best: { s: LevelStreak; rule: Rule; row: RatioRow | null } | null = null;
    const runs: LevelRun[] = [];
    const firstDay = `${m}-01`;
    const lastDay = `${m}-31`;
    for (let i = 0; i < levels.length; i++) {
      const live: Rule[] = [];
      for (const r of levels[i].rules) if (inForceBetween(r, firstDay, lastDay)) live.push(r);
      lives[i] = live;
      hits[i] = null;
      for (const rule of live) {
        const row = rowFor(rule.metric, countRow, amountRow, monthRows);
        if (row && meets(rule, row)) { hits[i] = { rule, row }; break; }
      }
    }
    let watch: LevelStreak | null = null;
    for (let i = 0; i < levels.length; i++) {
      const s = levels[i];
      const live = lives[i];
      const hit = hits[i];
      let enter = 1;
      let leave = 1;
      let stepDown = false;
      for (const r of live) {
        if (r.months_to_enter > enter) enter = r.months_to_enter;
        if (r.months_to_leave > leave) leave = r.months_to_leave;
        if (r.step_down_at_once) stepDown = true;
      }
      if (live.length === 0) {
        s.in = false; s.metRun = 0; s.missRun = 0;
        runs.push({ level: s.level, rank: s.rank, live, met: false, metRun: 0, missRun: 0, enter, leave, in: false });
        continue;
      }
      if (hit) {
        met.push(s.level);
        s.metRun++; s.missRun = 0;
        if (!s.in && s.metRun >= enter) s.in = true;
      } else if (!partial && !unknown) {
        s.missRun++; s.metRun = 0;
        if (s.in && s.missRun >= leave) s.in = false;
        // Stepping down at once (HECM → ECM): a closed month meeting a lower level of this program but not this one.
        if (s.in && stepDown) {
          for (let o = 0; o < levels.length; o++) if (hits[o] && levels[o].rank < s.rank && !early[o]) { s.in = false; break; }
        }
      }
      runs.push({ level: s.level, rank: s.rank, live, met: hit !== null, metRun: s.metRun, missRun: s.in ? s.missRun : 0, enter, leave, in: s.in });
      if (s.in && (!best || s.rank > best.s.rank)) {
        const rule = hit?.rule ?? live[0];
        best = { s, rule, row: hit?.row ?? rowFor(rule.metric, countRow, amountRow, monthRows) ?? null };
      }
      if (!watch || s.rank > watch.rank) {
        if (hit) watch = s;
        else for (const rule of live) { const row = rowFor(rule.metric, countRow, amountRow, monthRows); if (row !== undefined && meets(rule, row, watchFraction)) { watch = s; break; } }
      }
    }
    out.push({
      mid, network, program, month: m,
      level: best?.s.level ?? null,
      rank: best?.s.rank ?? null,
      met,
      row: best?.row ?? countRow ?? monthRows[0] ?? null,
      rule: best?.rule ?? null,
      is_partial: partial,
      is_projection: projection,
      watch: best ? null : (watch?.level ?? null),
      superseded_by: null,
      missing_sources: unknown,
      streaks: runs,
    });
  }
  return out;
}

/** A series' rows of the metrics a rule of it reads: a source missing from another metric's row changes nothing. */
export function ruledRows(series: RatioRow[], rules: Rule[]): RatioRow[] {
  const { network, program } = series[0] ?? {};
  const read = new Set(rules.filter((r) => r.network === network && r.program === program).map((r) => r.metric));
  return series.filter((r) => read.has(r.metric));
}

/** The first of a month's rows of a metric (its first count and amount rows given). */
function rowFor(metric: string, countRow: RatioRow | undefined, amountRow: RatioRow | undefined, rows: RatioRow[]): RatioRow | undefined {
  if (metric === 'count') return countRow;
  if (metric === 'amount') return amountRow;
  for (const x of rows) if (x.metric === metric) return x;
  return undefined;
}

export { seriesKey, seriesIndex } from '../../alerts/judged-month.ts';
export type SeriesLevels = SeriesMonths<MonthLevel>;

/** Groups rows by mid × network × program. */
export function groupSeries(rows: RatioRow[]): RatioRow[][] {
  const g = new Map<string, RatioRow[]>();
  // Rows mostly come series by series (sorted by the store): a key per run of rows, not per row.
  let cur: RatioRow[] | undefined;
  let prev: RatioRow | undefined;
  for (const r of rows) {
    if (cur === undefined || prev === undefined || r.mid !== prev.mid || r.network !== prev.network || r.program !== prev.program) {
      const k = seriesKey(r);
      cur = g.get(k);
      if (cur === undefined) { cur = []; g.set(k, cur); }
    }
    cur.push(r);
    prev = r;
  }
  return [...g.values()];
}

/**
 * A group's rows for the programs it is monitored for: per metric × month × is_projection, the members'
 * numerators and denominators summed (each member's own figures, whatever months it has), the ratio of the
 * sums; mid is the group id. Rows of MIDs in no group are returned as they are, members' rows of the group's
 * programs are replaced.
 */
export function withGroups(rows: RatioRow[], set: RuleSet): RatioRow[] {
  const groups = set.groups ?? {};
  if (Object.keys(groups).length === 0) return rows;
  const out: RatioRow[] = [];
  const sums = new Map<string, RatioRow[]>();
  for (const r of rows) {
    const g = groupOf(set, r.mid, r.program);
    if (g === null) { out.push(r); continue; }
    const k = [g, r.network, r.program, r.metric, r.month, r.is_projection].join('\u0000');
    const l = sums.get(k);
    if (l) l.push(r);
    else sums.set(k, [r]);
  }
  const add = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : a + b);
  for (const [k, members] of sums) {
    const g = k.split('\u0000')[0];
    const f = members[0];
    const sum = (field: 'numerator_count' | 'numerator_amount' | 'denominator_count' | 'denominator_amount' | 'month_transaction_count' | 'month_transaction_amount') =>
      members.reduce<number | null>((acc, m) => add(acc, m[field]), null);
    const nc = sum('numerator_count'), na = sum('numerator_amount'), dc = sum('denominator_count'), da = sum('denominator_amount');
    const numerator = f.metric === 'count' ? nc : na;
    const denominator = f.metric === 'count' ? dc : da;
    const ratio = numerator !== null && denominator !== null && denominator !== 0 ? numerator / denominator : null;
    out.push({
      ...f,
      mid: g,
      numerator, denominator,
      numerator_count: nc, numerator_amount: na, denominator_count: dc, denominator_amount: da,
      month_transaction_count: sum('month_transaction_count'), month_transaction_amount: sum('month_transaction_amount'),
      ratio, ratio_pct: ratio === null ? null : ratio * 100, ratio_bps: ratio === null ? null : ratio * 10_000,
      no_ratio_reason: ratio !== null ? null : denominator === null ? (members.find((m) => m.no_ratio_reason)?.no_ratio_reason ?? 'no_transaction_figures') : 'zero_transactions',
      is_partial: members.some((m) => m.is_partial),
      days_covered: members.reduce<number | null>((acc, m) => (m.days_covered === null ? acc : acc === null ? m.days_covered : Math.min(acc, m.days_covered)), null),
      numerator_complete: members.every((m) => m.numerator_complete),
      // A group's figures miss what any member's miss (each named with its MID).
      missing_sources: members.filter((m) => m.missing_sources).map((m) => `${m.mid}: ${m.missing_sources}`).join('; ') || null,
      numerator_floor: members.some((m) => m.numerator_floor),
    });
  }
  return out;
}

/**
 * EFM over ECP: in a month where a level that supersedes other programs (rule `supersedes`) is met, the same
 * MID's levels of those programs in force that month are marked superseded_by it (Mastercard assesses EFM
 * only when ECM and EFM are both met). Levels and streaks stay as they are.
 */
export function markSuperseded(levels: MonthLevel[]): void {
  const by = new Map<string, string>();
  for (const l of levels) {
    for (const s of l.streaks) {
      if (!s.met) continue;
      for (const r of s.live) for (const p of r.supersedes) by.set(`${l.mid}\u0000${l.network}\u0000${p}\u0000${l.month}`, s.level);
    }
  }
  if (by.size === 0) return;
  for (const l of levels) {
    if (l.level === null) continue;
    const s = by.get(`${l.mid}\u0000${l.network}\u0000${l.program}\u0000${l.month}`);
    if (s !== undefined) l.superseded_by = s;
  }
}

/**
 * Levels reached from observed (or month-to-date) figures; projected rows are left out. Grouped MIDs'
 * rows of their group's programs are judged as the group (mid: the group id; see withGroups).
 */
export function evaluateRows(rows: RatioRow[], set: RuleSet): MonthLevel[] {
  const out: MonthLevel[] = [];
  const ruleCache = new Map<string, Rule[]>();
  const fraction = watchOf(set).fraction;
  for (const series of groupSeries(withGroups(rows.filter((r) => !r.is_projection), set))) {
    const mid = series[0].mid;
    // MIDs without overrides share one rule list.
    const key = set.mids[mid] || set.groups?.[mid] ? `mid:${mid}` : '';
    let rules = ruleCache.get(key);
    if (!rules) { rules = rulesFor(set, mid); ruleCache.set(key, rules); }
    for (const l of evaluateSeries(series, rules, fraction)) out.push(l);
  }
  markSuperseded(out);
  return out;
}
