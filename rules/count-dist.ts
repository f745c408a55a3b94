// A count's distribution by its mean and dispersion phi (variance = mean + phi × mean²): negative binomial for phi > 0,
// Poisson at 0, binomial (fewer than Poisson's, -1/phi trials) below 0. Tails and quantiles for rules/forecast.ts.

export interface CountDist {
  mean: number;
  phi: number;
}

const EPS = 1e-12;
/** The binomial's trials and chance of `d` (phi < 0). */
const binomial = (d: CountDist) => { const n = Math.round(-1 / d.phi); return { n, p: Math.min(1, d.mean / n) }; };

/** A binomial count of n trials at chance p, as a CountDist. */
export function binomialDist(n: number, p: number): CountDist {
  const trials = Number.isFinite(n) ? Math.max(0, Math.round(n)) : 0;
  return trials === 0 || !(p > 0) ? { mean: 0, phi: 0 } : { mean: trials * Math.min(1, p), phi: -1 / trials };
}

/** A binomial above one half read from its failures (n − X), whose P(0) does not underflow. */
const reflected = (d: CountDist) => { const { n, p } = binomial(d); return { n, dist: binomialDist(n, 1 - p) }; };
const highBinomial = (d: CountDist) => d.phi < -EPS && binomial(d).p > 0.5;

/** The probabilities P(X = 0), P(X = 1), … of `d`, one at a time (zeros past a binomial's trials; its p at most ½). */
function* pmfs(d: CountDist): Generator<number> {
  if (d.phi < -EPS) {
    const { n, p } = binomial(d);
    let pmf = Math.exp(n * Math.log1p(-p));
    for (let x = 0; ; x++) {
      yield pmf;
      pmf = x >= n ? 0 : pmf * ((n - x) / (x + 1)) * (p / (1 - p));
    }
  }
  if (d.phi <= EPS) {
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

/** -ln P(X = 0): a count whose P(X = 0) underflows is read as normal (its mean and variance; continuity-corrected). */
function zeroLog(d: CountDist): number {
  if (d.phi < -EPS) { const { n, p } = binomial(d); return -n * Math.log1p(-p); }
  return d.phi <= EPS ? d.mean : Math.log1p(d.mean * d.phi) / d.phi;
}
const large = (d: CountDist) => zeroLog(d) > 700;
const sd = (d: CountDist) => Math.sqrt(Math.max(0, d.mean + d.phi * d.mean * d.mean));

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
  if (d.phi < -EPS) {
    const { n, p } = binomial(d);
    let pmf = Math.exp(lnGamma(n + 1) - lnGamma(k + 1) - lnGamma(n - k + 1) + k * Math.log(p) + (n - k) * Math.log1p(-p));
    let sum = 0;
    for (let x = k; x <= n && pmf > 1e-15 * sum; x++) {
      sum += pmf;
      pmf *= ((n - x) / (x + 1)) * (p / (1 - p));
    }
    return sum;
  }
  const poisson = d.phi <= EPS;
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
  if (d.phi < -EPS && k > binomial(d).n) return 0;
  if (highBinomial(d)) { const r = reflected(d); return 1 - tailAtLeast(r.dist, r.n - k + 1); }
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
  const most = d.phi < -EPS ? binomial(d).n : 1e7;
  if (large(d) || highBinomial(d)) {
    let lo = 0;
    let hi = Math.min(most, Math.ceil(d.mean + 10 * sd(d)));
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
    if (cdf >= q || x >= most) return x;
    x++;
  }
  return x;
}
