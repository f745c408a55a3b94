// The one adapter between the ratio rows and what the report says about them: per row, the level reached,
// the state (clear, watch, level), the level it is measured against next and how close it is (ratio ÷ that
// threshold), why that level was not reached, and whether the numerator is complete. Issue #13 gives these as
// explanation fields of `cbp ratios --json` (contract/ratios.ts RatioExplanation); until that function is in
// the tree this derives the same fields from the rules here, with the same names, so the report switches by
// replacing this function's body alone.
import type { RatioRow } from '../contract/ratios.ts';
import { evaluateRows, inForce, rulesFor, type MonthLevel } from '../rules/evaluate.ts';
import { evaluateProjections } from '../rules/projection.ts';
import type { Rule, RuleSet } from '../rules/thresholds.ts';

export type ReportState = 'clear' | 'watch' | 'level';

/** The explanation fields the report reads (a subset of issue #13's RatioExplanation, same names). */
export interface ReportExplanation {
  level: string | null;
  /** null on rows no enabled rule in force reads */
  state: ReportState | null;
  next_level: string | null;
  next_threshold: number | null;
  /** ratio ÷ threshold of next_level (at the top: of level); null without a ratio or rule */
  closeness: number | null;
  reason: string | null;
  numerator_complete: boolean;
}

export type ExplainedRow = RatioRow & ReportExplanation;

/** The watch band: a row at this share of its next threshold or more is watched (issue #13's default, 0.8). */
export const WATCH_FRACTION = 0.8;

const key = (r: { mid: string; network: string; program: string; month: string }) => `${r.mid}\u0000${r.network}\u0000${r.program}\u0000${r.month}`;
const pctText = (v: number) => `${Number((v * 100).toFixed(3))} %`;

/** Why a rule's conditions are not all met by a row, each failing condition said with its figures. */
function failing(rule: Rule, row: RatioRow): string[] {
  const out: string[] = [];
  if (row.ratio === null) out.push(`no ratio (${row.no_ratio_reason ?? 'no figures'})`);
  else if (!(rule.comparison === '>=' ? row.ratio >= rule.ratio_threshold : row.ratio > rule.ratio_threshold)) {
    out.push(`ratio ${pctText(row.ratio)} below ${rule.level}'s ${pctText(rule.ratio_threshold)}`);
  }
  for (const c of rule.conditions) {
    const v = row[c.field];
    if (v === null || v === undefined || !(c.comparison === '>=' ? v >= c.value : v > c.value)) {
      out.push(`${c.field} ${v === null || v === undefined ? 'unknown' : Number(v.toFixed(2)).toLocaleString('en-US')} below the minimum ${c.value.toLocaleString('en-US')}`);
    }
  }
  return out;
}

/**
 * Each row with its explanation. Rows must hold whole MIDs' histories (streaks need the months before), as
 * store/ratios.ts forEachRatioBatch gives them.
 */
export function explainRows(rows: RatioRow[], set: RuleSet): ExplainedRow[] {
  const actual = new Map<string, MonthLevel>(evaluateRows(rows, set).map((l) => [key(l), l]));
  const projected = new Map<string, MonthLevel>(evaluateProjections(rows, set).map((l) => [key(l), l]));
  const rulesByMid = new Map<string, Rule[]>();
  return rows.map((row) => {
    let rules = rulesByMid.get(row.mid);
    if (!rules) { rules = rulesFor(set, row.mid); rulesByMid.set(row.mid, rules); }
    const complete = (row as Partial<{ numerator_complete: boolean }>).numerator_complete ?? true;
    const live = rules.filter((r) => r.network === row.network && r.program === row.program && inForce(r, row.month));
    const mine = live.filter((r) => r.metric === row.metric);
    if (mine.length === 0) {
      return { ...row, level: null, state: null, next_level: null, next_threshold: null, closeness: null, reason: null, numerator_complete: complete };
    }
    const judged = (row.is_projection ? projected : actual).get(key(row));
    const level = judged?.level ?? null;
    const rank = judged?.rank ?? -Infinity;
    // The next level up among those in force (of this row's metric), else the top one reached.
    const above = mine.filter((r) => r.rank > rank).sort((a, b) => a.rank - b.rank || a.ratio_threshold - b.ratio_threshold);
    const next = above[0] ?? null;
    const against = next ?? mine.filter((r) => r.level === level).sort((a, b) => a.ratio_threshold - b.ratio_threshold)[0] ?? null;
    const closeness = against && row.ratio !== null && against.ratio_threshold > 0 ? row.ratio / against.ratio_threshold : null;
    let reason: string | null = null;
    if (next) {
      const f = failing(next, row);
      if (f.length) reason = f.join('; ');
      else {
        const enter = Math.max(1, ...live.filter((r) => r.level === next.level).map((r) => r.months_to_enter));
        reason = enter > 1 ? `${next.level} met this month; entered after ${enter} months in a row` : row.is_partial && !row.is_projection ? 'month to date' : null;
      }
    }
    if (!complete) reason = [reason, 'TC40 fraud reports not yet captured for this month: the ratio is partial'].filter(Boolean).join('; ');
    const state: ReportState = level ? 'level' : closeness !== null && closeness >= WATCH_FRACTION ? 'watch' : 'clear';
    return {
      ...row, level, state, next_level: next?.level ?? null, next_threshold: next?.ratio_threshold ?? null, closeness, reason, numerator_complete: complete,
    };
  });
}
