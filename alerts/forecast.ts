// The chance of a breach after every write of the ratio table: each open month's series forecast against each level in
// force for it (rules/forecast.ts), kept in ratio_forecasts (store/forecast.ts). docs/ratios.md "The chance of a breach".
import type { Store } from '../store/db.ts';
import { HISTORY_DAYS, histories, keepForecasts, openRanges, openRows, seriesKey, stageDaily, staleForecasts, writeForecasts, type KeptForecast, type OpenRow } from '../store/forecast.ts';
import { inForce, rulesFor } from '../rules/rule-set.ts';
import { forecast, levelNeed, neededCount, priorMonthDays, remainingCount } from '../rules/forecast.ts';
import type { Rule, RuleSet } from '../rules/thresholds.ts';
import type { MidRange } from '../store/table-slices.ts';

/** A series whose pace and history reach this share of a level's count reads its daily history; one below, a flat one at its rate. */
const REACH = 0.2;

/** Days of the series' history before its month (from its first month with data). */
const daysBefore = (r: OpenRow) => Math.round((Date.parse(`${r.month}-01`) - Date.parse(r.first_day)) / 86_400_000);

/**
 * The series' daily rate before its month: its daily counts', unless they hold less than half what its monthly rows
 * count (the chargeback report not loaded for those days: the MID report's counts then), and whether the days are read.
 */
function rateBefore(r: OpenRow): { rate: number; daily: boolean } {
  const known = Math.min(HISTORY_DAYS, daysBefore(r));
  const daily = known > 0 ? r.history_total / known : 0;
  const monthly = r.past_days > 0 ? r.past_count / r.past_days : 0;
  return daily < 0.5 * monthly ? { rate: monthly, daily: false } : { rate: daily, daily: true };
}

/**
 * The levels in force for an open row, each rule as what the month needs. Which rules apply depends only on the series,
 * the month and the MID's own settings or group (none: every such MID alike), so `found` keeps them by those.
 */
function needsOf(rules: RuleSet, r: OpenRow, found: Map<string, Rule[]>) {
  const key = [rules.mids[r.mid] || rules.groups?.[r.mid] ? r.mid : '', r.network, r.program, r.metric, r.month].join('\u0000');
  let inForceRules = found.get(key);
  if (!inForceRules) {
    inForceRules = rulesFor(rules, r.mid).filter((x) => x.network === r.network && x.program === r.program && x.metric === r.metric && inForce(x, r.month));
    found.set(key, inForceRules);
  }
  return inForceRules.flatMap((rule) => { const n = levelNeed(rule, r); return n ? [{ rule, ...n }] : []; });
}

/** The row's denominator of its metric (to date, or the previous month's). */
const denOf = (r: OpenRow) => (r.metric === 'count' ? r.denominator_count : r.denominator_amount);

/** The denominator the closed month is expected to have: known, or the month to date's at its pace. */
function expectedDen(r: OpenRow): number | null {
  const den = denOf(r);
  return den === null ? null : r.den_prev ? den : den * (r.days_in_month / r.days_covered);
}

/** A month's transactions vary this much (coefficient of variation) when fewer than two closed months tell. */
const DEFAULT_CV = 0.15;

/** Forecasts of every open month, range by range of MIDs, each series against each level in force for it (rules of one level: the likelier). */
export async function* forecastOpenMonths(store: Store, rules: RuleSet): AsyncGenerator<KeptForecast[]> {
  const open = await openRanges(store);
  if (!open) return;
  // Range by range of MIDs: within the store's memory limit at any number of MIDs.
  const daily = await stageDaily(store, open.months);
  try {
    let rows = await openRows(store, open.months, open.ranges[0]);
    for (let i = 0; i < open.ranges.length; i++) {
      // The next range's rows are read while this one's are forecast, and are in before this one is yielded (one query at a time).
      let next: Promise<OpenRow[]> | undefined;
      const readNext = () => { if (i + 1 < open.ranges.length) next = openRows(store, open.months, open.ranges[i + 1]); };
      // (a failed range waits for that read, which must end before the staged days are dropped)
      const out = await forecastRange(store, rules, rows, open.ranges[i]!, readNext).catch(async (e: unknown) => { await next?.catch(() => undefined); throw e; });
      if (next) rows = await next;
      yield out;
    }
  } finally {
    await daily.drop();
  }
}

/** The range's forecasts of its open rows; `readNext` is called once its own queries are done, and nothing after it awaits. */
async function forecastRange(store: Store, rules: RuleSet, open: OpenRow[], range: MidRange, readNext: () => void): Promise<KeptForecast[]> {
  const found = new Map<string, Rule[]>();
  const rows = open.map((r) => ({ r, needs: needsOf(rules, r, found) })).filter((x) => x.needs.length);
  // Within reach: the pace to date or the history's rate reaches REACH of some level's count at the expected denominator.
  // The others' days are not used: their history is flat at its rate, which only widens a chance that stays near nil.
  const reach = (r: OpenRow) => Math.max(r.numerator_count * (r.days_in_month / r.days_covered), rateBefore(r).rate * r.days_in_month);
  const near = rows.filter(({ r, needs }) => {
    const t = expectedDen(r);
    return t !== null && rateBefore(r).daily && needs.some((n) => !n.blocked && reach(r) >= REACH * neededCount(n.need, t));
  });
  const hist = await histories(store, near.map((x) => x.r), range);
  readNext();
  const out: KeptForecast[] = [];
  for (const { r, needs } of rows) {
    const den = denOf(r);
    if (den === null) continue;
    const known = Math.min(HISTORY_DAYS, daysBefore(r));
    const days = hist.get(seriesKey(r));
    const input = {
      daysInMonth: r.days_in_month, daysElapsed: r.days_covered, firstWeekday: new Date(`${r.month}-01T00:00:00Z`).getUTCDay(),
      countToDate: r.numerator_count, history: days ?? (Array(known).fill(rateBefore(r).rate) as number[]),
      ...(days ? { monthDays: priorMonthDays(r.month) } : {}),
      denominator: r.den_prev ? { known: den } : { toDate: den, monthlyCv: r.monthly_cv ?? DEFAULT_CV },
    };
    const byLevel = new Map<string, KeptForecast>();
    const rest = remainingCount(input);
    for (const n of needs) {
      const f = forecast(input, n.need, rest);
      if (n.blocked) Object.assign(f, { chance: 0, paceDay: null });
      const lf: KeptForecast = {
        mid: r.mid, network: r.network, program: r.program, metric: r.metric, month: r.month, level: n.rule.level, rank: n.rule.rank, rule_id: n.rule.id,
        is_headline: false, days_covered: r.days_covered, days_in_month: r.days_in_month, count_to_date: r.numerator_count,
        needed_count: n.blocked ? null : neededCount(n.need, expectedDen(r)!), met_to_date: !n.blocked && r.numerator_count >= neededCount(n.need, den), ...f,
      };
      const had = byLevel.get(n.rule.level);
      if (!had || lf.chance > had.chance) byLevel.set(n.rule.level, lf);
    }
    const levels = [...byLevel.values()].sort((a, b) => a.rank - b.rank);
    // The headline: the highest level as likely as not, else the lowest.
    const likely = levels.filter((l) => l.chance >= 0.5);
    (likely.length ? likely[likely.length - 1]! : levels[0]!).is_headline = true;
    out.push(...levels);
  }
  return out;
}

/**
 * Forecasts every open month again when the ratio table was written since they were made, unless that write (`after`:
 * judged from a month on, replacing the write they are of) left every open month as it was; the rows written, or null.
 */
export async function refreshForecasts(store: Store, rules: RuleSet, now = new Date(), after?: { from: string; replaced: string; written: string }): Promise<number | null> {
  const mart = await staleForecasts(store);
  if (mart === null || (after?.written === mart && (await keepForecasts(store, after)))) return null;
  return writeForecasts(store, forecastOpenMonths(store, rules), mart, now);
}
