// The early warning (issue #39): a `likely` notice when an open month's chance of meeting a level (alerts/forecast.ts)
// first reaches the level's warn_at (thresholds file `forecast`), once per series, level and month.
import type { Store } from '../store/db.ts';
import { openRanges, warningCandidates, type WarningCandidate } from '../store/forecast.ts';
import type { Notice } from '../store/alerts.ts';
import { warnAt, type RuleSet } from '../rules/thresholds.ts';
import { noticeId } from './notice-text.ts';
import { rulesFor } from '../rules/rule-set.ts';
import { chancePct } from '../rules/forecast.ts';

const whole = (v: number | null) => (v === null ? '-' : Math.round(v).toLocaleString('en-US'));

/** The one-line text of a `likely` notice. */
export function likelyMessage(f: WarningCandidate): string {
  const need = f.needed_count === null ? '' : ` against ${whole(f.needed_count)} needed`;
  const pace = f.pace_day === null ? '' : `; at the pace to date it is reached on day ${f.pace_day}`;
  return `${f.mid} ${f.network} ${f.program}: LIKELY — a ${chancePct(f.chance)} % chance that ${f.month} ends at level ${f.level}: ${whole(f.count_to_date)} so far in `
    + `${f.days_covered} of ${f.days_in_month} days, ${whole(f.expected_count)} expected (80 %: ${whole(f.low80_count)}–${whole(f.high80_count)})${need}${pace}`;
}

/**
 * The early warnings: each kept forecast whose chance reached its level's warn_at, the month's figures not already meeting
 * it; fresh ones, and those recorded as history (a backfill's) now to be sent. `known`: notice id → notify, recorded so far.
 */
export async function likelyNotices(store: Store, rules: RuleSet, opts: { notifySince: string; now: string; known: Map<string, boolean> }): Promise<{ fresh: Notice[]; promoted: Notice[] }> {
  const out: Notice[] = [];
  const promoted: Notice[] = [];
  const notifyOn = rules.forecast?.notify ?? true;
  // Range by range of MIDs, as the forecasts were made: within the store's memory limit at any number of MIDs.
  const open = await openRanges(store);
  if (open) for (const range of open.ranges) for (const f of await warningCandidates(store, open.months, range)) {
    if (f.chance < warnAt(rules, f)) continue;
    const id = noticeId('likely', f.mid, f.network, f.program, f.level, f.month);
    const notify = notifyOn && f.month >= opts.notifySince;
    const was = opts.known.get(id);
    if (was === true || (was === false && !notify)) continue;
    const rule = rulesFor(rules, f.mid).find((x) => x.id === f.rule_id);
    (was === false ? promoted : out).push({
      notice_id: id, kind: 'likely', mid: f.mid, network: f.network, program: f.program, level: f.level, previous_level: null, month: f.month,
      metric: f.metric, rule_id: f.rule_id, comparison: rule?.comparison ?? null, ratio_threshold: rule?.ratio_threshold ?? null,
      numerator: f.numerator, denominator: f.denominator, denominator_month: f.denominator_month, ratio: f.ratio,
      ratio_pct: f.ratio === null ? null : f.ratio * 100, ratio_bps: f.ratio === null ? null : f.ratio * 10_000,
      is_projection: false, is_partial: true, notify, message: likelyMessage(f), created_at: opts.now,
    });
  }
  return { fresh: out, promoted };
}
