import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MerchantOrderSchema, NETWORKS } from '../contract/index.ts';
import { ValidationError, NotFoundError } from '../lib/errors.ts';
import { generateWorld } from '../sandbox/generate.ts';
import { REASON_CODES } from '../sandbox/reason-codes.ts';
import { Rng } from '../sandbox/rng.ts';
import { DEFAULT_SCENARIO, DEFAULT_SCENARIO_INPUT, type ScenarioInput, loadScenario, parseScenario } from '../sandbox/scenario.ts';
import type { World } from '../sandbox/world.ts';

const START = '2026-11-22T10:00:00Z';
const world = generateWorld({ seed: 7, start: START });

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function txIn(w: World, mid: string, net: string, month: string): number {
  let n = 0;
  for (const d of w.daily) if (d.mid === mid && d.network === net && d.day.startsWith(month)) n += d.transaction_count;
  return n;
}
const monthsOf = (w: World) => [...new Set(w.daily.map((d) => d.day.slice(0, 7)))].sort();

describe('seeded generator', () => {
  it('gives the same world, byte for byte, for the same seed, start and scenario', () => {
    const again = generateWorld({ seed: 7, start: START, scenario: DEFAULT_SCENARIO });
    expect(JSON.stringify(again)).toBe(JSON.stringify(world));
  });

  it('gives a different world for a different seed', () => {
    const other = generateWorld({ seed: 8, start: START });
    expect(JSON.stringify(other)).not.toBe(JSON.stringify(world));
    expect(other.chargebacks[0].chargeback_guid).not.toBe(world.chargebacks[0].chargeback_guid);
  });

  it('covers whole months: history before the start month, the start month, and the horizon', () => {
    expect(world.start).toBe(START);
    expect(world.from).toBe('2026-05-01');
    expect(world.until).toBe('2027-03-01');
    expect(monthsOf(world)).toEqual(['2026-05', '2026-06', '2026-07', '2026-08', '2026-09', '2026-10', '2026-11', '2026-12', '2027-01', '2027-02']);
    for (const c of world.chargebacks) {
      expect(c.received_at >= '2026-05-01T00:00:00Z' && c.received_at < '2027-03-01T00:00:00Z').toBe(true);
    }
  });

  it('keeps the built-in world small: a few thousand chargebacks', () => {
    expect(world.mids).toHaveLength(8);
    expect(world.chargebacks.length).toBeGreaterThan(1000);
    expect(world.chargebacks.length).toBeLessThan(6000);
  });

  // The sandbox's own default start too, so the built-in stories hold whatever the clock.
  // By name: it.each formats every argument it is given, and a world is megabytes.
  const byName = new Map<string, World>([['seed 7, Nov 2026', world], ['seed 42, Jan 2026', generateWorld({ seed: 42, start: '2026-01-01T00:00:00Z' })]]);
  const worlds = [...byName.keys()];

  it.each(worlds)('puts one MID over Mastercard ECM (>= 100 chargebacks and >= 1.5%% of previous-month transactions): %s', (name) => {
    const world = byName.get(name)!;
    const months = monthsOf(world);
    const over = new Set<string>();
    for (const m of world.mids) {
      for (let i = 1; i < months.length; i++) {
        const cb = world.chargebacks.filter((c) => c.mid === m.mid && c.card_brand === 'mastercard' && c.received_at.startsWith(months[i])).length;
        const prev = txIn(world, m.mid, 'mastercard', months[i - 1]);
        if (cb >= 100 && prev > 0 && cb / prev >= 0.015) over.add(m.mid);
      }
    }
    expect([...over]).toEqual(['860100000101']);
  });

  it.each(worlds)('puts one MID over Visa VAMP (CEMEA: disputes + TC40 >= 2.2%%, >= 150, >= USD 75,000): %s', (name) => {
    const world = byName.get(name)!;
    const over = new Set<string>();
    for (const m of world.mids) {
      for (const month of monthsOf(world)) {
        const disputes = world.chargebacks.filter((c) => c.mid === m.mid && c.card_brand === 'visa' && c.received_at.startsWith(month) && !c.rdr_resolved);
        const tc40 = world.alerts.filter((a) => a.mid === m.mid && a.card_brand === 'visa' && a.prevention_type === 'tc40' && a.prevention_at.startsWith(month));
        const count = disputes.length + tc40.length;
        const amount = [...disputes, ...tc40].reduce((s, x) => s + x.amount, 0);
        const tx = txIn(world, m.mid, 'visa', month);
        const cemea = m.region === 'CEMEA';
        const hit = cemea ? count / tx >= 0.022 && count >= 150 && amount >= 75_000 : count / tx >= 0.015 && count >= 1500;
        if (hit) over.add(m.mid);
      }
    }
    expect([...over]).toEqual(['860100000102']);
  });

  it.each(worlds)('puts one MID over Amex excessive chargebacks (> 1%% of the month\'s charges, 3 months running): %s', (name) => {
    const world = byName.get(name)!;
    const over = new Set<string>();
    const months = monthsOf(world);
    for (const m of world.mids) {
      let run = 0;
      for (const month of months) {
        const cb = world.chargebacks.filter((c) => c.mid === m.mid && c.card_brand === 'american_express' && c.received_at.startsWith(month)).length;
        const tx = txIn(world, m.mid, 'american_express', month);
        run = tx > 0 && cb / tx > 0.01 ? run + 1 : 0;
        if (run >= 3) over.add(m.mid);
      }
    }
    expect([...over]).toEqual(['860100000107']);
  });

  it.each(worlds)('puts one MID over Discover excessive dispute (> 1%% of previous-month sales, >= 100 chargebacks): %s', (name) => {
    const world = byName.get(name)!;
    const months = monthsOf(world);
    const over = new Set<string>();
    for (const m of world.mids) {
      for (let i = 1; i < months.length; i++) {
        const cb = world.chargebacks.filter((c) => c.mid === m.mid && c.card_brand === 'discover' && c.received_at.startsWith(months[i])).length;
        const prev = txIn(world, m.mid, 'discover', months[i - 1]);
        if (cb >= 100 && prev >= 100 && cb / prev > 0.01) over.add(m.mid);
      }
    }
    expect([...over]).toEqual(['860100000108']);
  });

  it.each(worlds)('resolves about a tenth of Visa disputes through RDR, each with an Accepted RDR case of its ARN just before: %s', (name) => {
    const world = byName.get(name)!;
    const visa = world.chargebacks.filter((c) => c.card_brand === 'visa' && c.arn);
    const resolved = visa.filter((c) => c.rdr_resolved);
    expect(resolved.length / visa.length).toBeGreaterThan(0.06);
    expect(resolved.length / visa.length).toBeLessThan(0.14);
    expect(world.chargebacks.filter((c) => c.rdr_resolved && (c.card_brand !== 'visa' || !c.arn))).toEqual([]);
    const byArn = new Map(world.rdrs.filter((a) => a.arn).map((a) => [a.arn!, a]));
    for (const c of resolved) {
      const a = byArn.get(c.arn!);
      expect(a).toMatchObject({ mid: c.mid, rdr_resolution: 'Accepted', amount: c.amount, card_last_4: c.card_last_4 });
      expect(a!.rdr_at < c.received_at).toBe(true);
      expect(a!.rdr_at.slice(0, 7)).toBe(c.received_at.slice(0, 7));
    }
  });

  it('adds no RDR case to a month that pins its RDR count, even for a dispute early in the next month', () => {
    // The months a world spans follow from its start alone: one probe finds them for every seed.
    const start = '2026-06-01T00:00:00Z';
    const months = monthsOf(generateWorld({ seed: 1, start })).slice(1, -1);
    const scenario = {
      ...DEFAULT_SCENARIO_INPUT,
      mids: DEFAULT_SCENARIO_INPUT.mids.map((m) => (m.mid === '860100000102' ? { ...m, months: Object.fromEntries(months.map((k) => [k, { visa: { rdr: 0 } }])) } : m)),
    };
    for (let seed = 1; seed <= 8; seed++) {
      const w = generateWorld({ seed, start, scenario });
      expect(monthsOf(w).slice(1, -1)).toEqual(months);
      expect(w.rdrs.filter((a) => a.mid === '860100000102' && a.card_brand === 'visa' && months.includes(a.rdr_at.slice(0, 7)))).toEqual([]);
      expect(w.rdrs.every((a) => a.rdr_at >= `${w.from}T00:00:00Z`)).toBe(true);
    }
  });

  it.each(worlds)('keeps healthy MIDs well under every threshold, and the hovering one just under: %s', (name) => {
    const world = byName.get(name)!;
    const months = monthsOf(world);
    for (const mid of ['860100000103', '860100000104', '860100000105', '860100000106']) {
      for (let i = 1; i < months.length; i++) {
        const cb = world.chargebacks.filter((c) => c.mid === mid && c.card_brand === 'mastercard' && c.received_at.startsWith(months[i])).length;
        expect(cb / txIn(world, mid, 'mastercard', months[i - 1])).toBeLessThan(0.015);
      }
    }
    const hover = world.chargebacks.filter((c) => c.mid === '860100000103' && c.card_brand === 'mastercard' && c.received_at.startsWith(months[3])).length;
    expect(hover / txIn(world, '860100000103', 'mastercard', months[2])).toBeGreaterThan(0.01);
  });

  it('gives chargebacks network-correct reason codes, fraud flags and plausible card prefixes', () => {
    const bin = { visa: /^4\d{5}$/, mastercard: /^5[1-5]\d{4}$/, american_express: /^3[47]\d{4}$/, discover: /^6011\d{2}$/ };
    for (const c of world.chargebacks) {
      const code = REASON_CODES[c.card_brand].find((r) => r.code === c.reason_code);
      expect(code, `${c.card_brand} ${c.reason_code}`).toBeDefined();
      expect(c.reason_description).toBe(code!.description);
      expect(c.fraud).toBe(code!.fraud);
      expect(c.card_first_6).toMatch(bin[c.card_brand]);
      expect(c.card_last_4).toMatch(/^\d{4}$/);
    }
    const mcFraud = world.chargebacks.filter((c) => c.card_brand === 'mastercard' && c.fraud).map((c) => c.reason_code);
    expect(new Set(mcFraud)).toEqual(new Set(['4837', '4863']));
    expect(world.chargebacks.some((c) => c.reason_code === '10.4')).toBe(true);
    expect(world.chargebacks.some((c) => c.reason_code === 'UA02')).toBe(true);
    expect(world.chargebacks.some((c) => c.reason_code === 'F29')).toBe(true);
  });

  it('uses the service identifier format, 23-digit ARNs and case numbers', () => {
    for (const c of world.chargebacks) {
      expect(c.chargeback_guid).toMatch(/^cb_[0-9a-f]{32}$/);
      if (c.arn !== undefined) expect(c.arn).toMatch(/^\d{23}$/);
      expect(c.case_number).toMatch(/^\d+$/);
    }
    for (const a of world.alerts) expect(a.prevention_guid).toMatch(/^pre_[0-9a-f]{32}$/);
    for (const a of world.rdrs) expect(a.rdr_guid).toMatch(/^rdr_[0-9a-f]{32}$/);
    for (const o of world.orderValidations) expect(o.order_validation_guid).toMatch(/^ov_[0-9a-f]{32}$/);
    const ids = new Set(world.chargebacks.map((c) => c.chargeback_guid));
    expect(ids.size).toBe(world.chargebacks.length);
  });

  it('moves chargeback statuses over time: New at receipt, then Pending, then a result; DNF with a reason', () => {
    const seen = new Set<string>();
    for (const c of world.chargebacks) {
      expect(c.statuses[0]).toEqual({ at: c.received_at, status: 'New' });
      for (let i = 1; i < c.statuses.length; i++) expect(c.statuses[i].at > c.statuses[i - 1].at).toBe(true);
      const last = c.statuses[c.statuses.length - 1].status;
      seen.add(last);
      if (last === 'Did Not Fight') expect(c.dnf_reason).toBeTruthy();
      else expect(c.statuses[1].status).toBe('Pending');
      if (c.statuses.some((s) => s.status === 'Pre-Arbitration')) expect(['Won', 'Lost']).toContain(last);
      expect(c.received_at.slice(0, 10) >= c.chargeback_date).toBe(true);
      expect(c.transaction_at < c.received_at).toBe(true);
    }
    for (const s of ['Won', 'Lost', 'Did Not Fight', 'Result Unobtainable']) expect(seen).toContain(s);
    expect(world.chargebacks.some((c) => c.statuses.some((s) => s.status === 'Pre-Arbitration'))).toBe(true);
  });

  it('moves prevention alerts New -> Pending -> Complete and has all three sources', () => {
    for (const a of world.alerts) {
      expect(a.statuses.map((s) => s.status)).toEqual(['New', 'Pending', 'Complete']);
      expect(a.statuses[0].at).toBe(a.prevention_at);
    }
    expect(new Set(world.alerts.map((a) => a.prevention_type))).toEqual(new Set(['ethoca', 'verifi', 'tc40']));
    expect(world.rdrs.length).toBeGreaterThan(0);
    expect(world.orderValidations.length).toBeGreaterThan(0);
  });

  it('gives a share of cases a merchant order with the same card and (usually) the same amount', () => {
    const orders = new Map(world.orders.map((o) => [o.order_id, o]));
    expect(orders.size).toBe(world.orders.length);
    const linked = world.chargebacks.filter((c) => c.source_order_id);
    expect(linked.length).toBeGreaterThan(world.chargebacks.length * 0.2);
    expect(linked.length).toBeLessThan(world.chargebacks.length * 0.5);
    let same = 0;
    for (const c of linked) {
      const o = orders.get(c.source_order_id!)!;
      expect(o.cc_first_6).toBe(c.card_first_6);
      expect(o.cc_last_4).toBe(c.card_last_4);
      expect(o.transaction_merchant_id).toBe(c.mid);
      expect(o.order_date).toBe(c.transaction_at);
      if (Number(o.order_total) === c.amount) same++;
    }
    expect(same / linked.length).toBeGreaterThan(0.9);
    for (const a of world.alerts.filter((x) => x.source_order_id)) {
      const o = orders.get(a.source_order_id!)!;
      expect([o.cc_first_6, o.cc_last_4, Number(o.order_total)]).toEqual([a.card_first_6, a.card_last_4, a.amount]);
    }
    // unrelated orders are there too
    const linkedIds = new Set([...world.chargebacks, ...world.alerts, ...world.rdrs, ...world.orderValidations].map((x) => x.source_order_id).filter(Boolean));
    expect(world.orders.length - linkedIds.size).toBe(DEFAULT_SCENARIO.orders);
  });

  it('gives merchant orders the order data interface accepts', () => {
    for (const o of world.orders) {
      const r = MerchantOrderSchema.safeParse(o);
      expect(r.success, `${o.order_id}: ${r.success ? '' : r.error.message}`).toBe(true);
    }
    const digital = world.orders.filter((o) => o.transaction_merchant_id === '860100000105');
    expect(digital.length).toBeGreaterThan(0);
    for (const o of digital) expect(o.fulfillment).toHaveProperty('proof_of_service');
    for (let i = 1; i < world.orders.length; i++) expect(world.orders[i].order_date >= world.orders[i - 1].order_date).toBe(true);
  });

  it('reproduces pinned figures exactly and leaves the other months as they were', () => {
    const base: ScenarioInput = { mids: [{ mid: 'M1', monthly_transactions: 2000 }] };
    const pinned: ScenarioInput = {
      mids: [{ mid: 'M1', monthly_transactions: 2000, months: { '2026-09': { visa: { transactions: 1234, transaction_amount: 45678.9, chargebacks: 42, fraud_chargebacks: 11, tc40: 9, ethoca: 3, verifi: 2, rdr: 4 } } } }],
    };
    const a = generateWorld({ seed: 3, start: START, scenario: base });
    const b = generateWorld({ seed: 3, start: START, scenario: pinned });
    const visaSep = b.chargebacks.filter((c) => c.card_brand === 'visa' && c.received_at.startsWith('2026-09'));
    expect(visaSep).toHaveLength(42);
    expect(visaSep.filter((c) => c.fraud)).toHaveLength(11);
    const days = b.daily.filter((d) => d.network === 'visa' && d.day.startsWith('2026-09'));
    expect(days.reduce((s, d) => s + d.transaction_count, 0)).toBe(1234);
    expect(days.reduce((s, d) => s + Math.round(d.transaction_amount * 100), 0)).toBe(4567890);
    const alerts = (t: string) => b.alerts.filter((x) => x.prevention_type === t && x.card_brand === 'visa' && x.prevention_at.startsWith('2026-09')).length;
    expect([alerts('tc40'), alerts('ethoca'), alerts('verifi')]).toEqual([9, 3, 2]);
    expect(b.rdrs.filter((x) => x.card_brand === 'visa' && x.rdr_at.startsWith('2026-09'))).toHaveLength(4);
    const others = (w: World) => JSON.stringify(w.chargebacks.filter((c) => !c.received_at.startsWith('2026-09')));
    expect(others(b)).toBe(others(a));
  });
});

describe('Rng', () => {
  it('repeats its stream for a seed and forks independent streams', () => {
    const a = new Rng(5);
    const b = new Rng(5);
    const xs = Array.from({ length: 20 }, () => a.uint32());
    expect(Array.from({ length: 20 }, () => b.uint32())).toEqual(xs);
    expect(new Rng(5).fork('x').uint32()).not.toBe(new Rng(5).fork('y').uint32());
    const r = new Rng(1);
    for (let i = 0; i < 1000; i++) {
      const v = r.int(3, 9);
      expect(v >= 3 && v <= 9 && Number.isInteger(v)).toBe(true);
      expect(r.next()).toBeLessThan(1);
    }
    expect(r.hex(32)).toMatch(/^[0-9a-f]{32}$/);
    expect(r.id('cb')).toMatch(/^cb_[0-9a-f]{32}$/);
    const mean = Array.from({ length: 2000 }, () => r.poisson(4)).reduce((s, x) => s + x, 0) / 2000;
    expect(mean).toBeGreaterThan(3.5);
    expect(mean).toBeLessThan(4.5);
  });
});

describe('scenario file', () => {
  const write = (name: string, body: unknown) => {
    const f = path.join(tmp, name);
    fs.writeFileSync(f, typeof body === 'string' ? body : JSON.stringify(body));
    return f;
  };
  const errorOf = (fn: () => unknown): ValidationError => {
    try {
      fn();
    } catch (e) {
      return e as ValidationError;
    }
    throw new Error('expected an error');
  };

  it('loads a JSON file with defaults for what it leaves out', () => {
    const f = write('ok.json', { mids: [{ mid: 'A1', profile: 'hovering' }] });
    const s = loadScenario(f);
    expect(s.history_months).toBe(6);
    expect(s.horizon_months).toBe(3);
    expect(s.mids[0]).toMatchObject({ mid: 'A1', profile: 'hovering', region: 'US', currency: 'USD' });
  });

  it('loads a YAML file too', () => {
    const f = write('ok.yaml', 'mids:\n  - mid: Y1\n    monthly_transactions: 100\n');
    expect(loadScenario(f).mids[0].mid).toBe('Y1');
  });

  it('names the field of a bad pinned figure', () => {
    const f = write('bad.json', { mids: [{ mid: 'A1', months: { '2026-09': { visa: { chargebacks: -2 } } } }] });
    const e = errorOf(() => loadScenario(f));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain('mids.0.months.2026-09.visa.chargebacks');
    expect(e.message).toContain(f);
  });

  it('names a misspelt network, an unknown key and a bad month key', () => {
    const e1 = errorOf(() => parseScenario({ mids: [{ mid: 'A1', months: { '2026-09': { amex: { chargebacks: 2 } } } }] }));
    expect(e1.issues.join('\n')).toMatch(/mids\.0\.months\.2026-09.*amex/);
    const e2 = errorOf(() => parseScenario({ mids: [{ mid: 'A1', chargebaks: 3 }] }));
    expect(e2.issues.join('\n')).toMatch(/mids\.0.*chargebaks/);
    const e3 = errorOf(() => parseScenario({ mids: [{ mid: 'A1', months: { '2026-13': {} } }] }));
    expect(e3.issues.join('\n')).toMatch(/mids\.0\.months.*YYYY-MM/);
  });

  it('rejects more fraud chargebacks than chargebacks, a missing MID list and duplicate MIDs', () => {
    const e1 = errorOf(() => parseScenario({ mids: [{ mid: 'A1', months: { '2026-09': { visa: { chargebacks: 2, fraud_chargebacks: 3 } } } }] }));
    expect(e1.issues[0]).toMatch(/^mids\.0\.months\.2026-09\.visa\.fraud_chargebacks: /);
    const e2 = errorOf(() => parseScenario({}));
    expect(e2.issues[0]).toMatch(/^mids: /);
    const e3 = errorOf(() => parseScenario({ mids: [{ mid: 'A1' }, { mid: 'A1' }] }));
    expect(e3.issues[0]).toMatch(/^mids\.1\.mid: .*unique/);
  });

  it('rejects a pinned month outside the world, naming it', () => {
    const e = errorOf(() => generateWorld({ seed: 1, start: START, scenario: { mids: [{ mid: 'A1', months: { '2020-01': { visa: { chargebacks: 1 } } } }] } }));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toContain('mids.0.months.2020-01');
  });

  it('says which file is not JSON, and which cannot be read', () => {
    const f = write('broken.json', '{"mids": [');
    const e = errorOf(() => loadScenario(f));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toMatch(/not valid JSON/);
    expect(errorOf(() => loadScenario(path.join(tmp, 'missing.json')))).toBeInstanceOf(NotFoundError);
  });

  it('accepts every network name of the contract in a pinned month', () => {
    const months = Object.fromEntries(NETWORKS.map((n) => [n, { chargebacks: 1 }]));
    expect(() => parseScenario({ mids: [{ mid: 'A1', months: { '2026-09': months } }] })).not.toThrow();
  });
});
