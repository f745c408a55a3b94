// The chance of a breach (rules/forecast.ts) on cases computed by hand, to three decimals.
import { describe, expect, it } from 'vitest';
import { dayDispersion, forecast, levelNeed, neededCount, priorMonthDays, remainingCount, weekdayWeights, type ForecastInput } from '../rules/forecast.ts';
import { binomialDist, quantile, tailAtLeast } from '../rules/count-dist.ts';

const at3 = (x: number) => Math.round(x * 1000) / 1000;

describe('the count distributions', () => {
  it('gives the Poisson and negative binomial tails as computed by hand', () => {
    // P(X ≥ 15), X ~ Poisson(10): 1 − Σ_{x<15} e^−10 10^x / x! = 0.083
    expect(at3(tailAtLeast({ mean: 10, phi: 0 }, 15))).toBe(0.083);
    // X ~ NB(r = 10, p = 1/2), mean 10, variance 20 (phi 0.1): 1 − Σ_{x<15} C(x+9, x) / 2^(10+x) = 0.154
    expect(at3(tailAtLeast({ mean: 10, phi: 0.1 }, 15))).toBe(0.154);
    expect(tailAtLeast({ mean: 10, phi: 0 }, 0)).toBe(1);
    expect(tailAtLeast({ mean: 0, phi: 0 }, 1)).toBe(0);
    // A count too large to sum term by term is read as normal: Poisson(2,000) ≥ 2,100 is about 1 − Φ(99.5 / 44.72) = 0.013.
    expect(at3(tailAtLeast({ mean: 2000, phi: 0 }, 2100))).toBe(0.013);
    expect(quantile({ mean: 2000, phi: 0 }, 0.5)).toBe(2000);
    // The median of Poisson(40) is 40; its 10 % quantile 32.
    expect(quantile({ mean: 40, phi: 0 }, 0.5)).toBe(40);
    expect(quantile({ mean: 40, phi: 0 }, 0.1)).toBe(32);
  });

  it('gives a binomial\'s tail and quantiles as computed by hand (a count steadier than Poisson)', () => {
    // X ~ Bin(20, 0.5): mean 10, variance 5 (phi −1/20). P(X ≥ 15) = Σ_{x≥15} C(20, x) / 2^20 = 21,700 / 1,048,576 = 0.021
    const d = binomialDist(20, 0.5);
    expect(d).toEqual({ mean: 10, phi: -1 / 20 });
    expect(at3(tailAtLeast(d, 15))).toBe(0.021);
    // P(X ≥ 8) = 1 − Σ_{x<8} C(20, x) / 2^20 = 1 − 137,980 / 1,048,576 = 0.868
    expect(at3(tailAtLeast(d, 8))).toBe(0.868);
    expect(tailAtLeast(d, 21)).toBe(0);
    expect(tailAtLeast(d, 20)).toBeCloseTo(1 / 1_048_576, 12);
    // P(X ≤ 7) = 0.132 < 0.2 ≤ P(X ≤ 8) = 0.252; the median is 10.
    expect(quantile(d, 0.2)).toBe(8);
    expect(quantile(d, 0.5)).toBe(10);
    expect(binomialDist(0, 0.5)).toEqual({ mean: 0, phi: 0 });
    expect(binomialDist(Number.NaN, 0.5)).toEqual({ mean: 0, phi: 0 });
    // Above one half, read from its failures: Bin(200, 0.98) ≥ 196 is 0.629, ≥ 200 is 0.98^200 = 0.018 (exact sums);
    // its 10 % and 90 % quantiles 193 and 198.
    const high = binomialDist(200, 0.98);
    expect(at3(tailAtLeast(high, 196))).toBe(0.629);
    expect(at3(tailAtLeast(high, 200))).toBe(0.018);
    expect([quantile(high, 0.1), quantile(high, 0.9)]).toEqual([193, 198]);
  });

  it('sums a tail above the mean from its first term up, as the term-by-term sum below it gives', () => {
    for (const d of [{ mean: 3, phi: 0 }, { mean: 3, phi: 0.4 }, { mean: 60, phi: 0.05 }, { mean: 200, phi: 0.02 }]) {
      for (const k of [Math.ceil(d.mean) + 2, Math.ceil(d.mean * 1.5), Math.ceil(d.mean * 3)]) {
        let below = 0;
        let pmf = d.phi === 0 ? Math.exp(-d.mean) : Math.pow(1 / (1 + d.phi * d.mean), 1 / d.phi);
        for (let x = 0; x < k; x++) {
          below += pmf;
          pmf *= d.phi === 0 ? d.mean / (x + 1) : ((x + 1 / d.phi) / (x + 1)) * (d.mean / (1 / d.phi + d.mean));
        }
        expect(tailAtLeast(d, k)).toBeCloseTo(1 - below, 9);
      }
    }
  });

  it('reads a rule as what the closed month needs: amounts at the month\'s amount per event, transactions at month end\'s pace', () => {
    const m = { metric: 'count' as const, numerator_count: 40, numerator_amount: 4_000, denominator_count: 10_000, denominator_amount: 1e6,
      month_transaction_count: 4_000, month_transaction_amount: 4e5, days_covered: 10, days_in_month: 30, den_prev: true };
    // EFM: fraud amount ≥ 50,000 at 100 an event is 500 events; its 1,000 transactions of the previous month are known.
    const efm = { ratio_threshold: 0.005, comparison: '>=' as const, metric: 'count' as const, conditions: [
      { field: 'numerator_amount' as const, comparison: '>=' as const, value: 50_000 }, { field: 'denominator_count' as const, comparison: '>=' as const, value: 1_000 }] };
    expect(levelNeed(efm, m)).toEqual({ need: { threshold: 0.005, comparison: '>=', minCount: 500, unit: 1 }, blocked: false });
    expect(levelNeed(efm, { ...m, denominator_count: 900 })!.blocked).toBe(true);
    // Discover: 100 transactions in the month itself, read at its pace (40 in 10 of 30 days: 120).
    const disc = { ratio_threshold: 0.01, comparison: '>' as const, metric: 'count' as const, conditions: [{ field: 'month_transaction_count' as const, comparison: '>=' as const, value: 100 }] };
    expect(levelNeed(disc, { ...m, month_transaction_count: 40 })!.blocked).toBe(false);
    expect(levelNeed(disc, { ...m, month_transaction_count: 30 })!.blocked).toBe(true);
    // An amount ratio counts events of the month's average amount; with no event yet, it cannot be told.
    const amt = { ratio_threshold: 0.009, comparison: '>=' as const, metric: 'amount' as const, conditions: [] };
    expect(levelNeed(amt, m)!.need.unit).toBe(100);
    expect(neededCount(levelNeed(amt, m)!.need, 1e6)).toBe(90);
    expect(levelNeed(amt, { ...m, numerator_count: 0, numerator_amount: 0 })).toBeNull();
  });

  it('needs the count a level takes: the ratio against the threshold, and the count minimum', () => {
    expect(neededCount({ threshold: 0.01, comparison: '>=' }, 10_000)).toBe(100);
    expect(neededCount({ threshold: 0.01, comparison: '>' }, 10_000)).toBe(101);
    expect(neededCount({ threshold: 0.015, comparison: '>=', minCount: 100 }, 1_000)).toBe(100);
    expect(neededCount({ threshold: 0.0015, comparison: '>=' }, 30_000)).toBe(45);
  });
});

describe('a month to date of a steady series (months that vary less than a Poisson count)', () => {
  // Five 28-day months of 2 a day (56 each, no weekday pattern): the Pearson statistic is 0, below χ²(4)'s 5 % quantile,
  // so the month's total is read as a binomial of the least dispersion, D = 0.02: p = 0.98, n = 56 / 0.98 = 57.14.
  const steady: ForecastInput = { daysInMonth: 28, daysElapsed: 14, firstWeekday: 0, countToDate: 28, history: Array(140).fill(2),
    monthDays: [28, 28, 28, 28, 28], denominator: { known: 10_000 } };

  it('reads the days left as the part of the month not seen yet (binomial thinning), as computed by hand', () => {
    // f = 1/2: the rest is Bin(round(57.14 − 28), q) = Bin(29, q), q = 0.98 × 0.5 / (1 − 0.49) = 0.9608: mean 27.86.
    const rest = remainingCount(steady);
    expect(rest.phi).toBe(-1 / 29);
    expect(at3(rest.mean)).toBe(27.863);
    // 57 needs R ≥ 29, all 29 trials: q^29 = 0.313; 58 needs 30 of 29: impossible.
    expect(at3(forecast(steady, { threshold: 0.0057, comparison: '>=' }, rest).chance)).toBe(at3((0.49 / 0.51) ** 29));
    expect(forecast(steady, { threshold: 0.0058, comparison: '>=' }, rest).chance).toBe(0);
    // The same month read as Poisson (no month lengths given) is far less sure: its rest has variance above its mean.
    const { monthDays: _, ...plain } = steady;
    expect(remainingCount(plain).phi).toBeGreaterThan(0);
  });

  it('reads the dispersion the months show: Pearson over its degrees of freedom', () => {
    // Totals 54, 56, 56, 56, 58 (the extra and missing events on the same weekdays, so no weekday pattern): Pearson
    // (4 + 4) / 56 = 0.1429 (below χ²(4)'s 0.711), D = 0.1429 / 4 = 0.0357, p = 0.9643, n = 56 / p = 58.07; on day 14
    // with 28 the rest is Bin(30, q), q = 0.4821 / 0.5179 = 0.9310: mean 27.93.
    const month = (t: number) => Array.from({ length: 28 }, (_, i) => 2 + (i < 2 ? (t - 56) / 2 : 0));
    const rest = remainingCount({ ...steady, history: [54, 56, 58, 56, 56].flatMap(month) });
    const p = 1 - 8 / 56 / 4;
    expect(rest.phi).toBe(-1 / 30);
    expect(at3(rest.mean)).toBe(at3((30 * (p / 2)) / (1 - p / 2)));
  });

  it('falls back to the negative binomial when the month to date is not like the steady months, or too few months tell', () => {
    // Day 14, 28 due, sd √(28 × 0.51) = 3.78: 36 is within 2 sd and one event, 37 is not.
    expect(remainingCount({ ...steady, countToDate: 36 }).phi).toBeLessThan(0);
    expect(remainingCount({ ...steady, countToDate: 37 }).phi).toBeGreaterThan(0);
    // Day 27 with 57, within 2 sd of 54 but at the steady total (57.14) with a day to come: not steady.
    expect(remainingCount({ ...steady, daysElapsed: 27, countToDate: 57 }).phi).toBeGreaterThan(0);
    expect(remainingCount({ ...steady, monthDays: [28, 28] }).phi).toBeGreaterThan(0);
    expect(remainingCount({ ...steady, monthDays: [28, 0, 28, 28] }).phi).toBeGreaterThan(0);
    // Months that vary as Poisson counts do (56 ± 8) show no steadiness.
    const varied = [48, 64, 50, 62, 56].flatMap((t) => Array.from({ length: 28 }, (_, i) => (i < t % 28 ? 1 : 0) + Math.floor(t / 28)));
    expect(remainingCount({ ...steady, history: varied }).phi).toBeGreaterThan(0);
  });

  it('knows the lengths of the months before one', () => {
    expect(priorMonthDays('2024-03')).toEqual([29, 31, 31, 30, 31]);
  });
});

describe('a month to date', () => {
  // Day 15 of 30, 60 chargebacks so far, no history: the rate is Gamma(60.5, 15), so the rest of the month is
  // NB(r = 60.5, p = 1/2): mean 60.5.
  const base: ForecastInput = { daysInMonth: 30, daysElapsed: 15, firstWeekday: 3, countToDate: 60, history: [], denominator: { known: 10_000 } };

  it('with a known denominator (a previous month\'s transactions): the chance computed by hand', () => {
    expect(remainingCount(base)).toEqual({ mean: 60.5, phi: 1 / 60.5 });
    const f = forecast(base, { threshold: 0.01, comparison: '>=' });
    // P(R ≥ 100 − 60) = 1 − Σ_{x<40} Γ(x+60.5) / (Γ(60.5) x!) 2^−(60.5+x) = 0.980
    expect(at3(f.chance)).toBe(0.98);
    expect(f.expected).toBe(120.5);
    expect([f.low80, f.high80]).toEqual([60 + 47, 60 + 75]);
    // 4 a day reaches 100 on day 25.
    expect(f.paceDay).toBe(25);
    // A level out of reach at this pace: no day, a small chance.
    const far = forecast(base, { threshold: 0.02, comparison: '>=' });
    expect(far.paceDay).toBeNull();
    expect(far.chance).toBeLessThan(0.01);
  });

  it('with this month\'s denominator: certain transactions give the known case; uncertain ones spread the chance', () => {
    const sure = forecast({ ...base, denominator: { toDate: 5_000, monthlyCv: 0 } }, { threshold: 0.01, comparison: '>=' });
    expect(at3(sure.chance)).toBe(0.98);
    // Near the line, doubt about the month's transactions pulls the chance towards a half.
    const edge = { ...base, countToDate: 50 };
    const known = forecast({ ...edge, denominator: { toDate: 5_000, monthlyCv: 0 } }, { threshold: 0.01, comparison: '>=' }).chance;
    const unsure = forecast({ ...edge, denominator: { toDate: 5_000, monthlyCv: 0.4 } }, { threshold: 0.01, comparison: '>=' }).chance;
    expect(Math.abs(unsure - 0.5)).toBeLessThan(Math.abs(known - 0.5) + 1e-9);
  });

  it('reads a weekday pattern and burstier days from the history, and widens the interval for them', () => {
    // Weekdays 4 a day, weekends 0, for eight weeks (the day before the 1st is a Tuesday when the 1st is a Wednesday).
    const weekly = Array.from({ length: 56 }, (_, i) => ((((3 + i - 56) % 7) + 7) % 7 === 0 || (((3 + i - 56) % 7) + 7) % 7 === 6 ? 0 : 4));
    const w = weekdayWeights(weekly, 3);
    expect(w[0]!).toBeLessThan(0.2);
    expect(w[3]!).toBeGreaterThan(1.2);
    expect(at3(w.reduce((a, b) => a + b, 0) / 7)).toBe(1);
    expect(dayDispersion(weekly, w, 3)).toBeLessThan(0.05);
    // The same mean in bursts on no fixed weekday: one day in eight holds eight days' count.
    const bursty = Array.from({ length: 56 }, (_, i) => (i % 8 === 2 ? (20 / 7) * 8 : 0));
    const calm = Array.from({ length: 56 }, () => 20 / 7);
    const wide = forecast({ ...base, history: bursty }, { threshold: 0.01, comparison: '>=' });
    const narrow = forecast({ ...base, history: calm }, { threshold: 0.01, comparison: '>=' });
    expect(wide.high80 - wide.low80).toBeGreaterThan(narrow.high80 - narrow.low80);
  });
});
