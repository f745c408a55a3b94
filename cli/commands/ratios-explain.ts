// INTERIM: the explanation of ratio rows (state, next level, closeness, reason, region) until the rule
// engine's own (rules/explain.ts explainRows, issue #13) lands; same names as contract/ratios.ts
// RatioExplanation, so `cbp ratios` switches by changing one import.
import type { RatioRow } from '../../contract/ratios.ts';
import { evaluateRows, inForce, regionOf, rulesFor, meets, compare, type MonthLevel } from '../../rules/evaluate.ts';
import { evaluateProjections } from '../../rules/projection.ts';
import type { Rule, RuleSet } from '../../rules/thresholds.ts';

export interface Explanation {
  level: string | null;
  state: 'clear' | 'watch' | 'level' | null;
  next_level: string | null;
  next_threshold: number | null;
  closeness: number | null;
  reason: string | null;
  region: string | null;
  region_source: 'mid' | 'default' | null;
  monitored_as: string | null;
  tc40_observed_from: string | null;
  numerator_complete: boolean;
  superseded_by: string | null;
  certainty: 'exact' | 'approximate' | 'unconfirmed' | null;
  certainty_note: string | null;
}
export type ExplainedRatioRow = RatioRow & Explanation;

const WATCH = 0.8;
const num = (v: number) => v.toLocaleString('en-US', { maximumFractionDigits: 2 });
const FIELD: Record<string, string> = { numerator_count: 'count', numerator_amount: 'amount', denominator_count: 'transactions', denominator_amount: 'transaction amount' };

function why(rule: Rule, row: RatioRow): string[] {
  const out: string[] = [];
  if (row.ratio !== null && !compare(row.ratio, rule.comparison, rule.ratio_threshold)) {
    out.push(`ratio ${(row.ratio * 100).toFixed(2)} % ${rule.comparison === '>=' ? '<' : '≤'} ${(rule.ratio_threshold * 100).toFixed(2)} %`);
  }
  for (const c of rule.conditions) {
    const v = row[c.field];
    if (v === null || v === undefined) out.push(`${FIELD[c.field]} not known`);
    else if (!compare(v, c.comparison, c.value)) out.push(`${FIELD[c.field]} ${num(v)} < ${num(c.value)} minimum`);
  }
  return out;
}

export function explainRows(rows: RatioRow[], set: RuleSet): ExplainedRatioRow[] {
  const key = (r: { mid: string; network: string; program: string; month: string }) => `${r.mid}\u0000${r.network}\u0000${r.program}\u0000${r.month}`;
  const actual = new Map<string, MonthLevel>(evaluateRows(rows, set).map((l) => [key(l), l]));
  const projected = new Map<string, MonthLevel>(evaluateProjections(rows, set).map((l) => [key(l), l]));
  return rows.map((r) => {
    const x = r as RatioRow & Partial<Pick<Explanation, 'tc40_observed_from' | 'numerator_complete'>>;
    const base = {
      region: regionOf(set, r.mid),
      region_source: set.mids[r.mid]?.region !== undefined ? ('mid' as const) : ('default' as const),
      monitored_as: r.mid,
      tc40_observed_from: x.tc40_observed_from ?? null,
      numerator_complete: x.numerator_complete ?? true,
      superseded_by: null,
      certainty: null,
      certainty_note: null,
    };
    const rules = rulesFor(set, r.mid).filter((u) => u.network === r.network && u.program === r.program && u.metric === r.metric && inForce(u, r.month));
    if (rules.length === 0) return { ...r, ...base, level: null, state: null, next_level: null, next_threshold: null, closeness: null, reason: null };
    const l = (r.is_projection ? projected : actual).get(key(r));
    const rank = l?.rank ?? -Infinity;
    const above = rules.filter((u) => u.rank > rank).sort((a, b) => a.rank - b.rank || a.ratio_threshold - b.ratio_threshold);
    const against = above[0] ?? rules.filter((u) => u.level === l?.level)[0] ?? null;
    const closeness = r.ratio !== null && against && against.ratio_threshold > 0 ? r.ratio / against.ratio_threshold : null;
    let reason: string | null = null;
    if (above[0]) {
      const stops = why(above[0], r);
      if (stops.length) reason = stops.join('; ');
      else if (meets(above[0], r) && above[0].months_to_enter > 1) reason = `needs ${above[0].months_to_enter} consecutive months`;
    }
    const state = l?.level ? 'level' : closeness !== null && closeness >= WATCH ? 'watch' : 'clear';
    return {
      ...r, ...base, level: l?.level ?? null, state, next_level: above[0]?.level ?? null, next_threshold: above[0]?.ratio_threshold ?? null, closeness, reason,
    } as ExplainedRatioRow;
  });
}
