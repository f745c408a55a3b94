// Headroom, over-by and fee estimates (issue #28) on hand-computed cases, program by program: the oracle's
// (test/oracle/headroom.ts, test/oracle/fees.ts through test/oracle/explain.ts; the SQL judge behind `cbp ratios` and
// mart_ratios is held equal to it) and rules/headroom.ts' words.
import { describe, expect, it } from 'vitest';
import type { RatioRow } from './oracle/evaluate.ts';
import { explainRows } from './oracle/explain.ts';
import { headroomWords } from '../rules/headroom.ts';
import { judgeRows } from './oracle/judged.ts';
import { loadRules, parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import { ratioRow, type RatioRowFixture } from './ratios-fixtures.ts';

const rules = loadRules();
const row = (p: RatioRowFixture): RatioRow => ratioRow({ tc40_observed_from: '2024-01-01', ...p });
const one = (p: RatioRowFixture, set: RuleSet = rules) => explainRows([row(p)], set)[0];
const vamp = (num: number, den: number, extra: Partial<RatioRowFixture> = {}) =>
  one({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num, den, ...extra });
const ecp = (num: number, den: number) => one({ mid: 'm1', network: 'mastercard', program: 'ecp', month: '2026-06', num, den, denominator_month: '2026-05' });

describe('headroom: the fewest more events that meet every condition of the next level', () => {
  it('VAMP Excessive (1.5 %, ≥ 1,500): 2,000 over 200,000 in a closed month needs 1,000 more; words say so', () => {
    const x = vamp(2_000, 200_000);
    expect(x).toMatchObject({ next_level: 'excessive', headroom_count: 1_000, over_by_count: null, headroom_basis: 'closed_month', fee_estimate: null });
    expect(headroomWords(x)).toBe('1,000 more Visa disputes or TC40 fraud reports in 2026-06 would have reached VAMP Excessive');
  });

  it('VAMP: the count minimum can be what is missing (120 over 10,000 needs 1,380 to reach 1,500)', () => {
    expect(vamp(120, 10_000).headroom_count).toBe(1_380);
  });

  it('an open month is measured on its projected transactions (15 of 30 days: 100,000 → 200,000)', () => {
    const x = vamp(1_000, 100_000, { is_partial: true, days_covered: 15, days_in_month: 30 });
    expect(x).toMatchObject({ headroom_count: 2_000, headroom_basis: 'projected_month' });
    expect(headroomWords(x)).toBe('2,000 more Visa disputes or TC40 fraud reports this month reach VAMP Excessive (on the month\'s projected transactions)');
  });

  it('exactly at ECM\'s 1.5 % (≥) is reached: 149 of 10,000 needs 1 more; 150 is at ECM, and 1 fewer would have left it', () => {
    expect(ecp(149, 10_000)).toMatchObject({ level: null, next_level: 'ecm', headroom_count: 1, headroom_basis: 'previous_month' });
    expect(ecp(150, 10_000)).toMatchObject({ level: 'ecm', next_level: 'hecm', over_by_count: 1 });
  });

  it('ECM against HECM: 200 of 10,000 (2 %) is 51 over ECM and 100 short of HECM, on the previous month exactly', () => {
    const x = ecp(200, 10_000);
    expect(x).toMatchObject({ level: 'ecm', next_level: 'hecm', headroom_count: 100, over_by_count: 51, headroom_basis: 'previous_month' });
    expect(headroomWords(x)).toBe('51 fewer Mastercard chargebacks in 2026-06 would have left ECM; 100 more Mastercard chargebacks in 2026-06 would have reached HECM');
  });

  it('ECM\'s count minimum: 80 of 4,000 (2 %) is 20 short of 100; 120 of 4,000 is over ECM by 21 (falls below 100 at 99)', () => {
    expect(ecp(80, 4_000)).toMatchObject({ level: null, next_level: 'ecm', headroom_count: 20 });
    expect(ecp(120, 4_000)).toMatchObject({ level: 'ecm', over_by_count: 21 });
  });

  it('HECM at the top: over by the fewer of the ratio (3 %) and the 300 minimum, no next level', () => {
    expect(ecp(450, 10_000)).toMatchObject({ level: 'hecm', next_level: null, headroom_count: null, over_by_count: 151 });
  });

  it('a strict threshold (Discover, > 1 %): 100 of 10,000 needs 1 more; 130 is over by 30', () => {
    const d = (num: number) => one({ mid: 'd1', network: 'discover', program: 'discover_excessive', month: '2026-06', num, den: 10_000, denominator_month: '2026-05', month_transaction_count: 9_000 });
    expect(d(100)).toMatchObject({ level: null, next_level: 'excessive', headroom_count: 1 });
    expect(d(130)).toMatchObject({ level: 'excessive', over_by_count: 30, fee_estimate: 750, fee_currency: 'USD', fee_basis: 'events_above_threshold' });
  });

  it('American Express (> 1 %, three months in a row): 10 of 1,000 needs 1 more; a month met but not yet entered has 0 and says why', () => {
    const a = (month: string, num: number) => row({ mid: 'a1', network: 'american_express', program: 'amex_excessive', month, num, den: 1_000 });
    const [x] = explainRows([a('2026-06', 10)], rules);
    expect(x).toMatchObject({ level: null, next_level: 'excessive', headroom_count: 1, headroom_basis: 'closed_month' });
    const rows = explainRows([a('2026-04', 12), a('2026-05', 12)], rules);
    expect(rows[1]).toMatchObject({ level: null, state: 'watch', headroom_count: 0, reason: 'needs 3 consecutive months (2 so far)' });
    expect(headroomWords(rows[1])).toBe('every condition of American Express Excessive is met in 2026-05');
  });

  it('null where no number of events can get there: a transaction minimum or an amount condition not met', () => {
    const d = one({ mid: 'd1', network: 'discover', program: 'discover_excessive', month: '2026-06', num: 50, den: 1_000, denominator_month: '2026-05', month_transaction_count: 60 });
    expect(d).toMatchObject({ next_level: 'excessive', headroom_count: null, headroom_basis: null });
    // EFM: fraud amount 10,000 < 50,000 (events have no size to count on)
    const e = one({ mid: 'm1', network: 'mastercard', program: 'efm', month: '2026-06', num: 10, den: 10_000, numerator_amount: 10_000, denominator_month: '2026-05' });
    expect(e).toMatchObject({ next_level: 'efm', headroom_count: null });
    // …and once the amount is met, only the ratio: 0.5 % of 10,000 = 50, 10 there → 40
    const f = one({ mid: 'm1', network: 'mastercard', program: 'efm', month: '2026-06', num: 10, den: 10_000, numerator_amount: 60_000, denominator_month: '2026-05' });
    expect(f.headroom_count).toBe(40);
  });
});

describe('fee estimates (thresholds file fees)', () => {
  it('VAMP Excessive at USD 8 a counted event by default; the other reading counts only those above the threshold', () => {
    const at = (set: RuleSet = rules) => one({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num: 3_500, den: 200_000 }, set);
    expect(at()).toMatchObject({ level: 'excessive', fee_estimate: 28_000, fee_currency: 'USD', fee_basis: 'every_counted_event', over_by_count: 501 });
    const other = loadRulesWith({ enable: ['visa.vamp.excessive.fee.above_threshold'], disable: ['visa.vamp.excessive.fee.every_count'] });
    expect(at(other)).toMatchObject({ fee_estimate: 4_000, fee_basis: 'events_above_threshold' });
  });

  it('no fee before enforcement (2025-10-01)', () => {
    expect(one({ mid: 'v1', network: 'visa', program: 'vamp', month: '2025-08', num: 5_000, den: 200_000 })).toMatchObject({ level: 'excessive', fee_estimate: null });
  });

  it('a projection at a level gets the fee of its projected counts', () => {
    const rows = [row({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num: 2_000, den: 100_000, is_partial: true, days_covered: 15, days_in_month: 30 }),
      row({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num: 4_000, den: 200_000, is_partial: true, is_projection: true, days_covered: 15, days_in_month: 30 })];
    const [, p] = explainRows(rows, rules);
    expect(p).toMatchObject({ is_projection: true, level: 'excessive', fee_estimate: 32_000 });
  });

  it('two readings of one fee in force at once are refused, naming both and how to choose', () => {
    expect(() => loadRulesWith({ enable: ['visa.vamp.excessive.fee.above_threshold'] })).toThrow(/visa.vamp.excessive.fee.every_count.*visa.vamp.excessive.fee.above_threshold.*disable/);
  });
});

function loadRulesWith(file: Record<string, unknown>) {
  return parseThresholds(JSON.stringify(file), 't.json');
}

describe('notices say it in words', () => {
  it('a watch notice says how many more events reach the level; a projected one how many fewer stay below, and its fee', () => {
    const set = parseThresholds(JSON.stringify({ watch: { fraction: 0.8, notify: true } }), 't.json');
    // 1.3 % of 200,000 (2,600) is in VAMP's watch band (0.8 × 1.5 % = 1.2 %, 0.8 × 1,500 = 1,200): 400 more reach 1.5 %.
    const watch = judgeRows([row({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num: 2_600, den: 200_000 })], [],
      { rules: set, notifySince: '2026-06', now: '2026-07-01T00:00:00Z', known: new Map() }).notices.find((n) => n.kind === 'watch')!;
    expect(watch.message).toMatch(/; 400 more Visa disputes or TC40 fraud reports in 2026-06 would have reached VAMP Excessive$/);
    // Half a month at 1,000 of 100,000 (1 %), projected 3,600 of 200,000 (1.8 %): 601 fewer would stay below; USD 28,800.
    const rows = [row({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num: 1_000, den: 100_000, is_partial: true, days_covered: 15, days_in_month: 30 }),
      row({ mid: 'v1', network: 'visa', program: 'vamp', month: '2026-06', num: 3_600, den: 200_000, is_partial: true, is_projection: true, days_covered: 15, days_in_month: 30 })];
    const projected = judgeRows(rows, [], { rules, notifySince: '2026-06', now: '2026-06-16T00:00:00Z', known: new Map() }).notices.find((n) => n.kind === 'projected')!;
    expect(projected.message).toMatch(/; 601 fewer Visa disputes or TC40 fraud reports than projected for 2026-06 would have left VAMP Excessive; projected fee USD 28,800 \(every counted event; an estimate, not an invoice\)$/);
  });
});
