// `cbp ratios` headroom, over-by and fee (issue #28) as a user sees them, on a small store with hand-computed figures:
// the --json fields of the kept table and the words under the table.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cbp } from './activities-fixtures.ts';
import { cleanup, insertChargebacks, insertEvents, insertStats, tc40, tempStore } from './ratios-fixtures.ts';

let dir = '';
let env: Record<string, string>;

type Row = Record<string, unknown>;
async function ratios(args: string[]): Promise<Row[]> {
  const r = await cbp(['ratios', ...args, '--json'], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as Row[];
}
/** The text output with wrapped lines joined again. */
async function text(args: string[]): Promise<string> {
  const r = await cbp(['ratios', ...args], env);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.replace(/\n {4,}/g, ' ');
}
const FIELDS = ['state', 'level', 'next_level', 'headroom_count', 'over_by_count', 'headroom_basis', 'fee_estimate', 'fee_currency', 'fee_basis'];
const pick = (r: Row | undefined) => Object.fromEntries(FIELDS.map((f) => [f, r?.[f]]));

beforeAll(async () => {
  const t = await tempStore();
  dir = t.dir;
  await insertStats(t.store, [
    // c1 (CEMEA): VAMP in 2026-01, 217 disputes (USD 400 each: 86,800 ≥ 75,000) over 7,989 transactions.
    { mid: 'c1', network: 'visa', month: '2026-01', cb: 217, tx: 7_989 },
    // m1: ECP, chargebacks over the previous month's transactions; 2026-02 to its 14th of 28 days.
    { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 20_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 250, tx: 25_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-02', cb: 330, tx: 12_000, endDay: 14 },
    // v2 (US): VAMP in 2026-02 to its 14th, 1,400 disputes over 40,000 transactions.
    { mid: 'v2', network: 'visa', month: '2026-02', cb: 1_400, tx: 40_000, endDay: 14 },
  ]);
  await insertChargebacks(t.store, [
    { mid: 'c1', network: 'visa', received: '2026-01-10', n: 217, amount: 400 },
    { mid: 'v2', network: 'visa', received: '2026-02-05', n: 1_400 },
  ]);
  // TC40s captured since 2025-12-01 (another MID's report): the VAMP months above count them, none there.
  await insertEvents(t.store, 'prevention.new', [tc40('z9', 'g0', '2025-12-01T00:00:00Z')], { at: '2025-12-01T00:00:00Z' });
  const thresholds = path.join(dir, 'thresholds.yaml');
  fs.writeFileSync(thresholds, 'mids:\n  c1: { region: CEMEA }\n');
  await evaluateAlerts(t.store, { asOf: '2026-02-15T00:00:00Z', rules: loadRules(thresholds) });
  t.store.close();
  env = { CBP_DB_PATH: t.dbPath, CBP_SNAPSHOT_PATH: path.join(dir, 'none.duckdb'), CBP_LOG_LEVEL: 'silent', CBP_THRESHOLDS_FILE: thresholds };
}, 60_000);
afterAll(() => cleanup(undefined, dir));

describe('cbp ratios --json: headroom_count, over_by_count, headroom_basis, fee_estimate', () => {
  for (const how of [[] as string[]]) {
    it('hand-computed for VAMP CEMEA, ECP (closed, to date, projected) and VAMP US to date', async () => {
      const jan = await ratios(['--month', '2026-01', ...how]);
      // 217 / 7,989 = 2.72 % ≥ 2.2 %: over by ⌊217 − 0.022 × 7,989 (175.758)⌋ + 1 = 42 (the 150 minimum: 68);
      // fee USD 8 × every one of the 217 = 1,736.
      expect(pick(jan.find((r) => r.mid === 'c1' && r.program === 'vamp'))).toEqual({
        state: 'level', level: 'excessive', next_level: null, headroom_count: null, over_by_count: 42, headroom_basis: 'closed_month',
        fee_estimate: 1_736, fee_currency: 'USD', fee_basis: 'every_counted_event',
      });
      // 250 / 20,000 (2025-12) = 1.25 %, watch: ECM's 1.5 % is 300, 50 more (the 100 minimum is met).
      expect(pick(jan.find((r) => r.mid === 'm1' && r.program === 'ecp' && r.metric === 'count'))).toEqual({
        state: 'watch', level: null, next_level: 'ecm', headroom_count: 50, over_by_count: null, headroom_basis: 'previous_month',
        fee_estimate: null, fee_currency: null, fee_basis: null,
      });
      const feb = await ratios(['--month', '2026-02', ...how]);
      const m1 = feb.filter((r) => r.mid === 'm1' && r.program === 'ecp' && r.metric === 'count');
      // To date 330 / 25,000 (2026-01) = 1.32 %: 375 − 330 = 45 more; exact (the previous month's denominator).
      expect(pick(m1.find((r) => !r.is_projection))).toMatchObject({ state: 'watch', next_level: 'ecm', headroom_count: 45, over_by_count: null, headroom_basis: 'previous_month' });
      // Projected 660 / 25,000 = 2.64 %, ECM: over by 660 − 375 + 1 = 286 (the 100 minimum: 561); HECM's 3 % is 750,
      // 90 more. No ECP fee by default (not modelled).
      expect(pick(m1.find((r) => r.is_projection))).toEqual({
        state: 'level', level: 'ecm', next_level: 'hecm', headroom_count: 90, over_by_count: 286, headroom_basis: 'previous_month',
        fee_estimate: null, fee_currency: null, fee_basis: null,
      });
      const v2 = feb.filter((r) => r.mid === 'v2' && r.program === 'vamp');
      // To date 1,400 of 40,000 transactions in 14 of 28 days (watch: 3.5 %, and 1,400 ≥ 80 % of 1,500): on 80,000
      // projected, 2.2 % is 1,760, 360 more (the 1,500 minimum: 100; on the 40,000 so far it would be 100).
      expect(pick(v2.find((r) => !r.is_projection))).toMatchObject({ state: 'watch', next_level: 'excessive', headroom_count: 360, over_by_count: null, headroom_basis: 'projected_month' });
      // Projected 2,800 / 80,000 = 3.5 %: over by 2,800 − 1,760 + 1 = 1,041 (the minimum: 1,301); fee 8 × 2,800 = 22,400.
      expect(pick(v2.find((r) => r.is_projection))).toEqual({
        state: 'level', level: 'excessive', next_level: null, headroom_count: null, over_by_count: 1_041, headroom_basis: 'projected_month',
        fee_estimate: 22_400, fee_currency: 'USD', fee_basis: 'every_counted_event',
      });
    }, 60_000);
  }
});

describe('cbp ratios: headroom and fees in words under the table', () => {
  it('says how many more events reach the next level, how many fewer would have left a level, and the fee', async () => {
    const jan = await text(['--month', '2026-01']);
    expect(jan).toMatch(/^headroom \(estimates\):$/m);
    expect(jan).toContain('\n  c1 visa vamp: 42 fewer Visa disputes or TC40 fraud reports in 2026-01 would have left VAMP Excessive; estimated fee USD 1,736 (every counted event; an estimate, not an invoice)\n');
    expect(jan).toContain('\n  m1 mc ecp: 50 more Mastercard chargebacks in 2026-01 would have reached ECM\n');
    const feb = await text(['--month', '2026-02']);
    expect(feb).toContain('\n  m1 mc ecp: 45 more Mastercard chargebacks this month reach ECM\n');
    expect(feb).toContain('\n  m1 mc ecp PROJ: 286 fewer Mastercard chargebacks than projected for 2026-02 would have left ECM; 90 more Mastercard chargebacks than projected for 2026-02 reach HECM\n');
    expect(feb).toContain('\n  v2 visa vamp: 360 more Visa disputes or TC40 fraud reports this month reach VAMP Excessive (on the month\'s projected transactions)\n');
    expect(feb).toContain('\n  v2 visa vamp PROJ: 1,041 fewer Visa disputes or TC40 fraud reports than projected for 2026-02 would have left VAMP Excessive; projected fee USD 22,400 (every counted event; an estimate, not an invoice)\n');
  }, 60_000);

  it('names what the rules do not judge, and why, under the table (rules/defaults.json not_modelled)', async () => {
    const r = await cbp(['ratios', '--month', '2026-01'], env);
    expect(r.code, r.stderr).toBe(0);
    const note = /^Not modelled[^\n]*(?:\n  [^\n]*)*/m.exec(r.stdout)?.[0];
    expect(note?.replace(/\n  /g, ' ')).toBe(
      'Not modelled (docs/ratios.md "Not modelled"): VAMP enumeration needs authorization data, which the service does not report; ' +
        'Visa Merchant Elevated Risk Program: no numeric criteria published; Mastercard ECP fees rise with the months in the program, ' +
        'and the published per-month tiers differ by acquirer: no default fee; American Express Fraud Full Recourse and Immediate ' +
        'Chargeback programs: criteria not published.',
    );
    for (const line of r.stdout.split('\n')) expect(line.length, line).toBeLessThanOrEqual(120);
  }, 60_000);
});
