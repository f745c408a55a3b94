// Pure rule evaluation: ratio rows (from sql/views/40_ratios.sql) and a rule set in, the level each
// mid × network × program reaches each month out. Rules are data; nothing here knows a network's numbers.
import type { Network } from '../contract/common.ts';
import type { RatioRow } from '../contract/ratios.ts';
import type { Comparison, Metric, Program, Rule, RuleSet } from './thresholds.ts';
import { addMonths } from '../lib/utc.ts';

export type { RatioRow } from '../contract/ratios.ts';

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
}

export function compare(value: number, op: Comparison, threshold: number): boolean {
  return op === '>=' ? value >= threshold : value > threshold;
}

// Month arithmetic is lib/utc.ts's (re-exported: the alert engine and its tests read it from here).
export { addMonths };

/**
 * A rule is in force for month M when its effective range overlaps M. Plain string comparison: every
 * day of M lies between 'M-01' and 'M-31'.
 */
export function inForce(rule: Rule, month: string): boolean {
  if (rule.effective_from && rule.effective_from > `${month}-31`) return false;
  if (rule.effective_to && rule.effective_to < `${month}-01`) return false;
  return true;
}

export function regionOf(set: RuleSet, mid: string): string {
  return set.mids[mid]?.region ?? set.defaultRegion;
}

/** The enabled rules that apply to one MID: the common ones less its disabled ids, plus its own. */
export function rulesFor(set: RuleSet, mid: string): Rule[] {
  const o = set.mids[mid];
  const region = regionOf(set, mid);
  const all = o ? [...set.rules.filter((r) => !o.disable.includes(r.id)), ...o.rules] : set.rules;
  return all.filter((r) => r.enabled && (r.regions === null || r.regions.includes(region)));
}

/** Ratio and every count/amount condition hold, unrounded. No ratio means not met. */
export function meets(rule: Rule, row: RatioRow): boolean {
  if (row.ratio === null || !Number.isFinite(row.ratio)) return false;
  if (!compare(row.ratio, rule.comparison, rule.ratio_threshold)) return false;
  for (const c of rule.conditions) {
    const v = row[c.field];
    if (v === null || v === undefined || !compare(v, c.comparison, c.value)) return false;
  }
  return true;
}

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
 * a streak); a month-to-date month can enter a level but never leaves one, since its figures are still
 * growing.
 */
export function evaluateSeries(rows: RatioRow[], rules: Rule[]): MonthLevel[] {
  if (rows.length === 0) return [];
  const { mid, network, program } = rows[0];
  const mine = rules.filter((r) => r.network === network && r.program === program);
  const byMonth = new Map<string, RatioRow[]>();
  for (const r of rows) {
    const l = byMonth.get(r.month);
    if (l) l.push(r);
    else byMonth.set(r.month, [r]);
  }
  const months = [...byMonth.keys()].sort();
  const levels = new Map<string, LevelStreak>();
  for (const r of mine) {
    const s = levels.get(r.level);
    if (s) { s.rules.push(r); s.rank = Math.max(s.rank, r.rank); }
    else levels.set(r.level, { level: r.level, rank: r.rank, rules: [r], in: false, metRun: 0, missRun: 0 });
  }
  const out: MonthLevel[] = [];
  const first = months[0];
  const last = months[months.length - 1];
  // Bounded: one step per calendar month between the first and the last row.
  for (let m = first, guard = 0; m <= last && guard < 2400; m = addMonths(m, 1), guard++) {
    const monthRows = byMonth.get(m) ?? [];
    const partial = monthRows.some((r) => r.is_partial);
    const projection = monthRows.some((r) => r.is_projection);
    const met: string[] = [];
    let best: { s: LevelStreak; rule: Rule; row: RatioRow | null } | null = null;
    for (const s of levels.values()) {
      const live = s.rules.filter((r) => inForce(r, m));
      let hit: { rule: Rule; row: RatioRow } | null = null;
      for (const rule of live) {
        const row = monthRows.find((x) => x.metric === rule.metric);
        if (row && meets(rule, row)) { hit = { rule, row }; break; }
      }
      const enter = Math.max(1, ...live.map((r) => r.months_to_enter));
      const leave = Math.max(1, ...live.map((r) => r.months_to_leave));
      if (live.length === 0) {
        s.in = false; s.metRun = 0; s.missRun = 0;
        continue;
      }
      if (hit) {
        met.push(s.level);
        s.metRun++; s.missRun = 0;
        if (!s.in && s.metRun >= enter) s.in = true;
      } else if (!partial) {
        s.missRun++; s.metRun = 0;
        if (s.in && s.missRun >= leave) s.in = false;
      }
      if (s.in && (!best || s.rank > best.s.rank)) {
        const rule = hit?.rule ?? live[0];
        best = { s, rule, row: hit?.row ?? monthRows.find((x) => x.metric === rule.metric) ?? null };
      }
    }
    out.push({
      mid, network, program, month: m,
      level: best?.s.level ?? null,
      rank: best?.s.rank ?? null,
      met,
      row: best?.row ?? monthRows.find((r) => r.metric === 'count') ?? monthRows[0] ?? null,
      rule: best?.rule ?? null,
      is_partial: partial,
      is_projection: projection,
    });
  }
  return out;
}

function groupKey(r: { mid: string; network: string; program: string }): string {
  return `${r.mid}\u0000${r.network}\u0000${r.program}`;
}

/** Groups rows by mid × network × program (programs no rule names are still reported, with level null). */
export function groupSeries(rows: RatioRow[]): RatioRow[][] {
  const g = new Map<string, RatioRow[]>();
  for (const r of rows) {
    const k = groupKey(r);
    const l = g.get(k);
    if (l) l.push(r);
    else g.set(k, [r]);
  }
  return [...g.values()];
}

/** Levels reached from observed (or month-to-date) figures; projected rows are left out. */
export function evaluateRows(rows: RatioRow[], set: RuleSet): MonthLevel[] {
  const out: MonthLevel[] = [];
  const ruleCache = new Map<string, Rule[]>();
  for (const series of groupSeries(rows.filter((r) => !r.is_projection))) {
    const mid = series[0].mid;
    // MIDs without overrides share one rule list.
    const key = set.mids[mid] ? `mid:${mid}` : '';
    let rules = ruleCache.get(key);
    if (!rules) { rules = rulesFor(set, mid); ruleCache.set(key, rules); }
    for (const l of evaluateSeries(series, rules)) out.push(l);
  }
  return out;
}
