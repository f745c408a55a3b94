// The rules a MID is judged under: its region, its group, the rules in force for it (rule resolution, not judging: the
// SQL judge reads these as tables, rules/rule-table.ts).
import { regionApplies } from '../contract/regions.ts';
import type { RatioRow, RegionSource } from '../contract/ratios.ts';
import type { Comparison, Program, Rule, RuleSet } from './thresholds.ts';

/** value against a threshold by the rule's comparison. */
export function compare(value: number, op: Comparison, threshold: number): boolean {
  return op === '>=' ? value >= threshold : value > threshold;
}

/** A rule is in force for month M when its effective range overlaps M (every day of M lies between 'M-01' and 'M-31'). */
export function inForce(rule: Rule, month: string): boolean {
  return inForceBetween(rule, `${month}-01`, `${month}-31`);
}

/** inForce with the month's first and last possible days already written ('M-01', 'M-31'). */
export function inForceBetween(rule: Rule, first: string, last: string): boolean {
  if (rule.effective_from && rule.effective_from > last) return false;
  if (rule.effective_to && rule.effective_to < first) return false;
  return true;
}

/** The group a MID is monitored in for a program, if any. */
export function groupOf(set: RuleSet, mid: string, program: string): string | null {
  for (const [id, g] of Object.entries(set.groups ?? {})) if (g.programs.includes(program as Program) && g.mids.includes(mid)) return id;
  return null;
}

/**
 * The region a MID (or a group id) is evaluated under and where it came from: the MID's own region in the
 * thresholds file ('mid'); a group's region, else its MIDs' own region when they all give the same one
 * ('mid'); else the default region ('default').
 */
export function regionInfo(set: RuleSet, mid: string): { region: string; source: RegionSource } {
  const own = set.mids[mid]?.region;
  if (own) return { region: own, source: 'mid' };
  const g = set.groups?.[mid];
  if (g) {
    if (g.region) return { region: g.region, source: 'mid' };
    const regions = new Set(g.mids.map((m) => set.mids[m]?.region));
    const [only] = [...regions];
    if (regions.size === 1 && only) return { region: only, source: 'mid' };
  }
  return { region: set.defaultRegion, source: 'default' };
}

export function regionOf(set: RuleSet, mid: string): string {
  return regionInfo(set, mid).region;
}

/** The enabled rules that apply to one MID: the common ones less its disabled ids, plus its own. */
export function rulesFor(set: RuleSet, mid: string): Rule[] {
  const o = set.mids[mid];
  const region = regionInfo(set, mid).region;
  const all = o ? [...set.rules.filter((r) => !o.disable.includes(r.id)), ...o.rules] : set.rules;
  return all.filter((r) => r.enabled && regionApplies(r.regions, r.except_regions, region));
}

/**
 * Ratio and every count/amount condition hold, unrounded. No ratio means not met. fraction scales every
 * threshold (the watch band: 0.8); at 1 the thresholds are compared exactly as written.
 */
export function meets(rule: Rule, row: RatioRow, fraction = 1): boolean {
  if (row.ratio === null || !Number.isFinite(row.ratio)) return false;
  if (!compare(row.ratio, rule.comparison, fraction === 1 ? rule.ratio_threshold : rule.ratio_threshold * fraction)) return false;
  for (const c of rule.conditions) {
    const v = row[c.field];
    if (v === null || v === undefined || !compare(v, c.comparison, fraction === 1 ? c.value : c.value * fraction)) return false;
  }
  return true;
}
