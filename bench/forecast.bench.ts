// The backtest of the chance of a breach (rules/forecast.ts; issue #39): months replayed day by day, the forecast
// against the straight line (the month to date scaled by the days left, read as yes or no). Two data sets: the
// sandbox's world (its MIDs' chargebacks and TC40s, healthy, hovering and breaching) and a generated portfolio whose
// daily counts are Poisson under a monthly drift, a weekday pattern and bursts (not the forecast's own model), most
// series well below their level and a tenth at or over it.
// Each month's level is its network's entry level in the default rules (ratio and count minimum).
// Prints the calibration table, the Brier scores, and the early warning's lead and false alarms, beside the goals.
import { generateWorld } from '../sandbox/generate.ts';
import { parseScenario } from '../sandbox/scenario.ts';
import { forecast, levelNeed, neededCount, priorMonthDays, remainingCount, type LevelNeed } from '../rules/forecast.ts';
import { loadRules } from '../rules/thresholds.ts';
import { inForce, rulesFor } from '../rules/rule-set.ts';

/** One series: daily counts and transactions by day (YYYY-MM-DD), the level it is judged against, its denominator basis. */
interface Series { name: string; counts: Map<string, number>; tx: Map<string, number>; network: string; program: string; prevMonth: boolean }
interface Case { p: number; line: number; y: number; steady: boolean; warnAt: Map<number, number | null>; lineDay: number | null; days: number; heldBefore: boolean }

const DAYS = [5, 10, 15, 20];
const WARN = 0.5;
/** Other warn_at settings, printed as a trade-off of lead against false alarms. */
const WARNS = [0.2, 0.3, 0.4, WARN];
const PROGRAMS: Record<string, { program: string; level: string; prevMonth: boolean }> = {
  mastercard: { program: 'ecp', level: 'ecm', prevMonth: true },
  visa: { program: 'vamp', level: 'excessive', prevMonth: false },
  american_express: { program: 'amex_excessive', level: 'excessive', prevMonth: false },
  discover: { program: 'discover_excessive', level: 'excessive', prevMonth: true },
};
const rules = loadRules();

const dayStr = (t: number) => new Date(t).toISOString().slice(0, 10);
const monthDays = (m: string) => { const [y, mo] = m.split('-').map(Number); return new Date(Date.UTC(y!, mo!, 0)).getUTCDate(); };
const addMonth = (m: string, k: number) => { const [y, mo] = m.split('-').map(Number); return new Date(Date.UTC(y!, mo! - 1 + k, 1)).toISOString().slice(0, 7); };
const day = (m: string, d: number) => `${m}-${String(d).padStart(2, '0')}`;
const sumDays = (map: Map<string, number>, m: string, from: number, to: number) => { let s = 0; for (let d = from; d <= to; d++) s += map.get(day(m, d)) ?? 0; return s; };

/** The level a series is judged against in a month: its network's entry level in force (ratio and count minimum). */
function entryNeed(mid: string, s: Series, month: string): LevelNeed | null {
  const p = PROGRAMS[s.network]!;
  const r = rulesFor(rules, mid).filter((x) => x.network === s.network && x.program === p.program && x.level === p.level && x.metric === 'count' && inForce(x, month))[0];
  if (!r) return null;
  // The rule read as cbp reads it (rules/forecast.ts levelNeed), on the month's own transactions (counts only here).
  const D = monthDays(month);
  const n = levelNeed(r, { metric: 'count', numerator_count: 0, numerator_amount: 0, denominator_count: null, denominator_amount: null,
    month_transaction_count: sumDays(s.tx, month, 1, D), month_transaction_amount: null, days_covered: D, days_in_month: D, den_prev: s.prevMonth });
  return n && !n.blocked ? n.need : null;
}

/** Every month of a series with six months before it (168 days of history, as cbp reads), replayed. */
function replay(mid: string, s: Series, months: string[], cases: Case[]): void {
  for (const m of months.slice(6)) {
    const need = entryNeed(mid, s, m);
    if (!need) continue;
    const D = monthDays(m);
    const total = sumDays(s.counts, m, 1, D);
    const txMonth = sumDays(s.tx, m, 1, D);
    const prevTx = sumDays(s.tx, addMonth(m, -1), 1, monthDays(addMonth(m, -1)));
    const t = s.prevMonth ? prevTx : txMonth;
    if (t <= 0) continue;
    const y = total >= neededCount(need, t) ? 1 : 0;
    // The month before met the level too: cbp holds it, and sends no early warning of a level held.
    const pm = addMonth(m, -1);
    const pNeed = entryNeed(mid, s, pm);
    const pT = s.prevMonth ? sumDays(s.tx, addMonth(pm, -1), 1, monthDays(addMonth(pm, -1))) : sumDays(s.tx, pm, 1, monthDays(pm));
    const heldBefore = pNeed !== null && pT > 0 && sumDays(s.counts, pm, 1, monthDays(pm)) >= neededCount(pNeed, pT);
    const first = Date.UTC(Number(m.slice(0, 4)), Number(m.slice(5, 7)) - 1, 1);
    const history = Array.from({ length: 168 }, (_, i) => s.counts.get(dayStr(first - (168 - i) * 86_400_000)) ?? 0);
    const past = [1, 2, 3].map((k) => sumDays(s.tx, addMonth(m, -k), 1, monthDays(addMonth(m, -k)))).filter((x) => x > 0);
    const mean = past.reduce((a, b) => a + b, 0) / Math.max(1, past.length);
    const cv = past.length > 1 ? Math.sqrt(past.reduce((a, b) => a + (b - mean) ** 2, 0) / (past.length - 1)) / mean : 0.15;
    const warnAt = new Map<number, number | null>(WARNS.map((w) => [w, null]));
    let lineDay: number | null = null;
    const at = new Map<number, { p: number; line: number; steady: boolean }>();
    for (let d = 1; d < D; d++) {
      const c = sumDays(s.counts, m, 1, d);
      const txToDate = sumDays(s.tx, m, 1, d);
      const den = s.prevMonth ? { known: t } : { toDate: txToDate, monthlyCv: cv };
      const input = { daysInMonth: D, daysElapsed: d, firstWeekday: new Date(first).getUTCDay(), countToDate: c, history, monthDays: priorMonthDays(m), denominator: den };
      const rest = remainingCount(input);
      const f = forecast(input, need, rest);
      const lineT = s.prevMonth ? t : (txToDate * D) / d;
      const line = (c * D) / d >= neededCount(need, lineT) ? 1 : 0;
      for (const w of WARNS) if (warnAt.get(w) === null && f.chance >= w) warnAt.set(w, d);
      if (lineDay === null && line) lineDay = d;
      at.set(d, { p: f.chance, line, steady: rest.phi < 0 });
    }
    for (const d of DAYS) if (at.has(d)) cases.push({ p: at.get(d)!.p, line: at.get(d)!.line, steady: at.get(d)!.steady, y, warnAt, lineDay, days: D, heldBefore });
  }
}

/** The sandbox's world: MIDs of each profile over 14 months; chargebacks by day received, TC40s in Visa's count. */
function sandboxSeries(): Array<[string, Series]> {
  const profiles = ['healthy', 'hovering', 'breaching'] as const;
  const mids = Array.from({ length: 24 }, (_, i) => ({ mid: `86019900${String(i).padStart(4, '0')}`, profile: profiles[i % 3]!, monthly_transactions: 8_000 + 2_000 * (i % 5) }));
  const w = generateWorld({ seed: 3939, start: '2026-03-01', scenario: parseScenario({ seed: 3939, history_months: 14, horizon_months: 0, orders: 0, order_share: 0, mids }) });
  const out = new Map<string, Series>();
  const get = (mid: string, network: string) => {
    const k = `${mid}:${network}`;
    if (!out.has(k)) out.set(k, { name: k, counts: new Map(), tx: new Map(), network, program: PROGRAMS[network]!.program, prevMonth: PROGRAMS[network]!.prevMonth });
    return out.get(k)!;
  };
  for (const d of w.daily) if (PROGRAMS[d.network]) get(d.mid, d.network).tx.set(d.day, (get(d.mid, d.network).tx.get(d.day) ?? 0) + d.transaction_count);
  const bump = (s: Series, t: string) => s.counts.set(t.slice(0, 10), (s.counts.get(t.slice(0, 10)) ?? 0) + 1);
  for (const c of w.chargebacks) if (PROGRAMS[c.card_brand] && !(c.card_brand === 'visa' && c.rdr_resolved)) bump(get(c.mid, c.card_brand), c.received_at);
  for (const a of w.alerts) if (a.card_brand === 'visa' && a.prevention_type === 'tc40') bump(get(a.mid, 'visa'), a.prevention_at);
  return [...out.entries()].map(([k, s]) => [k.split(':')[0]!, s]);
}

/** A generated portfolio: per series a base rate against its level, a monthly drift (Gamma), weekdays, bursts. */
function generatedSeries(n: number, months: number): Array<[string, Series]> {
  let seed = 20261129;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const poisson = (l: number) => { let k = 0; let p = Math.exp(-Math.min(l, 500)); let s = p; const u = rnd(); while (u > s && k < 5000) { k++; p *= l / k; s += p; } return l > 500 ? Math.round(l + Math.sqrt(l) * (rnd() + rnd() + rnd() - 1.5) * 2) : k; };
  const gamma = (shape: number) => { let s = 0; for (let i = 0; i < shape; i++) s -= Math.log(rnd()); return s / shape; };
  const out: Array<[string, Series]> = [];
  const networks = Object.keys(PROGRAMS);
  for (let i = 0; i < n; i++) {
    const network = networks[i % networks.length]!;
    const s: Series = { name: `g${i}`, counts: new Map(), tx: new Map(), network, program: PROGRAMS[network]!.program, prevMonth: PROGRAMS[network]!.prevMonth };
    const txDay = 2_000 + Math.floor(rnd() * 8_000);
    const need = entryNeed('g', s, '2026-06') ?? { threshold: 0.01, comparison: '>=' as const };
    // A portfolio as acquirers hold them: 70 % of series well below the level (0.1 to 0.5 times its ratio), 20 % near
    // it (0.5 to 0.9), 10 % at or over it (0.9 to 1.6); at least near the count minimum's rate for the last two.
    const u = rnd();
    const share = u < 0.7 ? 0.1 + 0.4 * rnd() : u < 0.9 ? 0.5 + 0.4 * rnd() : 0.9 + 0.7 * rnd();
    const base = Math.max(txDay * need.threshold * share, u < 0.7 ? 0 : ((need.minCount ?? 0) / 30) * share);
    for (let k = 0; k < months; k++) {
      const m = addMonth('2025-01', k);
      const drift = gamma(6);
      for (let d = 1; d <= monthDays(m); d++) {
        const wd = new Date(Date.UTC(Number(m.slice(0, 4)), Number(m.slice(5, 7)) - 1, d)).getUTCDay();
        const weekly = wd === 0 || wd === 6 ? 0.55 : 1.18;
        const burst = rnd() < 0.04 ? 4 + 4 * rnd() : 1;
        s.counts.set(day(m, d), poisson(base * drift * weekly * burst));
        s.tx.set(day(m, d), Math.round(txDay * weekly * (0.9 + 0.2 * rnd())));
      }
    }
    out.push([`g${i}`, s]);
  }
  return out;
}

function report(name: string, series: Array<[string, Series]>, months: string[] | ((s: Series) => string[])): void {
  const cases: Case[] = [];
  for (const [mid, s] of series) replay(mid, s, typeof months === 'function' ? months(s) : months, cases);
  const brier = (f: (c: Case) => number) => cases.reduce((a, c) => a + (f(c) - c.y) ** 2, 0) / cases.length;
  const model = brier((c) => c.p);
  const line = brier((c) => c.line);
  console.log(`\n${name}: ${cases.length} forecasts (days ${DAYS.join(', ')}), ${cases.filter((c) => c.y).length} of them in months that breached`);
  console.log(`Brier score: forecast ${model.toFixed(4)}, straight line ${line.toFixed(4)}: ${(model / line).toFixed(2)}× (goal ≤ 0.80×)`);
  const steady = cases.filter((c) => c.steady);
  if (steady.length) {
    const sb = (f: (c: Case) => number) => steady.reduce((x, c) => x + (f(c) - c.y) ** 2, 0) / steady.length;
    const pred = steady.reduce((x, c) => x + c.p, 0) / steady.length;
    const obs = steady.reduce((x, c) => x + c.y, 0) / steady.length;
    console.log(`Read as steady (binomial): ${steady.length} forecasts; Brier ${sb((c) => c.p).toFixed(4)} against the line's ${sb((c) => c.line).toFixed(4)}; mean chance ${(pred * 100).toFixed(1)} %, observed ${(obs * 100).toFixed(1)} %`);
  } else console.log('Read as steady (binomial): none');
  console.log('chance    cases  predicted  observed  within ±10 points (buckets of ≥ 50 cases)');
  for (let b = 0; b < 10; b++) {
    const inB = cases.filter((c) => Math.min(9, Math.floor(c.p * 10)) === b);
    if (!inB.length) continue;
    const pred = inB.reduce((a, c) => a + c.p, 0) / inB.length;
    const obs = inB.reduce((a, c) => a + c.y, 0) / inB.length;
    const ok = inB.length < 50 ? '(few)' : Math.abs(pred - obs) <= 0.1 ? 'yes' : 'NO';
    console.log(`${`${b * 10}–${b * 10 + 10} %`.padEnd(9)} ${String(inB.length).padStart(5)}  ${(pred * 100).toFixed(1).padStart(8)} %  ${(obs * 100).toFixed(1).padStart(7)} %  ${ok}`);
  }
  // Per month (the day-5 case carries the month's days): the warning's lead on the line, and its false alarms.
  const monthsOf = cases.filter((_, i) => i % DAYS.length === 0);
  const breached = monthsOf.filter((c) => c.y);
  const median = (xs: Case[], w = WARN) => {
    const leads = xs.map((c) => (c.lineDay ?? c.days) - (c.warnAt.get(w) ?? c.days)).sort((a, b) => a - b);
    return leads.length ? leads[Math.floor(leads.length / 2)]! : NaN;
  };
  const clear = monthsOf.filter((c) => !c.y);
  const falseAlarms = clear.filter((c) => c.warnAt.get(WARN) !== null).length / Math.max(1, clear.length);
  const early = breached.filter((c) => (c.lineDay ?? c.days) <= 3).length / Math.max(1, breached.length);
  const lineFalse = clear.filter((c) => c.lineDay !== null).length / Math.max(1, clear.length);
  console.log(`The straight line itself crosses in ${(lineFalse * 100).toFixed(1)} % of the months that ended below`);
  console.log(`The straight line crosses by day 3 in ${(early * 100).toFixed(0)} % of breached months (a warning on day 1 leads those by at most 2 days)`);
  const fresh = breached.filter((c) => !c.heldBefore);
  console.log(`Breached months after a month below (where cbp warns: it sends no warning of a level held): median lead ${median(fresh)} days over ${fresh.length}`);
  console.log(`Early warning at ${WARN * 100} %: median lead on the straight line ${median(breached)} days over ${breached.length} breached months (goal ≥ 3); fires in ${(falseAlarms * 100).toFixed(1)} % of the ${clear.length} months that ended below (goal ≤ 10 %)`);
  console.log('warn_at  median lead (breached)  after a month below  false alarms');
  for (const w of WARNS) {
    const fa = clear.filter((c) => c.warnAt.get(w) !== null).length / Math.max(1, clear.length);
    console.log(`${`${w * 100} %`.padEnd(8)} ${String(median(breached, w)).padStart(20)}  ${String(median(fresh, w)).padStart(19)}  ${(fa * 100).toFixed(1).padStart(10)} %`);
  }
}

const sandbox = sandboxSeries();
const sandboxMonths = (s: Series) => [...new Set([...s.tx.keys()].map((d) => d.slice(0, 7)))].sort().slice(0, -1);
report('The sandbox\'s world (24 MIDs × 4 networks, 14 months)', sandbox, sandboxMonths);
report('A generated portfolio (400 series, 18 months)', generatedSeries(400, 18), Array.from({ length: 18 }, (_, k) => addMonth('2025-01', k)));
