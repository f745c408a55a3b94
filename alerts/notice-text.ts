// A notice's one-line text (alerts/notices.ts builds the notices; the notifiers send this text as it is).
import type { Notice } from '../store/alerts.ts';

function pct(r: number | null): string {
  return r === null ? 'no ratio' : `${(r * 100).toFixed(3)} %`;
}

/** A whole number with thousands separators: 143.93 is "144", 6539 is "6,539". */
function whole(v: number | null): string {
  return v === null || !Number.isFinite(v) ? '-' : Math.round(v).toLocaleString('en-US');
}

/**
 * A percentage to 2 decimals ("2.20 %"), or as many more (up to 6) as it takes not to read as equal to the
 * threshold it is set against when it is not: 1.004 % against "> 1 %" is "1.004 %", not "1.00 %".
 */
function pctNear(r: number | null, threshold: number | null): string {
  if (r === null) return 'no ratio';
  let d = 2;
  while (d < 6 && threshold !== null && r !== threshold && (r * 100).toFixed(d) === (threshold * 100).toFixed(d)) d++;
  return `${(r * 100).toFixed(d)} %`;
}

/** How a projection was made, from its row's coverage: month-to-date figures over days_covered of days_in_month days. */
export interface ProjectionBasis {
  days_covered: number | null;
  days_in_month: number | null;
}

/**
 * The notice's one-line text. A projection's figures are rounded (whole numbers, the ratio to 2 decimals) and
 * it says how it was projected: "projected to month end from 17 of 30 days: 144 / 6,539 = 2.20 %" (`basis`:
 * the projected row's coverage; the numerator, and a same-month denominator, are the month-to-date ones ×
 * days_in_month / days_covered).
 */
export function noticeMessage(
  n: Pick<Notice, 'kind' | 'mid' | 'network' | 'program' | 'level' | 'previous_level' | 'month' | 'ratio' | 'numerator' | 'denominator' | 'denominator_month' | 'comparison' | 'ratio_threshold' | 'is_partial'>,
  basis?: ProjectionBasis | null,
): string {
  const what = `${n.mid} ${n.network} ${n.program}`;
  const denMonth = n.denominator_month && n.denominator_month !== n.month ? ` of ${n.denominator_month}` : '';
  const fig = `${pct(n.ratio)} (${n.numerator ?? '-'} / ${n.denominator ?? '-'}${denMonth})`;
  const thr = n.ratio_threshold === null ? '' : `, threshold ${n.comparison ?? '>='} ${pct(n.ratio_threshold)}`;
  const mtd = n.is_partial ? ' month to date' : '';
  switch (n.kind) {
    case 'reached': return `${what}: level ${n.level} reached in ${n.month}${mtd}: ${fig}${thr}`;
    case 'escalated': return `${what}: escalated from ${n.previous_level} to ${n.level} in ${n.month}${mtd}: ${fig}${thr}`;
    case 'resolved': return `${what}: level ${n.level} left in ${n.month}${n.previous_level ? ` (now ${n.previous_level})` : ''}: ${fig}`;
    case 'watch': return `${what}: WATCH — ${n.month}${mtd} is in the watch band of level ${n.level}: ${fig}${thr}`;
    case 'unknown': {
      const held = n.previous_level ? `level ${n.level} is held until it can` : `it was in the watch band of level ${n.level}`;
      return `${what}: UNKNOWN — ${n.month}${mtd} cannot be judged, ${held}: ${fig}${thr}`;
    }
    // alerts/due.ts writes its own text; this is what a due notice says without its case
    case 'due': return `${n.mid}: representment ${n.level === 'overdue' ? 'overdue' : 'due soon'} (${n.month})`;
    case 'projected': {
      const dc = basis?.days_covered ?? null;
      const dim = basis?.days_in_month ?? null;
      const how = dc !== null && dim !== null && dc > 0 ? `projected to month end from ${dc} of ${dim} days` : 'projected to month end from the month-to-date run rate';
      const figures = `${whole(n.numerator)} / ${whole(n.denominator)}${denMonth} = ${pctNear(n.ratio, n.ratio_threshold)}`;
      const threshold = n.ratio_threshold === null ? '' : `, threshold ${n.comparison ?? '>='} ${pctNear(n.ratio_threshold, null)}`;
      return `${what}: PROJECTION — at the current run rate ${n.month} would end at level ${n.level}: ${how}: ${figures}${threshold}`;
    }
    // Their text is written when they are made (alerts/pipeline-notices.ts); this is never asked for it.
    case 'pipeline_failed':
    case 'pipeline_recovered':
      return `${n.program} ${n.kind === 'pipeline_failed' ? 'failed' : 'recovered'}: ${n.level}`;
  }
}

