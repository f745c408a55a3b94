// The seeded worlds, pinned byte for byte. A digest of every collection of a generated world, recorded from
// the generator as it stood before the refactoring of issue #11 (sandbox/generate.ts split into modules, one
// drawCase()): any change to a draw's order, a key's order or a value shows here, naming the collection.
// A deliberate change to the generator updates these constants and says so in its commit.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generateWorld } from '../sandbox/generate.ts';
import { DEFAULT_SCENARIO_INPUT, type ScenarioInput } from '../sandbox/scenario.ts';
import type { World } from '../sandbox/world.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The world as the sandbox serves it (JSON.stringify: every collection in order, keys in their order):
 *  the whole world's SHA-256, and per field its value or, for a collection, its length and digest. */
function digests(w: World): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(w)) out[k] = Array.isArray(v) ? `${v.length} ${sha256(JSON.stringify(v)).slice(0, 16)}` : v;
  out.world = sha256(JSON.stringify(w));
  return out;
}

/** Every branch of the generator at once: identity drawn (no alias, gateways or descriptor), another
 *  currency, digital goods, a network left out of the mix, per-network profiles, every order linked, and
 *  pinned months (fraud over the drawn count, RDR pinned so no dispute adds one, zero transactions). */
const BRANCHES: ScenarioInput = {
  history_months: 4,
  horizon_months: 1,
  orders: 40,
  order_share: 1,
  mids: [
    { mid: 'B1', monthly_transactions: 6000, profile: 'breaching', currency: 'EUR', goods: 'digital', average_ticket: 120 },
    {
      mid: 'B2',
      monthly_transactions: 9000,
      profile: 'hovering',
      network_profiles: { visa: 'breaching', discover: 'healthy' },
      mix: { visa: 0.6, mastercard: 0.3, american_express: 0.1, discover: 0 },
      months: {
        '2026-08': { visa: { rdr: 2, fraud_chargebacks: 40 }, mastercard: { transactions: 0, chargebacks: 3 } },
        '2026-09': { visa: { transactions: 2500, transaction_amount: 98765.43, chargebacks: 30, fraud_chargebacks: 7, tc40: 5, ethoca: 4, verifi: 3, rdr: 0, order_validations: 6 } },
      },
    },
    { mid: 'B3', alias: 'Tiny Shop', monthly_transactions: 200, mix: { discover: 1 } },
  ],
};

const WORLDS: Array<{ name: string; make: () => World; expected: Record<string, unknown> }> = [
  {
    name: "the built-in world at the sandbox's defaults (seed 42, 2026-01-01)",
    make: () => generateWorld({ seed: 42, start: '2026-01-01T00:00:00Z' }),
    expected: {
      seed: 42,
      start: '2026-01-01T00:00:00Z',
      from: '2025-07-01',
      until: '2026-05-01',
      mids: '8 7b39d415c9d5cefb',
      daily: '8816 f1643c1f2e6339f8',
      chargebacks: '5337 90e60ce4262f31ab',
      alerts: '3276 32e62a34c6fbe0d1',
      rdrs: '412 8a8ad4b7e92ab939',
      orderValidations: '546 5eeda638a2815354',
      orders: '3573 6b1608663aa8257a',
      world: '457a279ffd685df39fedd4562095d529610e2e309161a1bd6c04258c434fbf3c',
    },
  },
  {
    name: "the demo's world (seed 42, 2025-12-01)",
    make: () => generateWorld({ seed: 42, start: '2025-12-01' }),
    expected: {
      seed: 42,
      start: '2025-12-01T00:00:00Z',
      from: '2025-06-01',
      until: '2026-04-01',
      mids: '8 7b39d415c9d5cefb',
      daily: '8816 b857910df6bfac44',
      chargebacks: '5327 4ac7ea17e685b75e',
      alerts: '3234 1927648d32f776b0',
      rdrs: '409 43c3ac68df0bce7d',
      orderValidations: '545 37c6da9bb542eeba',
      orders: '3546 a4bef1d2017eb039',
      world: '623b4375ad4021233f20784f93f83745901c902a9c8c18cf72cb627ed61fa4e8',
    },
  },
  {
    name: "the tests' world (seed 7, 2026-11-22T10:00:00Z)",
    make: () => generateWorld({ seed: 7, start: '2026-11-22T10:00:00Z' }),
    expected: {
      seed: 7,
      start: '2026-11-22T10:00:00Z',
      from: '2026-05-01',
      until: '2027-03-01',
      mids: '8 7b39d415c9d5cefb',
      daily: '8816 0f3f5449a9101f23',
      chargebacks: '5193 c877642e0b7839a9',
      alerts: '3179 fbc4451bed9ddd5a',
      rdrs: '410 3fe124701893c5e1',
      orderValidations: '551 fa37524cf9f067fd',
      orders: '3507 4734cfbbd611456b',
      world: 'b7d2e4500824212ecb32dfe7e8fcee1e5aaa7c7fcdc2ee4ffb1f7297119500b5',
    },
  },
  {
    name: 'the built-in scenario with a pinned month (seed 5, 2026-06-15T12:34:56Z)',
    make: () =>
      generateWorld({
        seed: 5,
        start: '2026-06-15T12:34:56Z',
        scenario: {
          ...DEFAULT_SCENARIO_INPUT,
          mids: DEFAULT_SCENARIO_INPUT.mids.map((m) => (m.mid === '860100000102' ? { ...m, months: { '2026-05': { visa: { rdr: 0, chargebacks: 50 } } } } : m)),
        },
      }),
    expected: {
      seed: 5,
      start: '2026-06-15T12:34:56Z',
      from: '2025-12-01',
      until: '2026-10-01',
      mids: '8 7b39d415c9d5cefb',
      daily: '8816 eb60b8a24f5ff216',
      chargebacks: '5240 649612bbfda05a5d',
      alerts: '3248 c3fa810f5ae11062',
      rdrs: '381 7bd0a63bd01aa6b0',
      orderValidations: '551 edd5feeaf6c617ae',
      orders: '3516 569996ffe4d38631',
      world: '087134174176042e2f919532c6758c80a4b775adbfa5ac8b9a09274c1af18910',
    },
  },
  {
    name: 'a scenario through every branch (seed 3, 2026-10-03T08:00:00Z)',
    make: () => generateWorld({ seed: 3, start: '2026-10-03T08:00:00Z', scenario: BRANCHES }),
    expected: {
      seed: 3,
      start: '2026-10-03T08:00:00Z',
      from: '2026-06-01',
      until: '2026-12-01',
      mids: '3 7c42498fa8e6f2ad',
      daily: '1433 8647752ad09328ac',
      chargebacks: '965 353152e5208d7292',
      alerts: '1109 8cae5e7d1e99cc52',
      rdrs: '116 1291fb8b24ee2c2d',
      orderValidations: '129 58e40184c6a36ef9',
      orders: '2322 1e822bd4dfbd446f',
      world: '4465fb55b8889a7a99f39fd232cab7c6c937ad62975e260f3fafdad4e1253769',
    },
  },
];

describe('seeded worlds', () => {
  it.each(WORLDS)('stay byte-identical: $name', ({ make, expected }) => {
    expect(digests(make())).toEqual(expected);
  });
});
