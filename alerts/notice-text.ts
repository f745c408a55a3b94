// A notice as it is recorded and sent: its id, and its one-line text with the judge's headroom and fee (alerts/notices.ts
// decides which notices there are; the notifiers send this text as it is).
import { createHash } from 'node:crypto';
import type { Notice, NoticeKind } from '../store/alerts.ts';
import type { JudgedMonth } from '../store/judged-months.ts';
import { headroomWords } from '../rules/headroom.ts';
import { feeWords } from '../rules/fees.ts';

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
export interface ProjectionBasis { days_covered: number | null; days_in_month: number | null }

/** The notice's one-line text; a projection's figures rounded, saying how it was projected: "projected to month end from
 * 17 of 30 days: 144 / 6,539 = 2.20 %" (`basis`: the projected row's coverage). */
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
    // Written with its forecast when it is made (alerts/likely.ts); this is what it says without one.
    case 'likely': return `${what}: LIKELY — ${n.month}${mtd} may end at level ${n.level}: ${fig}${thr}`;
    // Their text is written when they are made (alerts/pipeline-notices.ts); this is never asked for it.
    case 'pipeline_failed':
    case 'pipeline_recovered':
      return `${n.program} ${n.kind === 'pipeline_failed' ? 'failed' : 'recovered'}: ${n.level}`;
  }
}

export function noticeId(kind: NoticeKind, mid: string, network: string, program: string, level: string, month: string): string {
  const h = createHash('sha256').update([kind, mid, network, program, level, month].join('\u0000')).digest('hex');
  return `ntc_${h.slice(0, 32)}`;
}

/**
 * A level entered in a month another program's level supersedes (EFM over ECP: the judge's superseded_by):
 * the notice says that the network assesses the other one instead. The notice id stays that of the level.
 */
function supersededNote(kind: NoticeKind, l: JudgedMonth): string {
  if (!l.superseded_by || (kind !== 'reached' && kind !== 'escalated')) return '';
  const name = /^(ecm|hecm|efm)$/.test(l.superseded_by) ? l.superseded_by.toUpperCase() : l.superseded_by;
  return `; ${name} is met too this month, and ${l.network === 'mastercard' ? 'Mastercard' : 'the network'} assesses ${name} instead`;
}

/**
 * What a notice adds of headroom and fees (issue #28): a watch notice, how many more events reach the watched level; a
 * projected one, how many fewer would stay below it; a level reached, escalated or projected, its fee estimate.
 */
function headroomNote(kind: NoticeKind, l: JudgedMonth, level: string, rule: JudgedMonth['rule']): string {
  const row = l.row;
  if (!row || !rule || rule.level !== level || (kind !== 'watch' && kind !== 'reached' && kind !== 'escalated' && kind !== 'projected')) return '';
  const f = l.figures;
  const h = kind === 'watch'
    ? { headroom_count: f.watch_headroom, over_by_count: null, next_level: level, level: null }
    : { headroom_count: null, over_by_count: f.over_by_count, next_level: null, level };
  const words = kind === 'watch' || kind === 'projected'
    ? headroomWords({ program: l.program as never, month: l.month, is_projection: row.is_projection, is_partial: row.is_partial, ...h, headroom_basis: f.headroom_basis })
    : null;
  const fee = kind !== 'watch' && !l.superseded_by ? feeWords({ ...f, is_projection: kind === 'projected' }) : null;
  const all = [words, fee].filter(Boolean).join('; ');
  return all ? `; ${all}` : '';
}

export function build(kind: NoticeKind, l: JudgedMonth, level: string, previous: string | null, notify: boolean, now: string): Notice {
  // A watch notice is about the watched level's rule (the series is at no level).
  const rule = kind === 'watch' ? l.watchRule : l.rule;
  const row = l.row;
  const base = {
    kind, mid: l.mid, network: l.network, program: l.program, level, previous_level: previous, month: l.month,
    metric: row?.metric ?? null,
    rule_id: kind === 'resolved' ? null : rule?.id ?? null,
    comparison: kind === 'resolved' ? null : rule?.comparison ?? null,
    ratio_threshold: kind === 'resolved' ? null : rule?.ratio_threshold ?? null,
    numerator: row?.numerator ?? null,
    denominator: row?.denominator ?? null,
    denominator_month: row?.denominator_month ?? null,
    ratio: row?.ratio ?? null,
    ratio_pct: row?.ratio == null ? null : row.ratio * 100,
    ratio_bps: row?.ratio == null ? null : row.ratio * 10_000,
    is_projection: kind === 'projected',
    is_partial: l.is_partial,
  };
  return {
    // One watch notice per mid × network × program × month, whichever level's band it is in.
    notice_id: noticeId(kind, l.mid, l.network, l.program, kind === 'watch' ? '' : level, l.month),
    ...base,
    notify,
    message: noticeMessage(base, row) + supersededNote(kind, l) + (kind === 'unknown' ? `; ${l.missing_sources}` : '') + headroomNote(kind, l, level, rule),
    created_at: now,
  };
}
