// The report's figures, built from the explained ratio rows of the kept table (level, state, next level, closeness
// and reason of each row, as the SQL judge wrote them) and the rules in force: the at-risk table, the trend series
// and the heat map. Pure: rows in, plain data out; what is kept per batch is small, so 1,000 MIDs × 36 months
// never sit in memory at once.
import { headroomWords } from '../rules/headroom.ts';
import { feeWords } from '../rules/fees.ts';
import { chanceWords } from '../rules/forecast.ts';
import type { ExplainedRatioRow, RatioRow, RatioState } from '../contract/ratios.ts';
import { addMonths } from '../lib/utc.ts';
import { inForce, meets, rulesFor } from '../rules/rule-set.ts';
import { watchOf, type Rule, type RuleSet } from '../rules/thresholds.ts';
import { latestMonths, type MonthScope, type ShownMonth } from './months.ts';
import type { TrendMonth, TrendSeries, TrendThreshold } from './trend.ts';

/** A row's state; 'unknown': it would read clear, but a source its figures need is not loaded (`reason` says which). */
export type ReportState = RatioState;
type ExplainedRow = ExplainedRatioRow;

/** One MID × network × program in force in the report's month, as the at-risk table shows it. */
export interface AtRiskRow {
  mid: string;
  network: string;
  program: string;
  /** the metric of the row shown (the one closest to its threshold) */
  metric: string;
  month: string;
  ratio: number | null;
  numerator: number | null;
  denominator: number | null;
  numerator_count: number | null;
  is_partial: boolean;
  level: string | null;
  state: ReportState;
  next_level: string | null;
  next_threshold: number | null;
  closeness: number | null;
  reason: string | null;
  /** a level row below its level's threshold: why the level still holds ("ECM kept until 3 consecutive months below (1 so far)") */
  held: string | null;
  numerator_complete: boolean;
  /** the run-rate projection to month end of an open month */
  projected_ratio: number | null;
  projected_closeness: number | null;
  projected_level: string | null;
  /** an open month's chance of a breach in words (rules/forecast.ts chanceWords) */
  chance_words: string | null;
  /** headroom and over-by as words (rules/headroom.ts headroomWords), of the observed row */
  headroom: string | null;
  /** the level's fee estimate as words (rules/fees.ts feeWords): the observed row's, else the projection's */
  fee: string | null;
}

/**
 * What a heat-map cell shows: under the watch band, in it, over the entry threshold with the level's count and
 * amount conditions met (far_over: 150 % or more), the ratio over but another condition not met, or unknown.
 */
export type HeatKind = 'clear' | 'watch' | 'over' | 'far_over' | 'ratio_only' | 'unknown';

export interface HeatRow {
  mid: string;
  /** per month of the report's months: the ratio ÷ entry threshold of the program shown (the most severe), or null */
  cells: Array<number | null>;
  /** what each cell shows (colour), or null where there is nothing */
  kinds: Array<HeatKind | null>;
  /** which program gives each cell ("visa vamp"), or null */
  programs: Array<string | null>;
}

export interface RatioSection {
  /** the last month shown (the latest, or --month) */
  month: string;
  /** how the months shown were chosen: 'latest' (no --month, as `cbp ratios` with no flags) or 'month' */
  scope: MonthScope;
  /** the months the at-risk section shows: the latest complete month and the month to date, or --month's */
  shown: ShownMonth[];
  /** the 13 months the trends and the heat map span, oldest first, ending with month */
  months: string[];
  /** the months of `months` that are month to date */
  toDate: ShownMonth[];
  /** the watch band's fraction of each threshold (thresholds file `watch.fraction`) */
  watchFraction: number;
  atRisk: AtRiskRow[];
  /** at-risk rows not shown (clear ones past the cap) */
  atRiskLeftOut: number;
  atRiskTotal: number;
  trends: TrendSeries[];
  /** series that qualified for a trend but were left out by the cap */
  trendsLeftOut: number;
  heat: HeatRow[];
  heatLeftOut: number;
  mids: number;
}

export interface RatioSectionOptions {
  /** the latest month to show: the one the data ends with, or --month */
  month: string;
  /** 'latest': also the month before when `month` is month to date (report/months.ts); default 'month': month alone */
  scope?: MonthScope;
  rules: RuleSet;
  /** MIDs picked with --mid: every series of theirs gets a trend (up to trendCap) */
  picked?: string[];
  /** most trends drawn (default 20) */
  trendCap?: number;
  /** most heat-map rows (default 50) */
  heatCap?: number;
  /** most clear rows per month in the at-risk table (the others are always shown; default 30) */
  clearCap?: number;
}

/** The section's caps when the options name none: trends drawn, heat-map rows, clear rows per month shown. */
export const SECTION_CAPS = { trendCap: 20, heatCap: 50, clearCap: 30 } as const;

const STATE_ORDER: Record<ReportState, number> = { level: 3, watch: 2, unknown: 1, clear: 0 };

/** Sorts at-risk rows: levels reached first, then watched, unknown, clear; within each, closest to the threshold first. */
export function compareAtRisk(a: AtRiskRow, b: AtRiskRow): number {
  return STATE_ORDER[b.state] - STATE_ORDER[a.state]
    || (b.closeness ?? -1) - (a.closeness ?? -1)
    || a.mid.localeCompare(b.mid) || a.network.localeCompare(b.network) || a.program.localeCompare(b.program);
}

const seriesKey = (r: { mid: string; network: string; program: string }) => `${r.mid}\u0000${r.network}\u0000${r.program}`;

/** The thresholds of the rules of one metric in force in a month: per level, its lowest threshold. */
export function thresholdsIn(rules: Rule[], network: string, program: string, metric: string, month: string): TrendThreshold[] {
  const byLevel = new Map<string, TrendThreshold>();
  for (const r of rules) {
    if (r.network !== network || r.program !== program || r.metric !== metric || !inForce(r, month)) continue;
    const min = r.conditions.find((c) => c.field === 'numerator_count')?.value ?? null;
    const prev = byLevel.get(r.level);
    if (!prev || r.ratio_threshold < prev.ratio) byLevel.set(r.level, { level: r.level, rank: r.rank, ratio: r.ratio_threshold, minCount: min });
  }
  return [...byLevel.values()].sort((a, b) => a.rank - b.rank);
}

/**
 * One trend chart's series (report/trend.ts) from ratio rows of one MID (any programs and months: those of
 * `which` in `months` are taken): per month the observed ratio and count (month to date when partial, marked
 * incomplete when the numerator lacks TC40s), an open month's run-rate projection, and the thresholds of the
 * MID's rules (rulesFor) in force that month. What `cbp report` charts; the alert notices can draw the same.
 */
export function trendSeriesOf(
  rows: readonly RatioRow[], which: { mid: string; network: string; program: string; metric: string }, months: readonly string[], midRules: Rule[],
): TrendSeries {
  const { mid, network, program, metric } = which;
  const mine = rows.filter((r) => r.mid === mid && r.network === network && r.program === program && r.metric === metric);
  return {
    mid, network, program, metric,
    months: months.map((m) => {
      const obs = mine.find((r) => r.month === m && !r.is_projection);
      const proj = mine.find((r) => r.month === m && r.is_projection);
      const t: TrendMonth = {
        month: m,
        ratio: obs?.ratio ?? null,
        count: obs?.numerator_count ?? null,
        partial: obs?.is_partial ?? false,
        incomplete: obs ? obs.numerator_complete === false : false,
        thresholds: thresholdsIn(midRules, network, program, metric, m),
      };
      if (proj && obs?.is_partial) { t.projectedRatio = proj.ratio; t.projectedCount = proj.numerator_count; }
      // The forecast's interval as ratios, over the projected denominator (counts: a count ratio's).
      const f = obs as Partial<ExplainedRow> | undefined;
      if (proj && f?.expected_low80 != null && f.expected_high80 != null && metric === 'count' && proj.denominator) {
        t.band80 = [f.expected_low80 / proj.denominator, f.expected_high80 / proj.denominator];
        t.chance = f.chance ?? null;
        t.chanceLevel = f.chance_level ?? null;
      }
      return t;
    }),
  };
}

/** The rules of a MID in force in the row's month for its network and program (of its metric, unless anyMetric). */
function rulesOfRow(midRules: Rule[], r: RatioRow, anyMetric = false): Rule[] {
  return midRules.filter((x) => x.network === r.network && x.program === r.program && (anyMetric || x.metric === r.metric) && inForce(x, r.month));
}

/**
 * A heat-map cell of one observed row: the ratio ÷ the entry (lowest) threshold in force, and what it shows;
 * null for a row no rule reads or without a ratio (an unknown row shows even without one).
 */
export function heatCell(r: ExplainedRow, midRules: Rule[], watchFraction: number): { v: number | null; kind: HeatKind } | null {
  const state = r.state;
  if (r.is_projection || state === null) return null;
  const entry = thresholdsIn(midRules, r.network, r.program, r.metric, r.month)[0];
  const v = r.ratio !== null && entry && entry.ratio > 0 ? r.ratio / entry.ratio : null;
  if (state === 'unknown') return { v, kind: 'unknown' };
  if (v === null) return null;
  if (v < watchFraction) return { v, kind: 'clear' };
  if (v < 1) return { v, kind: 'watch' };
  // Over the ratio: a level's colour only when some rule's count and amount conditions hold too.
  if (!rulesOfRow(midRules, r).some((x) => meets(x, r))) return { v, kind: 'ratio_only' };
  return { v, kind: v >= 1.5 ? 'far_over' : 'over' };
}

// An unknown row would read clear but for a missing source: any known figure at or over the watch band says more.
const HEAT_RANK: Record<HeatKind, number> = { far_over: 4, over: 4, ratio_only: 3, watch: 2, unknown: 1, clear: 0 };

/** Whether cell a is the one to show over b (several programs in one MID × month): the most severe, then the highest. */
const heatBefore = (a: { v: number | null; kind: HeatKind }, b: { v: number | null; kind: HeatKind }) =>
  HEAT_RANK[a.kind] - HEAT_RANK[b.kind] || (a.v ?? -1) - (b.v ?? -1);

/**
 * Why a row at a level whose own threshold (or count/amount condition) is not met this month still shows the
 * level: the reason's "kept until" clause, else the rules' months_to_leave; null when the level is met.
 */
export function heldNote(r: ExplainedRow, midRules: Rule[]): string | null {
  if (r.state !== 'level' || r.level === null) return null;
  const kept = r.reason?.split('; ').find((p) => / kept until /.test(p));
  if (kept) return kept;
  const level = rulesOfRow(midRules, r, true).filter((x) => x.level === r.level);
  const own = level.filter((x) => x.metric === r.metric);
  const below = own.length ? !own.some((x) => meets(x, r)) : r.next_level === null && r.closeness !== null && r.closeness < 1;
  if (!below) return null;
  if (level.length === 0) return 'level held: below threshold for fewer months than the program requires to leave';
  const n = Math.max(...level.map((x) => x.months_to_leave));
  const name = /^(ecm|hecm|efm)$/.test(r.level) ? r.level.toUpperCase() : r.level;
  const months = `${n} complete month${n === 1 ? '' : 's'} in a row not meeting it`;
  if (r.is_partial) return `${name} held: a month to date never leaves a level (left after ${months})`;
  if (r.missing_sources) return `${name} held: a month missing a source never leaves a level (left after ${months})`;
  return `${name} held until ${months}`;
}

/** The series from its first month with figures on (the months before it are empty). */
export function fromFirstFigures(t: TrendSeries): TrendSeries {
  const i = t.months.findIndex((m) => m.ratio !== null || m.count !== null || (m.projectedRatio ?? null) !== null);
  return i <= 0 ? t : { ...t, months: t.months.slice(i) };
}

/**
 * What the kept table's SQL counted over every row of the report's months (cli/report-source.ts), when the
 * builder is given only the rows it shows: the counts finish() cannot take from those rows.
 */
export interface SectionTotals {
  /** MIDs with a rule-read row in the 13 months */
  mids: number;
  /** the months to date among the 13, with the most days covered */
  partial: Array<{ month: string; days_covered: number | null; days_in_month: number | null }>;
  /** at-risk rows (MID × network × program with a state) of the months shown */
  atRisk: number;
  /** MID × network × program at a level or on watch in a month shown (trend candidates) */
  trends: number;
  /** MIDs with a heat-map cell */
  heat: number;
}

/** Builds the ratio sections batch by batch: add() each batch of whole MIDs, then finish(). */
export class RatioSectionBuilder {
  readonly months: string[];
  private readonly atRisk: AtRiskRow[] = [];
  private readonly candidates: Array<{ row: AtRiskRow; series: TrendSeries }> = [];
  private readonly heat: HeatRow[] = [];
  private readonly picked: Set<string>;
  private readonly scope: MonthScope;
  /** the months whose at-risk rows are kept until finish() knows which are shown */
  private readonly riskMonths: string[];
  /** month to date months seen: the most days covered, the month's days */
  private readonly partial = new Map<string, { days_covered: number | null; days_in_month: number | null }>();
  private readonly watchFraction: number;
  private mids = 0;

  constructor(private readonly opts: RatioSectionOptions) {
    this.months = Array.from({ length: 13 }, (_, i) => addMonths(opts.month, i - 12));
    this.picked = new Set(opts.picked ?? []);
    this.scope = opts.scope ?? 'month';
    this.riskMonths = this.scope === 'latest' ? latestMonths(opts.month, true) : [opts.month];
    this.watchFraction = watchOf(opts.rules).fraction;
  }

  /**
   * One batch of explained ratio rows of whole MIDs, up to the report's month (earlier months are skipped).
   * heat false: rows of some series or months only, which draw no heat-map row (finish(totals) then counts).
   */
  add(rows: ExplainedRatioRow[], parts: { heat?: boolean } = {}): void {
    const { month, rules } = this.opts;
    const first = this.months[0];
    const explained = rows.filter((r) => r.month >= first && r.month <= month);
    const bySeries = new Map<string, ExplainedRow[]>();
    const midSet = new Set<string>();
    for (const r of explained) {
      midSet.add(r.mid);
      if (r.is_partial && !r.is_projection) this.notePartial(r);
      const k = seriesKey(r);
      const l = bySeries.get(k);
      if (l) l.push(r);
      else bySeries.set(k, [r]);
    }
    const heat = new Map<string, HeatRow>();
    for (const series of bySeries.values()) {
      const { mid, network, program } = series[0];
      const midRules = rulesFor(rules, mid);
      for (const r of parts.heat === false ? [] : series) {
        const c = heatCell(r, midRules, this.watchFraction);
        if (!c) continue;
        const i = this.months.indexOf(r.month);
        let h = heat.get(mid);
        if (!h) { h = { mid, cells: this.months.map(() => null), kinds: this.months.map(() => null), programs: this.months.map(() => null) }; heat.set(mid, h); }
        const was = h.kinds[i];
        if (was === null || heatBefore(c, { v: h.cells[i], kind: was }) > 0) { h.cells[i] = c.v; h.kinds[i] = c.kind; h.programs[i] = `${network} ${program}`; }
      }
      // The at-risk rows: per month that may be shown, the observed row of the most severe state, closest to its threshold.
      for (const m of this.riskMonths) {
        const now = series.filter((r) => r.month === m && !r.is_projection && r.state !== null);
        if (now.length === 0) continue;
        const rank = (r: ExplainedRow) => STATE_ORDER[r.state as ReportState] ?? 0;
        const best = now.reduce((a, b) => (rank(b) - rank(a) || (b.closeness ?? -1) - (a.closeness ?? -1)) > 0 ? b : a);
        const proj = series.find((r) => r.month === m && r.is_projection && r.metric === best.metric) ?? null;
        const row: AtRiskRow = {
          mid, network, program, metric: best.metric, month: m,
          ratio: best.ratio, numerator: best.numerator, denominator: best.denominator, numerator_count: best.numerator_count,
          is_partial: best.is_partial, level: best.level, state: best.state as ReportState,
          next_level: best.next_level, next_threshold: best.next_threshold, closeness: best.closeness, reason: best.reason,
          held: heldNote(best, midRules), numerator_complete: best.numerator_complete,
          projected_ratio: proj?.ratio ?? null, projected_closeness: proj?.closeness ?? null, projected_level: proj?.level ?? null,
          headroom: headroomWords(best), fee: feeWords(best) ?? (proj ? feeWords(proj) : null),
          chance_words: chanceWords(best),
        };
        this.atRisk.push(row);
        // Trends for levels and watch (an unknown row would read clear), and every series of a MID asked for.
        if (row.state === 'level' || row.state === 'watch' || this.picked.has(mid)) this.candidates.push({ row, series: this.trendOf(series, best.metric, midRules) });
      }
    }
    for (const h of heat.values()) this.heat.push(h);
    this.mids += midSet.size;
  }

  private notePartial(r: ExplainedRow): void {
    const p = this.partial.get(r.month) ?? { days_covered: null, days_in_month: null };
    if (r.days_covered !== null && (p.days_covered === null || r.days_covered > p.days_covered)) p.days_covered = r.days_covered;
    if (p.days_in_month === null) p.days_in_month = r.days_in_month;
    this.partial.set(r.month, p);
  }

  private shownMonth(month: string): ShownMonth {
    const p = this.partial.get(month);
    return p ? { month, kind: 'month_to_date', ...p } : { month, kind: 'complete', days_covered: null, days_in_month: null };
  }

  private trendOf(series: ExplainedRow[], metric: string, midRules: Rule[]): TrendSeries {
    const { mid, network, program } = series[0];
    return fromFirstFigures(trendSeriesOf(series, { mid, network, program, metric }, this.months, midRules));
  }

  /** totals: counted in SQL over every row, when add() was given only the rows shown (each series whole, or not at all). */
  finish(totals?: SectionTotals): RatioSection {
    const { trendCap = SECTION_CAPS.trendCap, heatCap = SECTION_CAPS.heatCap, clearCap = SECTION_CAPS.clearCap, month } = this.opts;
    if (totals) {
      this.partial.clear();
      for (const p of totals.partial) this.partial.set(p.month, { days_covered: p.days_covered, days_in_month: p.days_in_month });
    }
    // cbp ratios' rule (report/months.ts): the month before the latest only when the latest is month to date.
    const shownMonths = this.scope === 'latest' ? latestMonths(month, this.partial.has(month)) : [month];
    const inShown = (r: AtRiskRow) => shownMonths.includes(r.month);
    const all = this.atRisk.filter(inShown);
    const shown = shownMonths.flatMap((m) => {
      const rows = all.filter((r) => r.month === m).sort(compareAtRisk);
      const flagged = rows.filter((r) => r.state !== 'clear' || this.picked.has(r.mid));
      const clear = rows.filter((r) => r.state === 'clear' && !this.picked.has(r.mid));
      return [...flagged, ...clear.slice(0, Math.max(0, clearCap))].sort(compareAtRisk);
    });
    // One trend per MID × program, whichever month shown put it at risk.
    const seen = new Set<string>();
    const candidates: typeof this.candidates = [];
    for (const c of this.candidates.filter((x) => inShown(x.row)).sort((a, b) => compareAtRisk(a.row, b.row))) {
      if (!seen.has(seriesKey(c.row))) { seen.add(seriesKey(c.row)); candidates.push(c); }
    }
    const trends = candidates.slice(0, trendCap).map((c) => c.series);
    const peak = (h: HeatRow) => Math.max(-1, ...h.cells.map((c) => c ?? -1));
    const last = (h: HeatRow) => h.cells[h.cells.length - 1] ?? -1;
    this.heat.sort((a, b) => last(b) - last(a) || peak(b) - peak(a) || a.mid.localeCompare(b.mid));
    return {
      month,
      scope: this.scope,
      shown: shownMonths.map((m) => this.shownMonth(m)),
      months: this.months,
      toDate: this.months.filter((m) => this.partial.has(m)).map((m) => this.shownMonth(m)),
      watchFraction: this.watchFraction,
      atRisk: shown,
      atRiskLeftOut: (totals?.atRisk ?? all.length) - shown.length,
      atRiskTotal: totals?.atRisk ?? all.length,
      trends,
      trendsLeftOut: Math.max(0, (totals?.trends ?? candidates.length) - trends.length),
      heat: this.heat.slice(0, heatCap),
      heatLeftOut: Math.max(0, (totals?.heat ?? this.heat.length) - heatCap),
      mids: totals?.mids ?? this.mids,
    };
  }
}
