// A MID's monthly figures: how many transactions, chargebacks and alerts of each kind each month and network
// has (pinned ones exactly, the rest drawn from the profile's rates), and the month's transactions spread
// over its days.
import { NETWORKS, type Network } from '../contract/common.ts';
import { DAY, type Month, ymd } from './calendar.ts';
import { toCents } from './payments.ts';
import { DEFAULT_MIX, RATES, jitter, profileOf } from './rates.ts';
import type { Rng } from './rng.ts';
import type { NetworkMonth, ScenarioMid } from './scenario.ts';
import type { DailyStat } from './world.ts';

/** What one MID, network and month has: the cases' counts are how many of each the month receives. */
export interface Figures {
  tx: number;
  txCents: number;
  cb: number;
  fraud: number;
  tc40: number;
  ethoca: number;
  verifi: number;
  rdr: number;
  /** The month pins its RDR count: that many RDR cases exactly, none added for disputes resolved through RDR. */
  rdrPinned: boolean;
  ov: number;
}

/** Planned figures for every month and network of one MID: pinned ones exactly, the rest drawn. */
export function planMid(root: Rng, months: Month[], m: ScenarioMid): Map<string, Record<Network, Figures>> {
  const mixRaw = m.mix ?? DEFAULT_MIX;
  const mixSum = NETWORKS.reduce((a, n) => a + (mixRaw[n] ?? 0), 0) || 1;
  const out = new Map<string, Record<Network, Figures>>();
  const prevTx: Record<Network, number> = { visa: 0, mastercard: 0, american_express: 0, discover: 0 };
  for (const n of NETWORKS) prevTx[n] = Math.round((m.monthly_transactions * (mixRaw[n] ?? 0)) / mixSum);
  for (const month of months) {
    const rec = {} as Record<Network, Figures>;
    for (const n of NETWORKS) {
      const pin: NetworkMonth = m.months?.[month.key]?.[n] ?? {};
      const rng = root.fork(`plan:${m.mid}:${month.key}:${n}`);
      const moy = new Date(month.startMs).getUTCMonth();
      const season = 1 + 0.04 * Math.sin((2 * Math.PI * moy) / 12) + Math.max(-0.06, Math.min(0.06, rng.normal(0, 0.03)));
      const base = (m.monthly_transactions * (mixRaw[n] ?? 0)) / mixSum;
      const tx = pin.transactions ?? Math.round(base * season);
      const txCents = pin.transaction_amount !== undefined ? toCents(pin.transaction_amount) : Math.round(tx * m.average_ticket * 100 * (0.97 + 0.06 * rng.next()));
      const rates = RATES[profileOf(m, n, month)][n];
      const denom = n === 'mastercard' || n === 'discover' ? prevTx[n] : tx;
      let cb = pin.chargebacks ?? Math.round(rates.cb * jitter(rng) * denom);
      let fraud = pin.fraud_chargebacks ?? Math.round(cb * rates.fraudShare * (0.9 + 0.2 * rng.next()));
      if (pin.chargebacks === undefined && fraud > cb) cb = fraud;
      fraud = Math.min(fraud, cb);
      const draw = (pinned: number | undefined, rate: number) => pinned ?? Math.round(rate * jitter(rng) * tx);
      rec[n] = {
        tx,
        txCents,
        cb,
        fraud,
        tc40: draw(pin.tc40, rates.tc40),
        ethoca: draw(pin.ethoca, rates.ethoca),
        verifi: draw(pin.verifi, rates.verifi),
        rdr: draw(pin.rdr, rates.rdr),
        rdrPinned: pin.rdr !== undefined,
        ov: draw(pin.order_validations, rates.ov),
      };
      prevTx[n] = tx;
    }
    out.set(month.key, rec);
  }
  return out;
}

/** Splits total into parts proportional to weights, summing exactly to total (largest remainder). */
function apportion(total: number, weights: number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (total === 0 || sum <= 0) return weights.map(() => 0);
  const raw = weights.map((w) => (w / sum) * total);
  const out = raw.map(Math.floor);
  let rest = total - out.reduce((a, b) => a + b, 0);
  const order = raw.map((v, i) => [v - Math.floor(v), i] as const).sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (let k = 0; rest > 0; k = (k + 1) % order.length, rest--) out[order[k][1]]++;
  return out;
}

/** Daily settled transactions of a month: weekdays busier than weekends, sums exact per month. */
export function drawDaily(root: Rng, mid: string, net: Network, month: Month, f: Figures, into: DailyStat[]): void {
  if (f.tx === 0) return;
  const rng = root.fork(`daily:${mid}:${month.key}:${net}`);
  const dayStarts: number[] = [];
  for (let t = month.startMs; t < month.endMs; t += DAY) dayStarts.push(t);
  const weights = dayStarts.map((t) => {
    const wd = new Date(t).getUTCDay();
    return (wd === 0 || wd === 6 ? 0.8 : 1) * (0.9 + 0.2 * rng.next());
  });
  const counts = apportion(f.tx, weights);
  const amountWeights = counts.map((c) => c * (0.95 + 0.1 * rng.next()));
  const amounts = apportion(f.txCents, amountWeights);
  for (let i = 0; i < dayStarts.length; i++) {
    if (counts[i] === 0 && amounts[i] === 0) continue;
    into.push({ mid, network: net, day: ymd(dayStarts[i]), transaction_count: counts[i], transaction_amount: amounts[i] / 100 });
  }
}
