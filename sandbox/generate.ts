// The scenario generator: (seed, start, scenario) -> World, pure and deterministic. Every random draw comes
// from a stream forked by a label naming what it is for (MID, month, network, kind), so pinning one month
// leaves every other month's draws unchanged, and the same inputs give the same world byte for byte.
// Entities are built as object literals with every key present (optional ones undefined, which JSON omits):
// V8 keeps such objects in fast mode; a conditional spread inside a literal made them slow dictionaries.
//
// Months are whole UTC calendar months: `history_months` before the start's month, the start's month, and
// `horizon_months` after it. A case is counted in the month it is received; statuses move on afterwards, in
// days after receipt, so advancing the sandbox clock reveals the changes.
import { NETWORKS, type Network, toIsoUtc } from '../contract/common.ts';
import type { ChargebackStatus } from '../contract/reporting.ts';
import { ValidationError } from '../lib/errors.ts';
import { DNF_REASONS, REASON_POOLS } from './reason-codes.ts';
import { Rng } from './rng.ts';
import { DEFAULT_SCENARIO, type NetworkMonth, type Profile, type Scenario, type ScenarioInput, type ScenarioMid, parseScenario } from './scenario.ts';
import type {
  DailyStat,
  PreventionSource,
  StatusChange,
  World,
  WorldChargeback,
  WorldMid,
  WorldOrder,
  WorldOrderValidation,
  WorldPreventionAlert,
  WorldRdrAlert,
} from './world.ts';

export interface GenerateOptions {
  seed: number;
  /** ISO time the sandbox clock starts at (either spelling of the spec; a bare date is midnight UTC) */
  start: string;
  /** a parsed scenario or a raw one (validated here); the built-in one when omitted */
  scenario?: Scenario | ScenarioInput;
}

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Per-profile rates per network. Chargeback rates are over the month's transactions for Visa and Amex, and
 *  over the previous month's for Mastercard and Discover, as their programs compute them. */
interface Rates {
  cb: number;
  fraudShare: number;
  tc40: number;
  ethoca: number;
  verifi: number;
  rdr: number;
  ov: number;
}
const r = (cb: number, fraudShare: number, tc40 = 0, ethoca = 0, verifi = 0, rdr = 0, ov = 0): Rates => ({ cb, fraudShare, tc40, ethoca, verifi, rdr, ov });
// Noise on a rate stays within ±12%, so 'hovering' never reaches a threshold and 'breaching' never drops under.
// hovering: MC 1.25% (max 1.4% < 1.5%), Visa disputes + TC40 1.25% (max 1.4% < 1.5%), Amex/Discover 0.85%.
// breaching: MC 2.2% (min 1.94%), Visa 1.1% + 1.7% = 2.8% (min 2.46% > 2.2%), Amex/Discover 1.4% (min 1.23%).
const RATES: Record<Profile, Record<Network, Rates>> = {
  healthy: {
    visa: r(0.0035, 0.35, 0.0025, 0.0012, 0.001, 0.0008, 0.001),
    mastercard: r(0.0035, 0.35, 0, 0.0012, 0.0006, 0, 0.0008),
    american_express: r(0.003, 0.3),
    discover: r(0.003, 0.3),
  },
  hovering: {
    visa: r(0.007, 0.45, 0.0055, 0.0025, 0.002, 0.0015, 0.0015),
    mastercard: r(0.0125, 0.45, 0, 0.0025, 0.0012, 0, 0.0012),
    american_express: r(0.0085, 0.4),
    discover: r(0.0085, 0.4),
  },
  breaching: {
    visa: r(0.011, 0.5, 0.017, 0.004, 0.003, 0.002, 0.002),
    mastercard: r(0.022, 0.5, 0, 0.004, 0.002, 0, 0.0015),
    american_express: r(0.014, 0.5),
    discover: r(0.014, 0.5),
  },
};
const DEFAULT_MIX: Record<Network, number> = { visa: 0.55, mastercard: 0.3, american_express: 0.1, discover: 0.05 };
/** A 'breaching' MID is 'hovering' until this many months before the start's month, then over the line. */
const BREACH_FROM_INDEX = -3;
/** Share of Visa disputes (with an ARN) also resolved through RDR. */
const RDR_RESOLVED_SHARE = 0.1;

interface Month {
  key: string;
  /** months from the start's month (negative: history) */
  index: number;
  startMs: number;
  endMs: number;
}

const FIRST = ['James', 'Mary', 'Robert', 'Patricia', 'John', 'Jennifer', 'Michael', 'Linda', 'David', 'Elizabeth', 'William', 'Barbara', 'Richard', 'Susan', 'Joseph', 'Jessica', 'Thomas', 'Sarah', 'Carlos', 'Karen', 'Ahmed', 'Fatima', 'Wei', 'Mei', 'Olga', 'Ivan', 'Priya', 'Arjun', 'Amara', 'Kofi'];
const LAST = ['Smith', 'Johnson', 'Williams', 'Brown', 'Jones', 'Garcia', 'Miller', 'Davis', 'Rodriguez', 'Martinez', 'Hernandez', 'Lopez', 'Gonzalez', 'Wilson', 'Anderson', 'Thomas', 'Taylor', 'Moore', 'Jackson', 'Martin', 'Lee', 'Khan', 'Chen', 'Wang', 'Ivanova', 'Petrov', 'Patel', 'Singh', 'Okafor', 'Mensah'];
const CITIES: Array<[string, string, string]> = [['Austin', 'TX', '73301'], ['Denver', 'CO', '80202'], ['Portland', 'OR', '97201'], ['Columbus', 'OH', '43004'], ['Raleigh', 'NC', '27601'], ['Tampa', 'FL', '33601'], ['Madison', 'WI', '53703']];
const UPPER_ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/** Days since 1970-01-01 -> [year, month, day], by Hinnant's civil-from-days (no Date objects in the hot path). */
function civil(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}
// Written as char codes into a flat string: template literals leave cons-string trees that the garbage
// collector keeps copying for the world's lifetime (hundreds of thousands of timestamps in a big world).
const codes = new Array<number>(20);
function put(i: number, v: number, width: number): void {
  for (let k = width - 1; k >= 0; k--, v = Math.floor(v / 10)) codes[i + k] = 48 + (v % 10);
}
const ymd = (ms: number): string => {
  const [y, m, d] = civil(Math.floor(ms / DAY));
  put(0, y, 4);
  codes[4] = 45;
  put(5, m, 2);
  codes[7] = 45;
  put(8, d, 2);
  return String.fromCharCode.apply(null, codes.slice(0, 10));
};
/** ISO 8601 UTC to the second, `YYYY-MM-DDTHH:MM:SSZ`. */
const iso = (ms: number): string => {
  const s = Math.floor(ms / 1000);
  const days = Math.floor(s / 86400);
  const rest = s - days * 86400;
  const [y, m, d] = civil(days);
  put(0, y, 4);
  codes[4] = 45;
  put(5, m, 2);
  codes[7] = 45;
  put(8, d, 2);
  codes[10] = 84;
  put(11, Math.floor(rest / 3600), 2);
  codes[13] = 58;
  put(14, Math.floor((rest % 3600) / 60), 2);
  codes[16] = 58;
  put(17, rest % 60, 2);
  codes[19] = 90;
  return String.fromCharCode.apply(null, codes);
};
const toCents = (v: number): number => Math.round(v * 100);

function monthsOf(startMs: number, history: number, horizon: number): Month[] {
  const d = new Date(startMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const out: Month[] = [];
  for (let i = -history; i <= horizon; i++) {
    const s = Date.UTC(y, m + i, 1);
    const e = Date.UTC(y, m + i + 1, 1);
    out.push({ key: new Date(s).toISOString().slice(0, 7), index: i, startMs: s, endMs: e });
  }
  return out;
}

function card(rng: Rng, net: Network): { first6: string; last4: string } {
  let first6: string;
  switch (net) {
    case 'visa':
      first6 = `4${rng.digits(5)}`;
      break;
    case 'mastercard':
      first6 = `5${rng.int(1, 5)}${rng.digits(4)}`;
      break;
    case 'american_express':
      first6 = `3${rng.pick(['4', '7'])}${rng.digits(4)}`;
      break;
    default:
      first6 = `6011${rng.digits(2)}`;
  }
  return { first6, last4: rng.digits(4) };
}

/** An order amount in cents: log-normal around the average ticket (mean-corrected), at least 1.00. */
function ticketCents(rng: Rng, avg: number): number {
  const sigma = 0.5;
  const v = avg * Math.exp(rng.normal(-(sigma * sigma) / 2, sigma));
  return Math.max(100, Math.min(toCents(avg * 20), toCents(v)));
}

/** Rate noise: x (1 + N(0, 6%)) clamped to ±12%. */
function jitter(rng: Rng): number {
  return Math.min(1.12, Math.max(0.88, 1 + rng.normal(0, 0.06)));
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

interface Figures {
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

class Builder {
  readonly chargebacks: WorldChargeback[] = [];
  readonly alerts: WorldPreventionAlert[] = [];
  readonly rdrs: WorldRdrAlert[] = [];
  readonly ovs: WorldOrderValidation[] = [];
  readonly orders: WorldOrder[] = [];
  readonly daily: DailyStat[] = [];

  constructor(
    private readonly sc: Scenario,
    private readonly root: Rng,
    private readonly months: Month[],
    private readonly startMs: number,
  ) {}

  worldMid(m: ScenarioMid): WorldMid {
    const rng = this.root.fork(`mid:${m.mid}:identity`);
    return {
      mid: m.mid,
      alias: m.alias ?? `Merchant ${m.mid}`,
      gateways: m.gateways ?? [`gw-${rng.hex(8)}`],
      merchant_descriptor: m.descriptor ?? (m.alias ?? `MERCHANT ${m.mid}`).toUpperCase().slice(0, 22),
      region: m.region,
      currency: m.currency,
    };
  }

  profileOf(m: ScenarioMid, net: Network, month: Month): Profile {
    const p = m.network_profiles?.[net] ?? m.profile;
    if (p === 'breaching' && month.index < BREACH_FROM_INDEX) return 'hovering';
    return p;
  }

  /** Planned figures for every month and network of one MID: pinned ones exactly, the rest drawn. */
  plan(m: ScenarioMid): Map<string, Record<Network, Figures>> {
    const mixRaw = m.mix ?? DEFAULT_MIX;
    const mixSum = NETWORKS.reduce((a, n) => a + (mixRaw[n] ?? 0), 0) || 1;
    const out = new Map<string, Record<Network, Figures>>();
    const prevTx: Record<Network, number> = { visa: 0, mastercard: 0, american_express: 0, discover: 0 };
    for (const n of NETWORKS) prevTx[n] = Math.round((m.monthly_transactions * (mixRaw[n] ?? 0)) / mixSum);
    for (const month of this.months) {
      const rec = {} as Record<Network, Figures>;
      for (const n of NETWORKS) {
        const pin: NetworkMonth = m.months?.[month.key]?.[n] ?? {};
        const rng = this.root.fork(`plan:${m.mid}:${month.key}:${n}`);
        const moy = new Date(month.startMs).getUTCMonth();
        const season = 1 + 0.04 * Math.sin((2 * Math.PI * moy) / 12) + Math.max(-0.06, Math.min(0.06, rng.normal(0, 0.03)));
        const base = (m.monthly_transactions * (mixRaw[n] ?? 0)) / mixSum;
        const tx = pin.transactions ?? Math.round(base * season);
        const txCents = pin.transaction_amount !== undefined ? toCents(pin.transaction_amount) : Math.round(tx * m.average_ticket * 100 * (0.97 + 0.06 * rng.next()));
        const rates = RATES[this.profileOf(m, n, month)][n];
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

  /** Daily settled transactions: weekdays busier than weekends, sums exact per month. */
  days(mid: string, net: Network, month: Month, f: Figures): void {
    if (f.tx === 0) return;
    const rng = this.root.fork(`daily:${mid}:${month.key}:${net}`);
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
      this.daily.push({ mid, network: net, day: ymd(dayStarts[i]), transaction_count: counts[i], transaction_amount: amounts[i] / 100 });
    }
  }

  /** A merchant order for a case (same card, amount and time), pushed by the demo so matching can happen. */
  order(rng: Rng, m: WorldMid, goods: 'physical' | 'digital', net: Network, c: { first6: string; last4: string }, cents: number, atMs: number, name: [string, string]): WorldOrder {
    const [first, last] = name;
    const at = iso(atMs);
    const [city, state, postcode] = rng.pick(CITIES);
    const street = `${rng.int(10, 9999)} ${rng.pick(['Oak', 'Maple', 'Cedar', 'Pine', 'Elm', 'Lake', 'Hill'])} ${rng.pick(['St', 'Ave', 'Rd', 'Blvd'])}`;
    const total = (cents / 100).toFixed(2);
    const fulfillment =
      goods === 'physical'
        ? {
            shipments: [
              {
                shipping_method: rng.pick(['UPS Ground', 'USPS Priority', 'FedEx Home']),
                shipping_date: iso(atMs + rng.int(6, 72) * HOUR),
                tracking_number: `1Z${rng.chars(16, UPPER_ALNUM)}`,
                shipping_first_name: first,
                shipping_last_name: last,
                shipping_street_address: street,
                shipping_city: city,
                shipping_state: state,
                shipping_postcode: postcode,
                shipping_country: 'US',
              },
            ],
          }
        : { proof_of_service: [{ type: 'download', value: `licence ${rng.hex(12)} delivered ${at}` }] };
    return {
      order_id: `SO-${rng.hex(12).toUpperCase()}`,
      order_date: at,
      order_total: total,
      currency: m.currency ?? 'USD',
      order_status: 'Complete',
      transaction_merchant_id: m.mid,
      processor_id: m.gateways[0],
      cc_type: net,
      cc_first_6: c.first6,
      cc_last_4: c.last4,
      cc_exp_month: String(rng.int(1, 12)).padStart(2, '0'),
      cc_exp_year: String(new Date(atMs).getUTCFullYear() + rng.int(1, 5)),
      avs: rng.pick(['Y', 'Y', 'Y', 'A', 'Z', 'N']),
      cvv: rng.pick(['M', 'M', 'M', 'N']),
      customer_id: `cust-${rng.hex(10)}`,
      ip_address: `${rng.int(11, 223)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}`,
      email_address: `${first}.${last}${rng.digits(2)}@example.com`.toLowerCase(),
      customers_telephone: `+1555${rng.digits(7)}`,
      is_refund: 0,
      is_recurring: 0,
      is_chargeback: 0,
      is_fraud: 0,
      is_test_cc: 0,
      auth_id: rng.chars(6, UPPER_ALNUM),
      transaction_id: rng.digits(12),
      billing_first_name: first,
      billing_last_name: last,
      billing_street_address: street,
      billing_city: city,
      billing_state: state,
      billing_postcode: postcode,
      billing_country: 'US',
      fulfillment,
      products: [{ name: goods === 'physical' ? 'Item' : 'Digital licence', price: total, product_id: `p-${rng.int(100, 999)}`, product_qty: '1', sku: `SKU-${rng.digits(6)}` }],
    };
  }

  maybeOrder(rng: Rng, m: WorldMid, sm: ScenarioMid, net: Network, c: { first6: string; last4: string }, cents: number, atMs: number): string | undefined {
    if (!rng.bool(this.sc.order_share)) return undefined;
    const o = this.order(rng, m, sm.goods, net, c, cents, atMs, [rng.pick(FIRST), rng.pick(LAST)]);
    this.orders.push(o);
    return o.order_id;
  }

  statuses(rng: Rng, receivedMs: number): { statuses: StatusChange[]; dnf_reason?: string } {
    const at = (ms: number) => iso(ms);
    const s: StatusChange[] = [{ at: at(receivedMs), status: 'New' }];
    const x = rng.next();
    if (x < 0.12) {
      s.push({ at: at(receivedMs + rng.float(2, 10) * DAY), status: 'Did Not Fight' });
      return { statuses: s, dnf_reason: rng.pick(DNF_REASONS) };
    }
    const pendingMs = receivedMs + rng.float(1, 4) * DAY;
    s.push({ at: at(pendingMs), status: 'Pending' });
    const y = rng.next();
    const outcomeMs = pendingMs + rng.float(30, 60) * DAY;
    let result: ChargebackStatus;
    if (y < 0.05) result = 'Result Unobtainable';
    else if (y < 0.5) result = 'Won';
    else if (y < 0.85) result = 'Lost';
    else result = 'Pre-Arbitration';
    s.push({ at: at(outcomeMs), status: result });
    if (result === 'Pre-Arbitration') s.push({ at: at(outcomeMs + rng.float(20, 40) * DAY), status: rng.bool(0.5) ? 'Won' : 'Lost' });
    return { statuses: s };
  }

  chargebacks_(m: WorldMid, sm: ScenarioMid, net: Network, month: Month, f: Figures): void {
    const rng = this.root.fork(`cb:${m.mid}:${month.key}:${net}`);
    const pool = REASON_POOLS[net];
    for (let i = 0; i < f.cb; i++) {
      const fraud = i < f.fraud;
      const rc = fraud ? rng.weighted(pool.fraud, pool.fraudW) : rng.weighted(pool.other, pool.otherW);
      const receivedMs = rng.float(month.startMs, month.endMs - 1000);
      const txMs = receivedMs - rng.float(5, 75) * DAY;
      const c = card(rng, net);
      const orderCents = ticketCents(rng, sm.average_ticket);
      // Most disputes are for the whole order; a few are partial, so amount matching cannot always work.
      const cents = rng.bool(0.05) ? Math.max(100, Math.round(orderCents * rng.float(0.3, 0.9))) : orderCents;
      const arn = rng.bool(0.9) ? `7${rng.digits(22)}` : undefined;
      const { statuses, dnf_reason } = this.statuses(rng, receivedMs);
      const cb: WorldChargeback = {
        chargeback_guid: rng.id('cb'),
        case_number: arn && rng.bool(0.1) ? arn : rng.digits(14),
        arn,
        mid: m.mid,
        card_brand: net,
        card_first_6: c.first6,
        card_last_4: c.last4,
        amount: cents / 100,
        currency: m.currency ?? 'USD',
        reason_code: rc.code,
        reason_description: rc.description,
        chargeback_date: ymd(receivedMs - rng.int(0, 3) * DAY),
        received_at: iso(receivedMs),
        due_date: ymd(receivedMs + 20 * DAY),
        transaction_at: iso(txMs),
        auth_code: rng.chars(6, UPPER_ALNUM),
        processor_transaction_id: rng.digits(12),
        alternate_transaction_id: `txn_${rng.hex(16)}`,
        statuses,
        dnf_reason,
        fraud: rc.fraud,
        rdr_resolved: false,
        source_order_id: undefined,
      };
      const oid = this.maybeOrder(rng, m, sm, net, c, orderCents, txMs);
      if (oid) cb.source_order_id = oid;
      this.chargebacks.push(cb);
      if (net === 'visa' && arn && !f.rdrPinned) this.rdrResolved(cb, m, month);
    }
  }

  /**
   * A share of Visa disputes is resolved through RDR: the service reports the dispute and an RDR case with
   * its ARN, Accepted, shortly before (never before the dispute's month); VAMP does not count them (docs/ratios.md). Drawn from a fork of its
   * own, so every other value of the world is what it was without it.
   */
  rdrResolved(cb: WorldChargeback, m: WorldMid, month: Month): void {
    const rng = this.root.fork(`rdr-resolved:${cb.chargeback_guid}`);
    if (!rng.bool(RDR_RESOLVED_SHARE)) return;
    cb.rdr_resolved = true;
    this.rdrs.push({
      rdr_guid: rng.id('rdr'),
      rdr_case_number: `RDR${rng.digits(12)}`,
      arn: cb.arn,
      mid: cb.mid,
      card_brand: cb.card_brand,
      card_first_6: cb.card_first_6,
      card_last_4: cb.card_last_4,
      amount: cb.amount,
      currency: cb.currency,
      merchant_descriptor: m.merchant_descriptor,
      auth_code: cb.auth_code,
      // Within the dispute's month: a neighbouring month may pin its RDR count, and the first starts the world.
      rdr_at: iso(Math.max(month.startMs, Date.parse(cb.received_at) - rng.float(1, 36) * HOUR)),
      rdr_resolution: 'Accepted',
      transaction_at: cb.transaction_at,
      source_order_id: cb.source_order_id,
    });
  }

  alerts_(m: WorldMid, sm: ScenarioMid, net: Network, month: Month, f: Figures): void {
    const kinds: Array<[PreventionSource, number]> = [['ethoca', f.ethoca], ['verifi', f.verifi], ['tc40', f.tc40]];
    for (const [kind, n] of kinds) {
      const rng = this.root.fork(`alert:${kind}:${m.mid}:${month.key}:${net}`);
      for (let i = 0; i < n; i++) {
        const atMs = rng.float(month.startMs, month.endMs - 1000);
        const txMs = atMs - rng.float(2, 45) * DAY;
        const c = card(rng, net);
        const cents = ticketCents(rng, sm.average_ticket);
        const arn = rng.bool(kind === 'ethoca' ? 0.7 : 0.9) ? `7${rng.digits(22)}` : undefined;
        const pendingMs = atMs + rng.float(1, 24) * HOUR;
        const completeMs = pendingMs + rng.float(0.5, 4) * DAY;
        const caseNo = kind === 'ethoca' ? `ETH${rng.chars(17, UPPER_ALNUM)}` : kind === 'verifi' ? `VRF${rng.digits(12)}` : arn && rng.bool(0.3) ? arn : `TC40${rng.digits(12)}`;
        const a: WorldPreventionAlert = {
          prevention_guid: rng.id('pre'),
          prevention_case_number: caseNo,
          arn,
          mid: m.mid,
          card_brand: net,
          card_first_6: c.first6,
          card_last_4: c.last4,
          amount: cents / 100,
          currency: m.currency ?? 'USD',
          merchant_descriptor: m.merchant_descriptor,
          prevention_type: kind,
          prevention_at: iso(atMs),
          transaction_at: iso(txMs),
          statuses: [
            { at: iso(atMs), status: 'New' },
            { at: iso(pendingMs), status: 'Pending' },
            { at: iso(completeMs), status: 'Complete' },
          ],
          source_order_id: undefined,
        };
        const oid = this.maybeOrder(rng, m, sm, net, c, cents, txMs);
        if (oid) a.source_order_id = oid;
        this.alerts.push(a);
      }
    }
  }

  rdrs_(m: WorldMid, sm: ScenarioMid, net: Network, month: Month, f: Figures): void {
    const rng = this.root.fork(`rdr:${m.mid}:${month.key}:${net}`);
    for (let i = 0; i < f.rdr; i++) {
      const atMs = rng.float(month.startMs, month.endMs - 1000);
      const txMs = atMs - rng.float(5, 60) * DAY;
      const c = card(rng, net);
      const cents = ticketCents(rng, sm.average_ticket);
      const arn = rng.bool(0.9) ? `7${rng.digits(22)}` : undefined;
      const a: WorldRdrAlert = {
        rdr_guid: rng.id('rdr'),
        rdr_case_number: `RDR${rng.digits(12)}`,
        arn,
        mid: m.mid,
        card_brand: net,
        card_first_6: c.first6,
        card_last_4: c.last4,
        amount: cents / 100,
        currency: m.currency ?? 'USD',
        merchant_descriptor: m.merchant_descriptor,
        auth_code: rng.chars(6, UPPER_ALNUM),
        rdr_at: iso(atMs),
        rdr_resolution: rng.bool(0.85) ? 'Accepted' : 'Declined',
        transaction_at: iso(txMs),
        source_order_id: undefined,
      };
      const oid = this.maybeOrder(rng, m, sm, net, c, cents, txMs);
      if (oid) a.source_order_id = oid;
      this.rdrs.push(a);
    }
  }

  ovs_(m: WorldMid, sm: ScenarioMid, net: Network, month: Month, f: Figures): void {
    const rng = this.root.fork(`ov:${m.mid}:${month.key}:${net}`);
    for (let i = 0; i < f.ov; i++) {
      const atMs = rng.float(month.startMs, month.endMs - 1000);
      const txMs = atMs - rng.float(3, 50) * DAY;
      const c = card(rng, net);
      const cents = ticketCents(rng, sm.average_ticket);
      const arn = rng.bool(0.8) ? `7${rng.digits(22)}` : undefined;
      const o: WorldOrderValidation = {
        order_validation_guid: rng.id('ov'),
        order_validation_type: rng.bool(0.7) ? 'order_insight' : 'consumer_clarity',
        received_at: iso(atMs),
        transaction_at: iso(txMs),
        mid: m.mid,
        card_brand: net,
        card_first_6: c.first6,
        card_last_4: c.last4,
        amount: cents / 100,
        currency: m.currency ?? 'USD',
        arn,
        auth_code: rng.chars(6, UPPER_ALNUM),
        source_order_id: undefined,
      };
      const oid = this.maybeOrder(rng, m, sm, net, c, cents, txMs);
      if (oid) o.source_order_id = oid;
      this.ovs.push(o);
    }
  }

  /** Orders with no case: ordinary sales before the start, spread over MIDs by volume. */
  unrelatedOrders(mids: WorldMid[], fromMs: number): void {
    const sms = this.sc.mids;
    const rng = this.root.fork('orders:unrelated');
    const weights = sms.map((m) => Math.max(1, m.monthly_transactions));
    const endMs = Math.max(fromMs + DAY, this.startMs);
    for (let i = 0; i < this.sc.orders; i++) {
      const k = rng.weighted(sms.map((_, j) => j), weights);
      const sm = sms[k];
      const mix = sm.mix ?? DEFAULT_MIX;
      const ws = NETWORKS.map((n) => mix[n] ?? 0);
      const net = rng.weighted(NETWORKS, ws.some((w) => w > 0) ? ws : ws.map(() => 1));
      const c = card(rng, net);
      const atMs = rng.float(fromMs, endMs - 1000);
      this.orders.push(this.order(rng, mids[k], sm.goods, net, c, ticketCents(rng, sm.average_ticket), atMs, [rng.pick(FIRST), rng.pick(LAST)]));
    }
  }
}

/** Builds the world for a seed, a clock start and a scenario. Pure: same inputs, same JSON. */
export function generateWorld(opts: GenerateOptions): World {
  const sc = parseScenario(opts.scenario ?? DEFAULT_SCENARIO);
  const startIso = toIsoUtc(String(opts.start), true);
  if (!startIso) throw new ValidationError('sandbox start', [`start: got ${JSON.stringify(opts.start)}; expected a UTC date-time such as 2026-11-01T00:00:00Z`]);
  if (!Number.isInteger(opts.seed)) throw new ValidationError('sandbox seed', [`seed: got ${JSON.stringify(opts.seed)}; expected a whole number`]);
  const startMs = Date.parse(startIso);
  const months = monthsOf(startMs, sc.history_months, sc.horizon_months);
  const keys = new Set(months.map((m) => m.key));
  const outside: string[] = [];
  sc.mids.forEach((m, i) => {
    for (const k of Object.keys(m.months ?? {})) {
      if (!keys.has(k)) outside.push(`mids.${i}.months.${k}: got a month outside the world (${months[0].key} to ${months[months.length - 1].key}); expected a month within history_months before and horizon_months after the start's month`);
    }
  });
  if (outside.length) throw new ValidationError('scenario', outside);

  const root = new Rng(`cbp-sandbox:${opts.seed}`);
  const b = new Builder(sc, root, months, startMs);
  const mids = sc.mids.map((m) => b.worldMid(m));
  sc.mids.forEach((sm, i) => {
    const m = mids[i];
    const plan = b.plan(sm);
    for (const n of NETWORKS) {
      for (const month of months) {
        const f = plan.get(month.key)![n];
        b.days(m.mid, n, month, f);
        b.chargebacks_(m, sm, n, month, f);
        b.alerts_(m, sm, n, month, f);
        b.rdrs_(m, sm, n, month, f);
        b.ovs_(m, sm, n, month, f);
      }
    }
  });
  const fromMs = months[0].startMs;
  b.unrelatedOrders(mids, fromMs);

  const by = <T>(key: (x: T) => string, tie: (x: T) => string) => (x: T, y: T) => {
    const a = key(x);
    const c = key(y);
    return a < c ? -1 : a > c ? 1 : tie(x) < tie(y) ? -1 : tie(x) > tie(y) ? 1 : 0;
  };
  b.chargebacks.sort(by((c) => c.received_at, (c) => c.chargeback_guid));
  b.alerts.sort(by((a) => a.prevention_at, (a) => a.prevention_guid));
  b.rdrs.sort(by((a) => a.rdr_at, (a) => a.rdr_guid));
  b.ovs.sort(by((a) => a.received_at, (a) => a.order_validation_guid));
  b.orders.sort(by((o) => o.order_date, (o) => o.order_id));

  return {
    seed: opts.seed,
    start: startIso,
    from: ymd(fromMs),
    until: ymd(months[months.length - 1].endMs),
    mids,
    daily: b.daily,
    chargebacks: b.chargebacks,
    alerts: b.alerts,
    rdrs: b.rdrs,
    orderValidations: b.ovs,
    orders: b.orders,
  };
}
