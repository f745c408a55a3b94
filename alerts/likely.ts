// The early warning (issue #39): a `likely` notice when an open month's chance of meeting a level (alerts/forecast.ts)
// first reaches the level's warn_at (thresholds file `forecast`), once per series, level and month.
import type { Store } from '../store/db.ts';
import { warningCandidates } from '../store/forecast.ts';
import type { Notice } from '../store/alerts.ts';
import { warnAt, type RuleSet } from '../rules/thresholds.ts';
import { noticeId } from './notice-text.ts';
import { rulesFor } from '../rules/rule-set.ts';
import { chancePct } from '../rules/forecast.ts';

const whole = (v: number | null) => (v === null ? '-' : Math.round(v).toLocaleString('en-US'));

/** The one-line text of a `likely` notice. */
export function likelyMessage(f: {
  mid: string; network: string; program: string; level: string; month: string; chance: number; count_to_date: number; days_covered: number;
  days_in_month: number; expected_count: number; low80_count: number; high80_count: number; needed_count: number | null; pace_day: number | null;
}): string {
  const pct = chancePct(f.chance);
  const need = f.needed_count === null ? '' : ` against ${whole(f.needed_count)} needed`;
  const pace = f.pace_day === null ? '' : `; at the pace to date it is reached on day ${f.pace_day}`;
  return `${f.mid} ${f.network} ${f.program}: LIKELY — a ${pct} % chance that ${f.month} ends at level ${f.level}: ${whole(f.count_to_date)} so far in `
    + `${f.days_covered} of ${f.days_in_month} days, ${whole(f.expected_count)} expected (80 %: ${whole(f.low80_count)}–${whole(f.high80_count)})${need}${pace}`;
}

/**
 * The early warnings: each kept forecast whose chance reached its level's warn_at, the month's figures not already meeting
 * it; fresh ones, and those recorded as history (a backfill's) now to be sent. `known`: notice id → notify, recorded so far.
 */
export async function likelyNotices(store: Pick<Store, 'all'>, rules: RuleSet, opts: { notifySince: string; now: string; known: Map<string, boolean> }): Promise<{ fresh: Notice[]; promoted: Notice[] }> {
  const rows = await warningCandidates(store);
  const out: Notice[] = [];
  const promoted: Notice[] = [];
  const notifyOn = rules.forecast?.notify ?? true;
  for (const r of rows) {
    const f = { ...r, chance: Number(r.chance), count_to_date: Number(r.count_to_date), expected_count: Number(r.expected_count), low80_count: Number(r.low80_count),
      high80_count: Number(r.high80_count), needed_count: r.needed_count === null ? null : Number(r.needed_count), pace_day: r.pace_day === null ? null : Number(r.pace_day),
      days_covered: Number(r.days_covered), days_in_month: Number(r.days_in_month) } as Parameters<typeof likelyMessage>[0] & Record<string, unknown>;
    if (f.chance < warnAt(rules, f)) continue;
    const id = noticeId('likely', f.mid, f.network, f.program, f.level, f.month);
    const notify = notifyOn && f.month >= opts.notifySince;
    const was = opts.known.get(id);
    if (was === true || (was === false && !notify)) continue;
    const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));
    const rule = rulesFor(rules, f.mid).find((x) => x.id === r.rule_id);
    (was === false ? promoted : out).push({
      notice_id: id, kind: 'likely', mid: f.mid, network: f.network, program: f.program, level: f.level, previous_level: null, month: f.month,
      metric: String(r.metric), rule_id: String(r.rule_id), comparison: rule?.comparison ?? null, ratio_threshold: rule?.ratio_threshold ?? null,
      numerator: num(r.numerator), denominator: num(r.denominator), denominator_month: (r.denominator_month as string | null) ?? null, ratio: num(r.ratio),
      ratio_pct: num(r.ratio) === null ? null : Number(r.ratio) * 100, ratio_bps: num(r.ratio) === null ? null : Number(r.ratio) * 10_000,
      is_projection: false, is_partial: true, notify, message: likelyMessage(f), created_at: opts.now,
    });
  }
  return { fresh: out, promoted };
}
