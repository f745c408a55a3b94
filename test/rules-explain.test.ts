// Worked examples for every rule of issue #13 and the explanation each ratio row carries (the oracle's, test/oracle/explain.ts):
// entry, the boundary exactly at the threshold, exit after N months, HECM to ECM, EFM over ECM, Discover's
// month, a VAMP group of MIDs, the watch band, regions.
import { describe, expect, it } from 'vitest';
import { evaluateRows, withGroups, type RatioRow } from './oracle/evaluate.ts';
import { explainRows } from './oracle/explain.ts';
import { judgeRows } from './oracle/judged.ts';
import { loadRules, parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import { ratioRow, type RatioRowFixture } from './ratios-fixtures.ts';

/** Rows here carry TC40 coverage from 2024-01-01 (every month complete). */
const row = (p: RatioRowFixture): RatioRow => ratioRow({ tc40_observed_from: '2024-01-01', ...p });
const rules = loadRules();
const ecp = (month: string, num: number, den: number, mid = 'm1') => row({ mid, network: 'mastercard', program: 'ecp', month, num, den });
const efm = (month: string, num: number, den: number, amount: number, mid = 'm1') =>
  row({ mid, network: 'mastercard', program: 'efm', month, num, den, numerator_amount: amount });
const levels = (rows: RatioRow[], set: RuleSet = rules) => evaluateRows(rows, set).map((l) => l.level);

describe('Mastercard ECM: entry, boundary, exit', () => {
  it('enters ECM in the first month at ≥ 1.5 % and ≥ 100, exactly at the threshold included', () => {
    const [x] = explainRows([ecp('2026-01', 150, 10_000)], rules);
    expect(x).toMatchObject({ level: 'ecm', state: 'level', next_level: 'hecm', next_threshold: 0.03, region: 'US', region_source: 'default', monitored_as: 'm1' });
    expect(x.closeness).toBeCloseTo(0.5, 12);
    expect(x.reason).toBe('ratio 1.50 % < 3.00 %; count 150 < 300 minimum');
    // a hair below: no level, measured against ECM
    const [y] = explainRows([ecp('2026-01', 150, 10_001)], rules);
    expect(y).toMatchObject({ level: null, state: 'watch', next_level: 'ecm', next_threshold: 0.015, reason: 'ratio 1.50 % < 1.50 %' });
    expect(y.closeness).toBeLessThan(1);
  });

  it('names the count floor that stopped a high ratio: "count 43 < 100 minimum"', () => {
    const [x] = explainRows([ecp('2026-01', 43, 1_000)], rules);
    expect(x).toMatchObject({ level: null, next_level: 'ecm', reason: 'count 43 < 100 minimum' });
  });

  it('leaves ECM after 3 consecutive months below, saying how many so far', () => {
    const rows = [ecp('2026-01', 200, 10_000), ecp('2026-02', 10, 10_000), ecp('2026-03', 10, 10_000), ecp('2026-04', 10, 10_000)];
    const x = explainRows(rows, rules);
    expect(x.map((r) => r.level)).toEqual(['ecm', 'ecm', 'ecm', null]);
    expect(x[1].reason).toBe('ECM kept until 3 consecutive months below (1 so far); ratio 0.10 % < 3.00 %; count 10 < 300 minimum');
    expect(x[3]).toMatchObject({ state: 'clear', next_level: 'ecm', reason: 'ratio 0.10 % < 1.50 %; count 10 < 100 minimum' });
  });
});

describe('Mastercard HECM to ECM', () => {
  it('moves from HECM to ECM in the first month below 3 % but at or above 1.5 %', () => {
    const rows = [ecp('2026-01', 400, 10_000), ecp('2026-02', 200, 10_000), ecp('2026-03', 200, 10_000)];
    expect(levels(rows)).toEqual(['hecm', 'ecm', 'ecm']);
  });

  it('keeps HECM through months below ECM too, and leaves both after 3 such months', () => {
    const rows = [ecp('2026-01', 400, 10_000), ecp('2026-02', 10, 10_000), ecp('2026-03', 10, 10_000), ecp('2026-04', 10, 10_000)];
    expect(levels(rows)).toEqual(['hecm', 'hecm', 'hecm', null]);
  });

  it('without step_down_at_once (the old rule) HECM would have stayed', () => {
    const set = parseThresholds(JSON.stringify({ rules: [{ ...rules.rules.find((r) => r.id === 'mastercard.ecp.hecm'), step_down_at_once: false }] }), 't.json');
    expect(levels([ecp('2026-01', 400, 10_000), ecp('2026-02', 200, 10_000)], set)).toEqual(['hecm', 'hecm']);
  });
});

describe('Mastercard EFM', () => {
  it('needs ≥ 0.5 %, fraud amount ≥ 50,000 and ≥ 1,000 transactions of M−1; never certain (3-D Secure)', () => {
    const [x] = explainRows([efm('2026-01', 60, 10_000, 60_000)], rules);
    expect(x).toMatchObject({ level: 'efm', state: 'level', certainty: 'unconfirmed', certainty_note: '3-D Secure share not in the data' });
    expect(x.reason).toBe('3-D Secure share not in the data');
    const [y] = explainRows([efm('2026-01', 60, 10_000, 40_000)], rules);
    expect(y).toMatchObject({ level: null, next_level: 'efm', reason: 'amount 40,000 < 50,000 minimum' });
    const [z] = explainRows([efm('2026-01', 6, 999, 60_000)], rules);
    expect(z.reason).toBe('transactions 999 < 1,000 minimum');
  });

  it('leaves EFM only after 3 consecutive months below', () => {
    const rows = [efm('2026-01', 60, 10_000, 60_000), efm('2026-02', 1, 10_000, 100), efm('2026-03', 1, 10_000, 100), efm('2026-04', 1, 10_000, 100)];
    expect(levels(rows)).toEqual(['efm', 'efm', 'efm', null]);
  });

  it('is assessed over ECM in a month both are met: the ECP row says superseded_by efm', () => {
    const rows = [ecp('2026-01', 200, 10_000), efm('2026-01', 60, 10_000, 60_000), ecp('2026-02', 200, 10_000), efm('2026-02', 1, 10_000, 100)];
    const x = explainRows(rows, rules);
    const jan = x.find((r) => r.program === 'ecp' && r.month === '2026-01')!;
    expect(jan).toMatchObject({ level: 'ecm', superseded_by: 'efm' });
    expect(jan.reason).toMatch(/^assessed as EFM/);
    expect(x.find((r) => r.program === 'ecp' && r.month === '2026-02')).toMatchObject({ level: 'ecm', superseded_by: null });
  });

  it('says so in the ECM notice of a month EFM is met too, and not in the EFM one', () => {
    const rows = [ecp('2026-01', 200, 10_000), efm('2026-01', 60, 10_000, 60_000)];
    const { notices } = judgeRows(rows, [], { rules, notifySince: '2026-01', now: '2026-02-01T00:00:00Z', known: new Map() });
    const ecm = notices.find((n) => n.program === 'ecp' && n.kind === 'reached')!;
    expect(ecm.message).toMatch(/level ecm reached in 2026-01: .*; EFM is met too this month, and Mastercard assesses EFM instead$/);
    expect(notices.find((n) => n.program === 'efm' && n.kind === 'reached')!.message).not.toMatch(/assesses/);
  });
});

describe('Discover', () => {
  const d = (num: number, prevTx: number, monthTx: number) =>
    row({ mid: 'd1', network: 'discover', program: 'discover_excessive', month: '2026-02', num, den: prevTx, denominator_month: '2026-01', month_transaction_count: monthTx });
  it('counts the 100 net sales in M, the month of the chargebacks, not in the denominator\'s M−1', () => {
    // 101 chargebacks over 9,000 sales of January: 1.12 %; February itself has 5,000 sales
    expect(levels([d(101, 9_000, 5_000)])).toEqual(['excessive']);
    // February with 80 sales: not excessive, whatever January held
    const [x] = explainRows([d(101, 9_000, 80)], rules);
    expect(x).toMatchObject({ level: null, reason: 'transactions in the month 80 < 100 minimum' });
    // exactly 1 % is not above
    expect(explainRows([d(90, 9_000, 5_000)], rules)[0].reason).toBe('ratio 1.00 % not above 1.00 %; count 90 < 100 minimum');
  });
});

describe('Amex: needs consecutive months', () => {
  it('says how many months so far', () => {
    const a = (month: string) => row({ mid: 'a1', network: 'american_express', program: 'amex_excessive', month, num: 11, den: 1_000 });
    const x = explainRows([a('2026-01'), a('2026-02'), a('2026-03')], rules);
    expect(x.map((r) => [r.state, r.reason])).toEqual([
      ['watch', 'needs 3 consecutive months (1 so far)'],
      ['watch', 'needs 3 consecutive months (2 so far)'],
      ['level', null],
    ]);
  });
});

describe('Visa VAMP group of MIDs', () => {
  const set = parseThresholds(JSON.stringify({ groups: { acme: { mids: ['v1', 'v2'] } }, mids: { v3: { region: 'EU' } } }), 't.json');
  const v = (mid: string, month: string, num: number, den: number) => row({ mid, network: 'visa', program: 'vamp', month, num, den });
  it('judges the group on the sums of numerators and denominators', () => {
    // v1: 1,000 / 50,000 = 2 %; v2: 600 / 30,000 = 2 %: neither reaches 1,500 alone, the group's 1,600 / 80,000 does
    const rows = [v('v1', '2026-05', 1_000, 50_000), v('v2', '2026-05', 600, 30_000)];
    expect(levels(rows, rules)).toEqual([null, null]);
    const g = evaluateRows(rows, set);
    expect(g.map((l) => [l.mid, l.level])).toEqual([['acme', 'excessive']]);
    expect(withGroups(rows, set)[0]).toMatchObject({ mid: 'acme', numerator: 1_600, denominator: 80_000, ratio: 0.02 });
    const x = explainRows(rows, set);
    expect(x.map((r) => [r.mid, r.monitored_as, r.level, r.ratio])).toEqual([['v1', 'acme', 'excessive', 0.02], ['v2', 'acme', 'excessive', 0.02]]);
    expect(x[0]).toMatchObject({ certainty: 'approximate', region: 'US', region_source: 'default' });
    expect(x[0].certainty_note).toMatch(/card-not-present/);
  });

  it('says the MID\'s own region and its source', () => {
    const [x] = explainRows([v('v3', '2026-05', 10, 50_000)], set);
    expect(x).toMatchObject({ region: 'EU', region_source: 'mid', monitored_as: 'v3', state: 'clear' });
  });

  it('refuses a MID in two groups', () => {
    expect(() => parseThresholds(JSON.stringify({ groups: { a: { mids: ['x'] }, b: { mids: ['x'] } } }), 't.json')).toThrow(/two groups/);
  });
});

describe('watch band', () => {
  it('is 80 % of every condition by default: ratio and count both scaled', () => {
    // ECM × 0.8: ≥ 1.2 % and ≥ 80 chargebacks
    expect(explainRows([ecp('2026-01', 120, 10_000)], rules)[0].state).toBe('watch');
    expect(explainRows([ecp('2026-01', 119, 10_000)], rules)[0].state).toBe('clear');
    expect(explainRows([ecp('2026-01', 79, 5_000)], rules)[0].state).toBe('clear'); // 1.58 % but 79 < 80
  });

  it('follows the thresholds file\'s fraction', () => {
    const set = parseThresholds(JSON.stringify({ watch: { fraction: 0.5 } }), 't.json');
    expect(explainRows([ecp('2026-01', 75, 10_000)], set)[0].state).toBe('watch');
    expect(explainRows([ecp('2026-01', 75, 10_000)], rules)[0].state).toBe('clear');
  });
});

describe('rows no rule reads', () => {
  it('have no state, level or reason but still their region and TC40 coverage', () => {
    const [x] = explainRows([row({ mid: 'm1', network: 'mastercard', program: 'monthly', month: '2026-01', num: 10, den: 100 })], rules);
    expect(x).toMatchObject({ state: null, level: null, reason: null, region: 'US', monitored_as: 'm1', tc40_observed_from: '2024-01-01', numerator_complete: true });
  });
});

describe('thresholds file: watch and groups', () => {
  it('takes a watch fraction above 0 up to 1 and says what is wrong otherwise', () => {
    expect(parseThresholds(JSON.stringify({ watch: { fraction: 1 } }), 't.json').watch).toEqual({ fraction: 1, notify: false });
    expect(() => parseThresholds(JSON.stringify({ watch: { fraction: 0 } }), 't.json')).toThrow(/watch\.fraction/);
    expect(() => parseThresholds(JSON.stringify({ watch: { fraction: 1.5 } }), 't.json')).toThrow(/watch\.fraction/);
    expect(() => parseThresholds(JSON.stringify({ watch: { percent: 80 } }), 't.json')).toThrow(/watch/);
  });

  it('defaults a group to VAMP and refuses an empty one or an unknown program', () => {
    expect(parseThresholds(JSON.stringify({ groups: { g: { mids: ['a', 'b'] } } }), 't.json').groups).toEqual({ g: { mids: ['a', 'b'], programs: ['vamp'] } });
    expect(() => parseThresholds(JSON.stringify({ groups: { g: { mids: [] } } }), 't.json')).toThrow(/groups\.g\.mids/);
    expect(() => parseThresholds(JSON.stringify({ groups: { g: { mids: ['a'], programs: ['nope'] } } }), 't.json')).toThrow(/groups\.g\.programs/);
  });

  it('holds each corrected rule with its source in the defaults', () => {
    const byId = new Map(rules.rules.map((r) => [r.id, r]));
    expect(byId.get('mastercard.efm.excessive')).toMatchObject({ months_to_leave: 3, supersedes: ['ecp'], certainty: 'unconfirmed', certainty_note: '3-D Secure share not in the data' });
    expect(byId.get('mastercard.ecp.hecm')).toMatchObject({ step_down_at_once: true });
    expect(byId.get('discover.excessive.dispute')!.conditions).toContainEqual({ field: 'month_transaction_count', comparison: '>=', value: 100 });
    for (const id of ['visa.vamp.excessive.2025', 'visa.vamp.excessive.2026', 'visa.vamp.excessive.lac', 'visa.vamp.excessive.cemea']) {
      expect(byId.get(id)).toMatchObject({ certainty: 'approximate' });
      expect(byId.get(id)!.certainty_note).toMatch(/card-not-present.*Compelling Evidence 3\.0/);
    }
    expect(byId.get('visa.vamp.excessive.2025')!.note).toMatch(/acquirer/);
    for (const id of ['mastercard.efm.excessive', 'mastercard.ecp.hecm', 'discover.excessive.dispute', 'visa.vamp.excessive.2025']) {
      expect(byId.get(id)!.note).toMatch(/as summarised by/);
    }
  });
});
