// The chance that a month to date ends at a level: the month's remaining count as a negative binomial (a Poisson
// rate known only as well as the data say, days burstier than Poisson, a weekday pattern), the denominator known
// (previous-month programs) or itself forecast. docs/ratios.md "The chance of a breach" states the model.
import { compare } from './rule-set.ts';
import type { Rule } from './thresholds.ts';
import type { MonthToDate } from '../contract/ratios.ts';

export type { MonthToDate } from '../contract/ratios.ts';

/** A count's distribution: negative binomial by mean and dispersion (variance = mean + phi × mean²; phi 0: Poisson). */
export interface CountDist {
  mean: number;
  phi: number;
}

/** The probabilities P(X = 0), P(X = 1), … of `d`, one at a time. */
function* pmfs(d: CountDist): Generator<number> {
  if (d.phi <= 1e-12) {
    let pmf = Math.exp(-d.mean);
    for (let x = 0; ; x++) {
      yield pmf;
      pmf *= d.mean / (x + 1);
    }
  }
  const r = 1 / d.phi;
  const p = r / (r + d.mean);
  let pmf = Math.exp(r * Math.log(p));
  for (let x = 0; ; x++) {
    yield pmf;
    pmf *= ((x + r) / (x + 1)) * (1 - p);
  }
}

/** Whether P(X = 0) underflows: a count that large is read as normal (its mean and variance; continuity-corrected). */
const large = (d: CountDist) => (d.phi <= 1e-12 ? d.mean : Math.log1p(d.mean * d.phi) / d.phi) > 700;
const sd = (d: CountDist) => Math.sqrt(d.mean + d.phi * d.mean * d.mean);

/** The standard normal's P(Z ≤ z) (Abramowitz and Stegun 7.1.26, error < 1.5e-7). */
function normalCdf(z: number): number {
  const t = 1 / (1 + 0.3275911 * Math.abs(z) / Math.SQRT2);
  const erf = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-(z * z) / 2);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

// Lanczos' coefficients (g 7, 9 terms): ln Γ to about 15 digits.
const LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];

/** ln Γ(x) for x > 0. */
function lnGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const y = x - 1;
  let a = LANCZOS[0]!;
  const t = y + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i]! / (y + i);
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(a);
}

/** P(X ≥ k) summed from P(X = k) upwards, for k above the mean (the terms fall from there on). */
function upperTail(d: CountDist, k: number): number {
  const poisson = d.phi <= 1e-12;
  const r = 1 / d.phi;
  const q = poisson ? 0 : d.mean / (r + d.mean);
  let pmf = poisson
    ? Math.exp(k * Math.log(d.mean) - d.mean - lnGamma(k + 1))
    : Math.exp(lnGamma(k + r) - lnGamma(r) - lnGamma(k + 1) + r * Math.log(r / (r + d.mean)) + k * Math.log(q));
  let sum = 0;
  for (let x = k; pmf > 1e-15 * sum && x < k + 1e6; x++) {
    sum += pmf;
    pmf *= poisson ? d.mean / (x + 1) : ((x + r) / (x + 1)) * q;
  }
  return sum;
}

/** P(X ≥ k) for X of `d` (k ≤ 0: 1). */
export function tailAtLeast(d: CountDist, k: number): number {
  if (k <= 0) return 1;
  if (d.mean <= 0) return 0;
  if (large(d)) return 1 - normalCdf((k - 0.5 - d.mean) / sd(d));
  if (k > d.mean + 1) return Math.min(1, Math.max(0, upperTail(d, k)));
  let below = 0;
  let x = 0;
  for (const pmf of pmfs(d)) {
    if (x++ >= k) break;
    below += pmf;
  }
  return Math.min(1, Math.max(0, 1 - below));
}

/** The smallest x with P(X ≤ x) ≥ q. */
export function quantile(d: CountDist, q: number): number {
  if (d.mean <= 0) return 0;
  if (large(d)) {
    let lo = 0;
    let hi = Math.ceil(d.mean + 10 * sd(d));
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      if (1 - tailAtLeast(d, mid + 1) >= q) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
  let cdf = 0;
  let x = 0;
  for (const pmf of pmfs(d)) {
    cdf += pmf;
    if (cdf >= q || x >= 1e7) return x;
    x++;
  }
  return x;
}

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

/** Each weekday's share of a day's count (mean 1), from the history, shrunk towards 1 where it holds few events. */
export function weekdayWeights(history: number[], firstWeekday: number): number[] {
  const sum = Array(7).fill(0) as number[];
  const days = Array(7).fill(0) as number[];
  history.forEach((c, i) => {
    const wd = weekdayOf(firstWeekday, i - history.length);
    sum[wd] += c;
    days[wd] += 1;
  });
  const mean = history.reduce((a, b) => a + b, 0) / Math.max(1, history.length);
  if (mean <= 0) return Array(7).fill(1) as number[];
  const shrink = 2 * mean;
  const raw = sum.map((s, j) => (s + shrink) / (days[j]! * mean + shrink));
  const avg = raw.reduce((a, b) => a + b, 0) / 7;
  return raw.map((w) => w / avg);
}

/** The history's last whole 28-day blocks (four of each weekday), oldest first. */
function blocks(history: number[]): number[][] {
  const out: number[][] = [];
  for (let end = history.length; end - BLOCK >= 0; end -= BLOCK) out.unshift(history.slice(end - BLOCK, end));
  return out;
}

/** The day-level dispersion beyond Poisson, against each block's own rate and the weekday pattern (0 when none shows). */
export function dayDispersion(history: number[], weights: number[], firstWeekday: number): number {
  let excess = 0;
  let sq = 0;
  const bs = blocks(history);
  bs.forEach((b, j) => {
    const mean = b.reduce((x, y) => x + y, 0) / BLOCK;
    b.forEach((c, i) => {
      const mu = mean * weights[weekdayOf(firstWeekday, (j - bs.length) * BLOCK + i)]!;
      excess += (c - mu) ** 2 - mu;
      sq += mu * mu;
    });
  });
  return sq > 0 ? Math.max(0, excess / sq) : 0;
}

/** How much a month's rate differs from the months before it, as a squared coefficient of variation beyond the days' own noise. */
export function monthDrift(history: number[], phiDay: number): number {
  const totals = blocks(history).map((b) => b.reduce((x, y) => x + y, 0));
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

/** The month's remaining count: its distribution over the days left. */
export function remainingCount(input: ForecastInput): CountDist {
  const w = weekdayWeights(input.history, input.firstWeekday);
  const phiDay = dayDispersion(input.history, w, input.firstWeekday);
  const hMean = input.history.reduce((a, b) => a + b, 0) / Math.max(1, input.history.length);
  const weightTo = (from: number, to: number) => { let s = 0; for (let d = from; d < to; d++) s += w[weekdayOf(input.firstWeekday, d)]!; return s; };
  const elapsedW = weightTo(0, input.daysElapsed);
  const left = Array.from({ length: input.daysInMonth - input.daysElapsed }, (_, i) => w[weekdayOf(input.firstWeekday, input.daysElapsed + i)]!);
  const W = left.reduce((a, b) => a + b, 0);
  const W2 = left.reduce((a, b) => a + b * b, 0);
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
