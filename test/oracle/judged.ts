// The oracle's judged months (what sql/views/45_ratio_notices.sql gives the notices): rows judged in JavaScript, each
// month with the rule and row it is told by and the notice's headroom, over-by and fee. For tests of alerts/notices.ts.
import type { RatioRow } from '../../contract/ratios.ts';
import type { RuleSet, Rule } from '../../rules/thresholds.ts';
import type { JudgedMonth, TellingRule } from '../../store/judged-months.ts';
import { judgeBatch, type BatchJudgement } from '../../alerts/notices.ts';
import type { RecordedState, Notice } from '../../store/alerts.ts';
import { evaluateRows, withGroups, type MonthLevel } from './evaluate.ts';
import { evaluateProjections } from './projection.ts';
import { headroomBasis, headroomCount, overByCount } from './headroom.ts';
import { feeEstimate } from './fees.ts';

const telling = (r: Rule | null | undefined): TellingRule | null =>
  r ? { id: r.id, level: r.level, metric: r.metric, comparison: r.comparison, ratio_threshold: r.ratio_threshold } : null;

function judgedOf(l: MonthLevel, set: RuleSet): JudgedMonth {
  const row = l.row;
  const watched = l.watch ? l.streaks.find((s) => s.level === l.watch)?.live[0] ?? null : null;
  const fee = row && l.rule ? feeEstimate(set, row, l.rule) : null;
  return {
    mid: l.mid, network: l.network, program: l.program, month: l.month, level: l.level, rank: l.rank, met: l.met, watch: l.watch,
    superseded_by: l.superseded_by, is_partial: l.is_partial, is_projection: l.is_projection, missing_sources: l.missing_sources ?? null,
    row: row ? {
      metric: row.metric, numerator: row.numerator, denominator: row.denominator, denominator_month: row.denominator_month, ratio: row.ratio,
      days_covered: row.days_covered, days_in_month: row.days_in_month, is_projection: row.is_projection, is_partial: row.is_partial,
    } : null,
    rule: telling(l.rule), watchRule: telling(watched),
    figures: {
      watch_headroom: row && watched ? headroomCount(row, watched) : null,
      over_by_count: row && l.rule ? overByCount(row, l.rule) : null,
      headroom_basis: row ? headroomBasis(row).basis : null,
      fee_estimate: fee?.fee_estimate ?? null, fee_currency: fee?.fee_currency ?? null, fee_basis: fee?.fee_basis ?? null,
    },
  };
}

/** Rows judged by the oracle: every month of every series, and the projected months. */
export function oracleMonths(rows: RatioRow[], set: RuleSet): { levels: JudgedMonth[]; projections: JudgedMonth[] } {
  return {
    levels: evaluateRows(rows, set).map((l) => judgedOf(l, set)),
    projections: evaluateProjections(rows, set).map((l) => judgedOf(l, set)),
  };
}

/** judgeBatch over rows judged by the oracle (what the tests of the notices' rules feed it). */
export function judgeRows(
  rows: RatioRow[], recorded: RecordedState[],
  opts: { rules: RuleSet; notifySince: string; now: string; known: ReadonlyMap<string, boolean>; fromMonth?: string | null; prior?: Notice[] },
): BatchJudgement {
  const { levels, projections } = oracleMonths(rows, opts.rules);
  return judgeBatch(levels, projections, recorded, opts);
}
