// The scenario generator: (seed, start, scenario) -> World, pure and deterministic. Every random draw comes
// from a stream forked by a label naming what it is for (MID, month, network, kind), so pinning one month
// leaves every other month's draws unchanged, and the same inputs give the same world byte for byte.
// Entities are built as object literals with every key present (optional ones undefined, which JSON omits):
// V8 keeps such objects in fast mode; a conditional spread inside a literal made them slow dictionaries (the
// one unconditional spread of a fixed shape in cases.ts keeps them fast).
//
// Months are whole UTC calendar months: `history_months` before the start's month, the start's month, and
// `horizon_months` after it. A case is counted in the month it is received; statuses move on afterwards, in
// days after receipt, so advancing the sandbox clock reveals the changes.
//
// The parts: calendar.ts (months, timestamps), rates.ts (rate tables), figures.ts (each month's counts and
// daily transactions), cases.ts (chargebacks, alerts, RDR cases, order validations, one drawCase()),
// orders-builder.ts (merchant orders), payments.ts (cards, amounts, ARNs).
import { NETWORKS, toIsoUtc } from '../contract/common.ts';
import { ValidationError } from '../lib/errors.ts';
import { monthsOf, ymd } from './calendar.ts';
import { type CaseLists, drawCases } from './cases.ts';
import { drawDaily, planMid } from './figures.ts';
import { drawUnrelatedOrders } from './orders-builder.ts';
import { Rng } from './rng.ts';
import { DEFAULT_SCENARIO, type Scenario, type ScenarioInput, type ScenarioMid, parseScenario } from './scenario.ts';
import type { DailyStat, World, WorldMid } from './world.ts';

export interface GenerateOptions {
  seed: number;
  /** ISO time the sandbox clock starts at (either spelling of the spec; a bare date is midnight UTC) */
  start: string;
  /** a parsed scenario or a raw one (validated here); the built-in one when omitted */
  scenario?: Scenario | ScenarioInput;
}

/** A MID as the service knows it; a gateway is drawn when the scenario names none. */
function worldMid(root: Rng, m: ScenarioMid): WorldMid {
  const rng = root.fork(`mid:${m.mid}:identity`);
  return {
    mid: m.mid,
    alias: m.alias ?? `Merchant ${m.mid}`,
    gateways: m.gateways ?? [`gw-${rng.hex(8)}`],
    merchant_descriptor: m.descriptor ?? (m.alias ?? `MERCHANT ${m.mid}`).toUpperCase().slice(0, 22),
    region: m.region,
    currency: m.currency,
  };
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
  const daily: DailyStat[] = [];
  const out: CaseLists = { chargebacks: [], alerts: [], rdrs: [], ovs: [], orders: [] };
  const mids = sc.mids.map((m) => worldMid(root, m));
  sc.mids.forEach((sm, i) => {
    const mid = mids[i];
    const plan = planMid(root, months, sm);
    for (const net of NETWORKS) {
      for (const month of months) {
        const f = plan.get(month.key)![net];
        drawDaily(root, mid.mid, net, month, f, daily);
        drawCases({ root, mid, sm, net, month, orderShare: sc.order_share, out }, f);
      }
    }
  });
  const fromMs = months[0].startMs;
  drawUnrelatedOrders(root, sc, mids, fromMs, startMs, out.orders);

  const by = <T>(key: (x: T) => string, tie: (x: T) => string) => (x: T, y: T) => {
    const a = key(x);
    const c = key(y);
    return a < c ? -1 : a > c ? 1 : tie(x) < tie(y) ? -1 : tie(x) > tie(y) ? 1 : 0;
  };
  out.chargebacks.sort(by((c) => c.received_at, (c) => c.chargeback_guid));
  out.alerts.sort(by((a) => a.prevention_at, (a) => a.prevention_guid));
  out.rdrs.sort(by((a) => a.rdr_at, (a) => a.rdr_guid));
  out.ovs.sort(by((a) => a.received_at, (a) => a.order_validation_guid));
  out.orders.sort(by((o) => o.order_date, (o) => o.order_id));

  return {
    seed: opts.seed,
    start: startIso,
    from: ymd(fromMs),
    until: ymd(months[months.length - 1].endMs),
    mids,
    daily,
    chargebacks: out.chargebacks,
    alerts: out.alerts,
    rdrs: out.rdrs,
    orderValidations: out.ovs,
    orders: out.orders,
  };
}
