// Explained ratio rows (issue #13): for each ratio row, where its mid × network × program stands under the
// rules — level in force, state (clear / watch / level), the next level and how close the row is to it, why
// it stopped short, the region it was judged under, the merchant it is monitored as, and how far the data
// lets the level be trusted. Pure: rows and a rule set in, explained rows out (contract/ratios.ts
// RatioExplanation; docs/ratios.md "Columns"). The same columns are on mart_ratios, as of the last evaluation.
import type { ExplainedRatioRow, RatioExplanation, RatioRow } from '../../contract/ratios.ts';
import { evaluateRows, groupOf, meets, regionInfo, seriesIndex, seriesKey, type LevelRun, type MonthLevel } from './evaluate.ts';
import { headroomBasis, headroomCount, overByCount } from './headroom.ts';
import { feeEstimate, NO_FEE } from './fees.ts';
import { evaluateProjections } from './projection.ts';
import type { ConditionField, Rule, RuleSet } from '../../rules/thresholds.ts';

const LABEL: Record<ConditionField, string> = {
  numerator_count: 'count',
  numerator_amount: 'amount',
  denominator_count: 'transactions',
  denominator_amount: 'transaction amount',
  month_transaction_count: 'transactions in the month',
  month_transaction_amount: 'transaction amount in the month',
};

/**
 * 1500 → "1,500"; 1234.5 → "1,234.5"; 0.333 → "0.33": rounded half up to 2 decimals through whole hundredths,
 * trailing zeros dropped; −1500 → "-1,500" (the sign, then the magnitude's figure). The SQL of the same text (sql/views/42_ratio_mart.sql cbp_figure) rounds the same way.
 */
export function figure(n: number): string {
  if (n < 0) return `-${figure(-n)}`;
  const c = Math.round(n * 100);
  const whole = Math.trunc(c / 100).toLocaleString('en-US');
  const frac = c % 100;
  return frac === 0 ? whole : frac % 10 === 0 ? `${whole}.${frac / 10}` : `${whole}.${String(frac).padStart(2, '0')}`;
}

/** A fraction as a percentage with two decimals, rounded half up through whole hundredths: 0.0131 → "1.31 %". */
export function percent(f: number): string {
  if (f < 0) return `-${percent(-f)}`;
  const c = Math.round(f * 10_000);
  return `${Math.trunc(c / 100)}.${String(c % 100).padStart(2, '0')} %`;
}

/** Labels of condition fields in reasons (the SQL of cold rows uses the same). */
export const CONDITION_LABELS = LABEL;

/** The conditions of a rule this row does not meet, as text ("ratio 1.31 % < 1.50 %", "count 43 < 1,500 minimum"). */
export function failedConditions(rule: Rule, row: RatioRow): string[] {
  const out: string[] = [];
  if (row.ratio === null || !Number.isFinite(row.ratio)) out.push(`no ratio (${row.no_ratio_reason ?? 'no figures'})`);
  else if (rule.comparison === '>=' ? !(row.ratio >= rule.ratio_threshold) : !(row.ratio > rule.ratio_threshold)) {
    out.push(rule.comparison === '>=' ? `ratio ${percent(row.ratio)} < ${percent(rule.ratio_threshold)}` : `ratio ${percent(row.ratio)} not above ${percent(rule.ratio_threshold)}`);
  }
  for (const c of rule.conditions) {
    const v = row[c.field];
    if (v === null || v === undefined) out.push(`${LABEL[c.field]} not in the data`);
    else if (c.comparison === '>=' ? !(v >= c.value) : !(v > c.value)) {
      out.push(c.comparison === '>=' ? `${LABEL[c.field]} ${figure(v)} < ${figure(c.value)} minimum` : `${LABEL[c.field]} ${figure(v)} not above ${figure(c.value)}`);
    }
  }
  return out;
}

/** Level names as the networks write them (ecm → ECM, excessive → excessive). */
function levelName(level: string): string {
  return /^(ecm|hecm|efm)$/.test(level) ? level.toUpperCase() : level;
}

/** The first rule of a level's streak in force this month that reads a metric. */
function ruleOf(s: LevelRun, metric: string): Rule | undefined {
  for (const r of s.live) if (r.metric === metric) return r;
  return undefined;
}

const byRank = (a: LevelRun, b: LevelRun) => a.rank - b.rank;

/**
 * The explanation of one row from its series' month (null: no rule of the row's metric is in force). `region`: what
 * regionInfo gives for monitoredAs, when the caller has it already.
 */
export function explainRow(row: RatioRow, l: MonthLevel | undefined, set: RuleSet, monitoredAs: string, region = regionInfo(set, monitoredAs)): RatioExplanation {
  const base: RatioExplanation = {
    level: null, state: null, next_level: null, next_threshold: null, closeness: null, reason: null,
    region: region.region, region_source: region.source, monitored_as: monitoredAs,
    tc40_observed_from: row.tc40_observed_from, numerator_complete: row.numerator_complete,
    superseded_by: null, certainty: null, certainty_note: null,
    headroom_count: null, over_by_count: null, headroom_basis: null, ...NO_FEE,
  };
  if (!l) return base;
  const metric = row.metric;
  const mine: LevelRun[] = [];
  for (const s of l.streaks) if (ruleOf(s, metric) !== undefined) mine.push(s);
  if (mine.length === 0) return base;
  if (mine.length > 1) mine.sort(byRank);
  const current = l.level === null ? undefined : l.streaks.find((s) => s.level === l.level);
  const currentRank = l.rank ?? -Infinity;
  const next = mine.find((s) => s.rank > currentRank);
  const measured = next ?? (current && ruleOf(current, metric) ? current : undefined);
  const measuredRule = measured ? ruleOf(measured, metric) : undefined;
  const reasons: string[] = [];
  if (l.superseded_by) reasons.push(`assessed as ${levelName(l.superseded_by)}`);
  if (current && !current.met && current.in && !l.is_partial) {
    reasons.push(`${levelName(current.level)} kept until ${current.leave} consecutive months below (${current.missRun} so far)`);
  }
  if (next) {
    const rule = ruleOf(next, metric) as Rule;
    const failed = failedConditions(rule, row);
    if (failed.length) reasons.push(...failed);
    else if (!next.in) reasons.push(`needs ${next.enter} consecutive months (${next.metRun} so far)`);
  }
  // The rule the level (or the next one) was decided on says how far it can be trusted.
  const decided = (current && ruleOf(current, metric)) ?? measuredRule;
  if (decided?.certainty === 'unconfirmed' && decided.certainty_note && (current || (next && next.met))) reasons.push(decided.certainty_note);
  const threshold = measuredRule?.ratio_threshold ?? null;
  base.level = l.level;
  base.state = l.level !== null ? 'level' : l.watch !== null ? 'watch' : 'clear';
  base.next_level = next?.level ?? null;
  base.next_threshold = next ? (ruleOf(next, metric) as Rule).ratio_threshold : null;
  base.closeness = row.ratio !== null && threshold !== null && threshold > 0 ? row.ratio / threshold : null;
  base.reason = reasons.length ? reasons.join('; ') : null;
  base.superseded_by = l.superseded_by;
  base.certainty = decided?.certainty ?? null;
  base.certainty_note = decided?.certainty_note ?? null;
  // How far from the next level, how far past the one met, and what the level costs (rules/headroom.ts, rules/fees.ts).
  if (next) base.headroom_count = headroomCount(row, ruleOf(next, metric) as Rule);
  const held = current ? ruleOf(current, metric) : undefined;
  if (held && meets(held, row)) base.over_by_count = overByCount(row, held);
  if (base.headroom_count !== null || base.over_by_count !== null) base.headroom_basis = headroomBasis(row).basis;
  if (held && !l.superseded_by) Object.assign(base, feeEstimate(set, row, held));
  return withMissing(base, row);
}

/** What VAMP's reason says when the MID report's count was the disputes' floor. */
export const FLOOR_NOTE = 'disputes counted from the MID report (the chargeback report lists fewer)';

/**
 * Never "clear" on missing data: a row whose figures miss a source is "unknown", and its reason says first what is
 * missing and what to run (a level or watch keeps its state: the missing figures only add to it). The same rule as
 * sql/views/40_ratios.sql ratio_rows_covered_between's missing_sources for the rows it explains.
 */
function withMissing(e: RatioExplanation, row: RatioRow): RatioExplanation {
  if (e.state === null || (!row.missing_sources && !row.numerator_floor)) return e;
  if (e.state === 'clear' && row.missing_sources) e.state = 'unknown';
  e.reason = [row.missing_sources, row.numerator_floor ? FLOOR_NOTE : null, e.reason].filter((x) => x).join('; ') || null;
  return e;
}

/**
 * Each row with its explanation, in the order given. Rows must hold every month of their MIDs up to the
 * latest shown (streaks need them) and, for a grouped MID, every member's rows of the group's programs (the
 * group is judged on their sums, as sql/views/43_ratio_judge.sql ratio_judged_rows reads them).
 */
export function explainRows(rows: RatioRow[], set: RuleSet): ExplainedRatioRow[] {
  return explainWith(rows, evaluateRows(rows, set), evaluateProjections(rows, set), set);
}

/**
 * Calls fn with each row and its explanation, in the order given, the levels already judged (evaluateRows,
 * evaluateProjections of the same rows): what explainWith returns merged, without a merged copy of each row.
 */
export function explainEach(
  rows: RatioRow[], levels: MonthLevel[], projections: MonthLevel[], set: RuleSet, fn: (row: RatioRow, e: RatioExplanation) => void,
): void {
  const actual = seriesIndex(levels);
  const projected = seriesIndex(projections);
  const hasGroups = Object.keys(set.groups ?? {}).length > 0;
  const regions = new Map<string, ReturnType<typeof regionInfo>>();
  // Rows come series by series: a series' levels are looked up once per run of its rows.
  let last: RatioRow | undefined;
  let monitoredAs = '';
  let region = regionInfo(set, '');
  let mine: { actual?: Map<string, MonthLevel>; projected?: Map<string, MonthLevel> } = {};
  for (const r of rows) {
    if (last === undefined || r.mid !== last.mid || r.network !== last.network || r.program !== last.program) {
      monitoredAs = hasGroups ? (groupOf(set, r.mid, r.program) ?? r.mid) : r.mid;
      const k = seriesKey({ mid: monitoredAs, network: r.network, program: r.program });
      mine = { actual: actual.get(k)?.byMonth, projected: projected.get(k)?.byMonth };
      let g = regions.get(monitoredAs);
      if (g === undefined) { g = regionInfo(set, monitoredAs); regions.set(monitoredAs, g); }
      region = g;
    }
    last = r;
    const l = (r.is_projection ? mine.projected : mine.actual)?.get(r.month);
    fn(r, explainRow(r, l, set, monitoredAs, region));
  }
}

/** The oracle judges levels, not chances. */
const NO_CHANCE = { chance: null, chance_level: null, expected_count: null, expected_low80: null, expected_high80: null, pace_day: null };

/** explainRows with the levels already judged (evaluateRows, evaluateProjections of the same rows). */
export function explainWith(rows: RatioRow[], levels: MonthLevel[], projections: MonthLevel[], set: RuleSet): ExplainedRatioRow[] {
  const out: ExplainedRatioRow[] = [];
  explainEach(rows, levels, projections, set, (r, e) => { out.push(Object.assign({}, r, e, NO_CHANCE)); });
  return out;
}
