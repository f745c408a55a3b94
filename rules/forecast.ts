// The chance that a month to date ends at a level: the remaining count negative binomial, or binomial for months steadier
// than Poisson; the denominator known or forecast. docs/ratios.md "The chance of a breach" states the model.
import { compare } from './rule-set.ts';
import { binomialDist, quantile, tailAtLeast, type CountDist } from './count-dist.ts';
import type { Rule } from './thresholds.ts';
import type { MonthToDate } from '../contract/ratios.ts';

export type { MonthToDate } from '../contract/ratios.ts';

/** A month's figures to date and the history a series' forecast reads. */
export interface ForecastInput {
  daysInMonth: number;
  /** days of the month the figures cover, from the 1st */
  daysElapsed: number;
  /** weekday of the month's 1st (0 Sunday … 6 Saturday) */
  firstWeekday: number;
  countToDate: number;
  /** the series' daily counts of recent days before this month, oldest first; the last is the month's day before the 1st */
  history: number[];
  /** the lengths of the calendar months before this one, newest first, when history holds the series' own daily counts */
  monthDays?: number[];
  /** the denominator: known (a previous month's transactions), or this month's to date with how much months vary */
  denominator: { known: number } | { toDate: number; monthlyCv: number };
}

/** What a level needs of the closed month: ratio against its threshold, and a count at least `minCount`. */
export interface LevelNeed {
  threshold: number;
  comparison: '>=' | '>';
  minCount?: number;
  /** what one counted event adds to the numerator (an amount ratio: the amount per event; default 1) */
  unit?: number;
}

export interface Forecast {
  /** the month's expected count, and its 80 % interval */
  expected: number;
  low80: number;
  high80: number;
  /** the chance the closed month meets the level */
  chance: number;
  /** the day of the month on which the pace to date reaches the level's count; null: not this month */
  paceDay: number | null;
}

/** Blocks of history compared for drift: four weeks, so that each holds every weekday alike. */
const BLOCK = 28;
/** A month's rate's squared coefficient of variation when the history is too short to tell (30 %), and its floor (5 %). */
const DEFAULT_DRIFT = 0.09;
const MIN_DRIFT = 0.0025;
const weekdayOf = (first: number, dayIndex: number) => (((first + dayIndex) % 7) + 7) % 7;
const nextWeekday = (wd: number) => (wd === 6 ? 0 : wd + 1);

/** Each weekday's share of a day's count (mean 1), from the history, shrunk towards 1 where it holds few events. */
export function weekdayWeights(history: number[], firstWeekday: number): number[] {
  const sum = [0, 0, 0, 0, 0, 0, 0];
  const days = [0, 0, 0, 0, 0, 0, 0];
  const n = history.length;
  let total = 0;
  // Plain loops, here and below: a nightly reads every open series' history (tens of thousands).
  for (let i = 0, wd = weekdayOf(firstWeekday, -n); i < n; i++, wd = nextWeekday(wd)) {
    sum[wd]! += history[i]!;
    days[wd]! += 1;
    total += history[i]!;
  }
  const mean = total / Math.max(1, n);
  if (mean <= 0) return [1, 1, 1, 1, 1, 1, 1];
  const shrink = 2 * mean;
  const raw = sum.map((s, j) => (s + shrink) / (days[j]! * mean + shrink));
  const avg = raw.reduce((a, b) => a + b, 0) / 7;
  return raw.map((w) => w / avg);
}

/** The sums of the history's last whole 28-day blocks (four of each weekday), oldest first; block j starts at start + j × BLOCK. */
function blockSums(history: number[]): { start: number; sums: number[] } {
  const nb = Math.floor(history.length / BLOCK);
  const start = history.length - nb * BLOCK;
  const sums: number[] = [];
  for (let j = 0; j < nb; j++) {
    let t = 0;
    for (let i = start + j * BLOCK; i < start + (j + 1) * BLOCK; i++) t += history[i]!;
    sums.push(t);
  }
  return { start, sums };
}

/** The day-level dispersion beyond Poisson, against each block's own rate and the weekday pattern (0 when none shows). */
export function dayDispersion(history: number[], weights: number[], firstWeekday: number): number {
  let excess = 0;
  let sq = 0;
  const { start, sums } = blockSums(history);
  for (let j = 0; j < sums.length; j++) {
    const mean = sums[j]! / BLOCK;
    for (let i = 0, wd = weekdayOf(firstWeekday, (j - sums.length) * BLOCK); i < BLOCK; i++, wd = nextWeekday(wd)) {
      const c = history[start + j * BLOCK + i]!;
      const mu = mean * weights[wd]!;
      excess += (c - mu) ** 2 - mu;
      sq += mu * mu;
    }
  }
  return sq > 0 ? Math.max(0, excess / sq) : 0;
}

/** How much a month's rate differs from the months before it, as a squared coefficient of variation beyond the days' own noise. */
export function monthDrift(history: number[], phiDay: number): number {
  const totals = blockSums(history).sums;
  if (totals.length < 3) return DEFAULT_DRIFT;
  const mean = totals.reduce((x, y) => x + y, 0) / totals.length;
  if (mean <= 0) return DEFAULT_DRIFT;
  const variance = totals.reduce((x, y) => x + (y - mean) ** 2, 0) / (totals.length - 1);
  const noise = mean + (phiDay * mean * mean) / BLOCK;
  return Math.max(MIN_DRIFT, (variance - noise) / (mean * mean));
}

/**
 * A rule as what the closed month needs: amounts (an amount ratio, an amount condition) as counts at the month's amount
 * per event to date; conditions on transactions read at month end's pace. null: it cannot be told (amounts with no
 * event yet); blocked: a transactions condition the month does not meet.
 */
export function levelNeed(rule: Pick<Rule, 'ratio_threshold' | 'comparison' | 'metric' | 'conditions'>, m: MonthToDate): { need: LevelNeed; blocked: boolean } | null {
  const perEvent = m.numerator_count > 0 ? m.numerator_amount / m.numerator_count : null;
  const pace = m.days_in_month / Math.max(1, m.days_covered);
  const atLeast = (v: number, cmp: string) => (cmp === '>' ? Math.floor(v) + 1 : Math.ceil(v));
  let minCount = 0;
  let blocked = false;
  for (const c of rule.conditions) {
    if (c.field === 'numerator_count') minCount = Math.max(minCount, atLeast(c.value, c.comparison));
    else if (c.field === 'numerator_amount') {
      if (perEvent === null || perEvent <= 0) return null;
      minCount = Math.max(minCount, atLeast(c.value / perEvent, c.comparison));
    } else {
      const v = m[c.field];
      const atEnd = v === null ? null : c.field.startsWith('denominator') && m.den_prev ? v : v * pace;
      if (atEnd === null || !compare(atEnd, c.comparison, c.value)) blocked = true;
    }
  }
  if (rule.metric === 'amount' && (perEvent === null || perEvent <= 0)) return null;
  return { need: { threshold: rule.ratio_threshold, comparison: rule.comparison, minCount, unit: rule.metric === 'amount' ? perEvent! : 1 }, blocked };
}

/** The count the closed month needs for the level at denominator t. */
export function neededCount(need: LevelNeed, t: number): number {
  const x = Math.round((need.threshold * t * 1e9) / (need.unit ?? 1)) / 1e9;
  const byRatio = need.comparison === '>=' ? Math.ceil(x) : Math.floor(x) + 1;
  return Math.max(need.minCount ?? 0, byRatio, 1);
}

// Gauss–Hermite nodes and weights (probabilists', 7 points): a normal denominator integrated out.
const GH = [
  [-3.750439717725742, 0.000548268855972], [-2.366759410734541, 0.030757123967586], [-1.154405394739968, 0.240123178605013],
  [0, 0.457142857142857], [1.154405394739968, 0.240123178605013], [2.366759410734541, 0.030757123967586], [3.750439717725742, 0.000548268855972],
] as const;

/** A χ² variable's 5 % quantile by degrees of freedom (up to 4: five whole months fit in HISTORY_DAYS). */
const CHI2_LOW = [0, 0.0039, 0.103, 0.352, 0.711];
/** The most calendar months a steady reading compares, and the fewest. */
const STEADY_MONTHS = CHI2_LOW.length;
const MIN_MONTHS = 3;
/** The least dispersion a steady month is read with (its total's variance over its mean). */
const MIN_STEADY = 0.02;
/** A month to date further than this many standard deviations (and one event) from the steady months' is not steady. */
const STEADY_SD = 2;

/**
 * Months whose totals vary less than Poisson counts (Pearson below χ²'s 5 % quantile): the month's total binomial of
 * their dispersion, the days left its unseen part (binomial thinning). null: not steady, or the month not so.
 */
function steadyMonth(input: ForecastInput, weightTo: (from: number, to: number) => number, elapsedW: number, W: number): CountDist | null {
  const h = input.history;
  const months: Array<{ total: number; weight: number }> = [];
  let end = h.length;
  for (const len of (input.monthDays ?? []).slice(0, STEADY_MONTHS)) {
    if (!(len > 0) || end - len < 0) break;
    // (history's day i is day i − h.length of this month)
    months.push({ total: h.slice(end - len, end).reduce((a, b) => a + b, 0), weight: weightTo(end - len - h.length, end - h.length) });
    end -= len;
  }
  const rate = months.reduce((a, m) => a + m.total, 0) / months.reduce((a, m) => a + m.weight, 0);
  if (months.length < MIN_MONTHS || !(rate > 0)) return null;
  const pearson = months.reduce((a, m) => a + (m.total - rate * m.weight) ** 2 / (rate * m.weight), 0);
  const chi2 = CHI2_LOW[months.length - 1]!;
  if (!(pearson < chi2)) return null;
  const mean = rate * (elapsedW + W);
  const p = 1 - Math.max(MIN_STEADY, pearson / (months.length - 1));
  const f = elapsedW / (elapsedW + W);
  const seen = mean * f;
  const trials = mean / p - input.countToDate;
  if (Math.abs(input.countToDate - seen) > STEADY_SD * Math.sqrt(seen * (1 - p * f)) + 1) return null;
  // A month to date at the steady total with days still to come is not steady either.
  if (trials < 1 && W > 0) return null;
  return binomialDist(trials, (p * (1 - f)) / (1 - p * f));
}

/** The lengths of the calendar months before a YYYY-MM month that a steady reading compares, newest first (ForecastInput.monthDays). */
export function priorMonthDays(month: string): number[] {
  const [y, m] = month.split('-').map(Number);
  return Array.from({ length: STEADY_MONTHS }, (_, i) => new Date(Date.UTC(y!, m! - 1 - i, 0)).getUTCDate());
}

/** The month's remaining count: its distribution over the days left. */
export function remainingCount(input: ForecastInput): CountDist {
  const w = weekdayWeights(input.history, input.firstWeekday);
  const phiDay = dayDispersion(input.history, w, input.firstWeekday);
  let hSum = 0;
  for (const c of input.history) hSum += c;
  const hMean = hSum / Math.max(1, input.history.length);
  const weightTo = (from: number, to: number) => { let s = 0; for (let d = from; d < to; d++) s += w[weekdayOf(input.firstWeekday, d)]!; return s; };
  const elapsedW = weightTo(0, input.daysElapsed);
  // The days left's weights summed, and their squares.
  let W = 0;
  let W2 = 0;
  for (let d = input.daysElapsed; d < input.daysInMonth; d++) {
    const x = w[weekdayOf(input.firstWeekday, d)]!;
    W += x;
    W2 += x * x;
  }
  const steady = steadyMonth(input, weightTo, elapsedW, W);
  if (steady) return steady;
  // The rate per unit of weekday weight: Gamma(a, b). Before the month: the history's rate, as uncertain as months
  // differ (drift). Then the month's own days, each worth less the burstier days are.
  const drift = monthDrift(input.history, phiDay);
  const damp = 1 + phiDay * hMean;
  const a0 = hMean > 0 ? 1 / drift : 0.5;
  const b0 = hMean > 0 ? a0 / hMean : 0;
  const a = a0 + input.countToDate / damp;
  const b = b0 + elapsedW / damp;
  const mean = (a / b) * W;
  if (mean <= 0) return { mean: 0, phi: 0 };
  const variance = mean + (phiDay * (a * (a + 1)) / (b * b)) * W2 + (W * W * a) / (b * b);
  return { mean, phi: Math.max(0, (variance - mean) / (mean * mean)) };
}

/** The forecast of a month to date against one level (`rest`: its remainingCount, when several levels share it). */
export function forecast(input: ForecastInput, need: LevelNeed, rest = remainingCount(input)): Forecast {
  const c = input.countToDate;
  const den = input.denominator;
  const nodes = 'known' in den
    ? [{ t: den.known, p: 1 }]
    : GH.map(([z, p]) => {
      const pace = den.toDate * (input.daysInMonth / Math.max(1, input.daysElapsed));
      const sd = pace * den.monthlyCv * (1 - input.daysElapsed / input.daysInMonth);
      return { t: Math.max(den.toDate, pace + z * sd), p };
    });
  const chance = nodes.reduce((s, n) => s + n.p * tailAtLeast(rest, neededCount(need, n.t) - c), 0);
  const expectedT = 'known' in den ? den.known : den.toDate * (input.daysInMonth / Math.max(1, input.daysElapsed));
  const k = neededCount(need, expectedT);
  const pace = c / Math.max(1, input.daysElapsed);
  const paceDay = pace > 0 && k / pace <= input.daysInMonth ? Math.max(input.daysElapsed, Math.ceil(k / pace)) : null;
  return { expected: c + rest.mean, low80: c + quantile(rest, 0.1), high80: c + quantile(rest, 0.9), chance: Math.min(1, Math.max(0, chance)), paceDay };
}

/** A chance as people read it: "94", "<1", ">99" (percent, without the sign). */
export function chancePct(c: number): string {
  return c < 0.005 ? '<1' : c > 0.995 ? '>99' : String(Math.round(c * 100));
}

/** An open month's chance in words: "94 % chance of ECM (115 expected, 80 %: 102–128; the pace reaches it on day 28)". */
export function chanceWords(r: { chance: number | null; chance_level: string | null; expected_count: number | null; expected_low80: number | null; expected_high80: number | null; pace_day: number | null }): string | null {
  if (r.chance === null || r.chance_level === null) return null;
  const n = (v: number | null) => (v === null ? '–' : Math.round(v).toLocaleString('en-US'));
  return `${chancePct(r.chance)} % chance of ${r.chance_level} (${n(r.expected_count)} expected, 80 %: ${n(r.expected_low80)}–${n(r.expected_high80)}`
    + `${r.pace_day === null ? '' : `; the pace reaches it on day ${r.pace_day}`})`;
}
