// The report's figures, built from the explained ratio rows (whole MIDs at a time, as alerts/explain.ts
// forEachExplainedBatch hands them to `cbp ratios` too: issue #13's level, state, next level, closeness and
// reason of each row, under the rules configured) and the rules in force: the at-risk table, the trend series
// and the heat map. Pure: rows in, plain data out; what is kept per batch is small, so 1,000 MIDs × 36 months
// never sit in memory at once.
import type { ExplainedRatioRow, RatioRow, RatioState } from '../contract/ratios.ts';
import { addMonths } from '../lib/utc.ts';
import { inForce, rulesFor } from '../rules/evaluate.ts';
import type { Rule, RuleSet } from '../rules/thresholds.ts';
import type { TrendMonth, TrendSeries, TrendThreshold } from './trend.ts';

type ReportState = RatioState;
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
  numerator_complete: boolean;
  /** the run-rate projection to month end of an open month */
  projected_ratio: number | null;
  projected_closeness: number | null;
  projected_level: string | null;
}

export interface HeatRow {
  mid: string;
  /** per month of the report's months: the largest ratio ÷ entry threshold over the programs in force, or null */
  cells: Array<number | null>;
  /** which program gives each cell ("visa vamp"), or null */
  programs: Array<string | null>;
}

export interface RatioSection {
  month: string;
  /** the 13 months the trends and the heat map span, oldest first, ending with month */
  months: string[];
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
  month: string;
  rules: RuleSet;
  /** MIDs picked with --mid: every series of theirs gets a trend (up to trendCap) */
  picked?: string[];
  /** most trends drawn (default 20) */
  trendCap?: number;
  /** most heat-map rows (default 50) */
  heatCap?: number;
  /** most clear rows in the at-risk table (watch and level rows are always shown; default 30) */
  clearCap?: number;
}

const STATE_ORDER: Record<ReportState, number> = { level: 2, watch: 1, clear: 0 };

/** Sorts at-risk rows: levels reached first, then watched, then clear; within each, closest to the threshold first. */
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
      return t;
    }),
  };
}

/** Builds the ratio sections batch by batch: add() each batch of whole MIDs, then finish(). */
export class RatioSectionBuilder {
  readonly months: string[];
  private readonly atRisk: AtRiskRow[] = [];
  private readonly candidates: Array<{ row: AtRiskRow; series: TrendSeries }> = [];
  private readonly heat: HeatRow[] = [];
  private readonly picked: Set<string>;
  private mids = 0;

  constructor(private readonly opts: RatioSectionOptions) {
    this.months = Array.from({ length: 13 }, (_, i) => addMonths(opts.month, i - 12));
    this.picked = new Set(opts.picked ?? []);
  }

  /** One batch of explained ratio rows of whole MIDs, up to the report's month (earlier months are skipped). */
  add(rows: ExplainedRatioRow[]): void {
    const { month, rules } = this.opts;
    const first = this.months[0];
    const explained = rows.filter((r) => r.month >= first && r.month <= month);
    const bySeries = new Map<string, ExplainedRow[]>();
    const midSet = new Set<string>();
    for (const r of explained) {
      midSet.add(r.mid);
      const k = seriesKey(r);
      const l = bySeries.get(k);
      if (l) l.push(r);
      else bySeries.set(k, [r]);
    }
    const heat = new Map<string, HeatRow>();
    for (const series of bySeries.values()) {
      const { mid, network, program } = series[0];
      const midRules = rulesFor(rules, mid);
      // The heat map: ratio ÷ the entry (lowest) threshold in force, per observed row with rules.
      for (const r of series) {
        if (r.is_projection || r.state === null || r.ratio === null) continue;
        const entry = thresholdsIn(midRules, network, program, r.metric, r.month)[0];
        if (!entry || entry.ratio <= 0) continue;
        const i = this.months.indexOf(r.month);
        let h = heat.get(mid);
        if (!h) { h = { mid, cells: this.months.map(() => null), programs: this.months.map(() => null) }; heat.set(mid, h); }
        const v = r.ratio / entry.ratio;
        if (h.cells[i] === null || v > (h.cells[i] as number)) { h.cells[i] = v; h.programs[i] = `${network} ${program}`; }
      }
      // The at-risk row: the report month's observed row closest to its threshold.
      const now = series.filter((r) => r.month === month && !r.is_projection && r.state !== null);
      if (now.length === 0) continue;
      const best = now.reduce((a, b) => ((b.closeness ?? -1) > (a.closeness ?? -1) ? b : a));
      const proj = series.find((r) => r.month === month && r.is_projection && r.metric === best.metric) ?? null;
      const row: AtRiskRow = {
        mid, network, program, metric: best.metric, month,
        ratio: best.ratio, numerator: best.numerator, denominator: best.denominator, numerator_count: best.numerator_count,
        is_partial: best.is_partial, level: best.level, state: best.state as ReportState,
        next_level: best.next_level, next_threshold: best.next_threshold, closeness: best.closeness, reason: best.reason,
        numerator_complete: best.numerator_complete,
        projected_ratio: proj?.ratio ?? null, projected_closeness: proj?.closeness ?? null, projected_level: proj?.level ?? null,
      };
      this.atRisk.push(row);
      if (row.state !== 'clear' || this.picked.has(mid)) this.candidates.push({ row, series: this.trendOf(series, best.metric, midRules) });
    }
    for (const h of heat.values()) this.heat.push(h);
    this.mids += midSet.size;
  }

  private trendOf(series: ExplainedRow[], metric: string, midRules: Rule[]): TrendSeries {
    const { mid, network, program } = series[0];
    return trendSeriesOf(series, { mid, network, program, metric }, this.months, midRules);
  }

  finish(): RatioSection {
    const { trendCap = 20, heatCap = 50, clearCap = 30 } = this.opts;
    this.atRisk.sort(compareAtRisk);
    const flagged = this.atRisk.filter((r) => r.state !== 'clear' || this.picked.has(r.mid));
    const clear = this.atRisk.filter((r) => r.state === 'clear' && !this.picked.has(r.mid));
    const shown = [...flagged, ...clear.slice(0, Math.max(0, clearCap))].sort(compareAtRisk);
    this.candidates.sort((a, b) => compareAtRisk(a.row, b.row));
    const trends = this.candidates.slice(0, trendCap).map((c) => c.series);
    const peak = (h: HeatRow) => Math.max(-1, ...h.cells.map((c) => c ?? -1));
    const last = (h: HeatRow) => h.cells[h.cells.length - 1] ?? -1;
    this.heat.sort((a, b) => last(b) - last(a) || peak(b) - peak(a) || a.mid.localeCompare(b.mid));
    return {
      month: this.opts.month,
      months: this.months,
      atRisk: shown,
      atRiskLeftOut: this.atRisk.length - shown.length,
      atRiskTotal: this.atRisk.length,
      trends,
      trendsLeftOut: Math.max(0, this.candidates.length - trends.length),
      heat: this.heat.slice(0, heatCap),
      heatLeftOut: Math.max(0, this.heat.length - heatCap),
      mids: this.mids,
    };
  }
}
