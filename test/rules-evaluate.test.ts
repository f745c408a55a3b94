// The oracle's rule evaluation on hand-made ratio rows: levels, count floors, streaks, effective dates, projections.
import { describe, expect, it } from 'vitest';
import { evaluateRows, evaluateSeries, meets, rulesFor, type RatioRow } from './oracle/evaluate.ts';
import { evaluateProjections, projectValue, runRateFactor } from './oracle/projection.ts';
import { loadRules, parseThresholds } from '../rules/thresholds.ts';
import { ratioRow } from './ratios-fixtures.ts';

const row = ratioRow;
const rules = loadRules();
const mc = (month: string, num: number, den: number | null, extra: Partial<RatioRow> = {}) =>
  row({ mid: 'm1', network: 'mastercard', program: 'ecp', month, num, den, ...extra });

describe('Mastercard ECP levels', () => {
  it('rates 400 chargebacks at 2 % as ECM, not HECM (HECM needs both 3 % and 300)', () => {
    const [l] = evaluateRows([mc('2026-01', 400, 20_000)], rules);
    expect(l.level).toBe('ecm');
    expect(l.met).toEqual(['ecm']);
  });

  it('rates 300 chargebacks at 3 % as HECM', () => {
    const [l] = evaluateRows([mc('2026-01', 300, 10_000)], rules);
    expect(l.level).toBe('hecm');
    expect(l.met.sort()).toEqual(['ecm', 'hecm']);
  });

  it('needs the count floor: 99 chargebacks at 9.9 % reach no level', () => {
    expect(evaluateRows([mc('2026-01', 99, 1_000)], rules)[0].level).toBeNull();
    expect(evaluateRows([mc('2026-01', 100, 1_000)], rules)[0].level).toBe('ecm');
  });

  it('compares unrounded ratios with ≥: exactly 1.5 % reaches ECM, a hair below does not', () => {
    expect(evaluateRows([mc('2026-01', 150, 10_000)], rules)[0].level).toBe('ecm');
    expect(evaluateRows([mc('2026-01', 150, 10_001)], rules)[0].level).toBeNull();
  });

  it('leaves ECM only after 3 months in a row below, and a gap month counts as below', () => {
    const series = [
      mc('2026-01', 200, 10_000), // 2 % ECM
      mc('2026-02', 10, 10_000),
      mc('2026-03', 10, 10_000),
      mc('2026-04', 10, 10_000), // third month below: out
      mc('2026-05', 10, 10_000),
    ];
    expect(evaluateRows(series, rules).map((l) => l.level)).toEqual(['ecm', 'ecm', 'ecm', null, null]);
    const gap = [mc('2026-01', 200, 10_000), mc('2026-05', 10, 10_000)];
    expect(evaluateRows(gap, rules).map((l) => [l.month, l.level])).toEqual([
      ['2026-01', 'ecm'], ['2026-02', 'ecm'], ['2026-03', 'ecm'], ['2026-04', null], ['2026-05', null],
    ]);
  });

  it('keeps a level through a month-to-date month that does not meet it yet', () => {
    const series = [mc('2026-01', 200, 10_000), mc('2026-02', 10, 10_000), mc('2026-03', 10, 10_000), mc('2026-04', 5, 10_000, { is_partial: true })];
    expect(evaluateRows(series, rules).map((l) => l.level)).toEqual(['ecm', 'ecm', 'ecm', 'ecm']);
  });

  it('gives no level to a month without a ratio', () => {
    expect(evaluateRows([mc('2026-01', 500, null)], rules)[0].level).toBeNull();
    expect(evaluateRows([mc('2026-01', 500, 0)], rules)[0].level).toBeNull();
  });

  it('keeps the legacy early warning off by default and on when enabled', () => {
    expect(evaluateRows([mc('2026-01', 120, 10_000)], rules)[0].level).toBeNull();
    const on = parseThresholds(JSON.stringify({ enable: ['mastercard.ecp.early_warning'] }), 't.json');
    expect(evaluateRows([mc('2026-01', 120, 10_000)], on)[0].level).toBe('early_warning');
    // > 1.0 %: exactly 1 % is not above
    expect(evaluateRows([mc('2026-01', 100, 10_000)], on)[0].level).toBeNull();
  });
});

describe('other networks', () => {
  it('enters Amex only after 3 consecutive months above 1 %', () => {
    const a = (month: string, num: number) => row({ mid: 'a1', network: 'american_express', program: 'amex_excessive', month, num, den: 1_000 });
    const levels = evaluateRows([a('2026-01', 11), a('2026-02', 11), a('2026-03', 11), a('2026-04', 10), a('2026-05', 11)], rules);
    expect(levels.map((l) => l.level)).toEqual([null, null, 'excessive', null, null]);
  });

  it('needs Discover > 1 %, ≥ 100 chargebacks and ≥ 100 net sales', () => {
    const d = (num: number, den: number) => row({ mid: 'd1', network: 'discover', program: 'discover_excessive', month: '2026-02', num, den });
    expect(evaluateRows([d(101, 10_000)], rules)[0].level).toBe('excessive');
    expect(evaluateRows([d(100, 10_000)], rules)[0].level).toBeNull(); // exactly 1 % is not above
    expect(evaluateRows([d(99, 100)], rules)[0].level).toBeNull(); // count floor
    // Net sales are M's own transactions (the ratio divides by M−1's): 150 over 10,000 (1.5 %) with 99 sales in M
    // fails on net sales alone; with 100 it is excessive.
    const sales = (n: number) => ({ ...d(150, 10_000), month_transaction_count: n });
    expect(evaluateRows([sales(99)], rules)[0].level).toBeNull();
    expect(evaluateRows([sales(100)], rules)[0].level).toBe('excessive');
  });

  it('applies VAMP 2.2 % until 2026-03-31 and 1.5 % from 2026-04-01', () => {
    const v = (month: string) => row({ mid: 'v1', network: 'visa', program: 'vamp', month, num: 2_000, den: 100_000 }); // 2 %
    expect(evaluateRows([v('2026-03')], rules)[0].level).toBeNull();
    expect(evaluateRows([v('2026-04')], rules)[0].level).toBe('excessive');
    // before VAMP began, nothing
    expect(evaluateRows([v('2025-05')], rules)[0].level).toBeNull();
  });

  it('applies the CEMEA variant to a MID whose region is CEMEA (count and amount)', () => {
    const set = parseThresholds('mids:\n  v2:\n    region: CEMEA\n', 't.yaml');
    const v = (num: number, amount: number) => row({ mid: 'v2', network: 'visa', program: 'vamp', month: '2026-05', num, den: 7_000, numerator_amount: amount });
    expect(evaluateRows([v(160, 80_000)], set)[0].level).toBe('excessive'); // 2.29 %, 160, 80k
    expect(evaluateRows([v(160, 70_000)], set)[0].level).toBeNull(); // amount below 75k
    expect(rulesFor(set, 'v2').some((r) => r.id === 'visa.vamp.excessive.2026')).toBe(false);
  });

  it('judges retired VDMP only in months it was in force', () => {
    const v = (month: string) => row({ mid: 'v1', network: 'visa', program: 'vdmp', month, num: 1_000, den: 50_000 }); // 2 %
    expect(evaluateRows([v('2025-03')], rules)[0].level).toBe('excessive');
    expect(evaluateRows([v('2025-04')], rules)[0].level).toBeNull();
  });

  it('honours a per-MID tighter internal level', () => {
    const set = parseThresholds(
      JSON.stringify({
        mids: { m9: { rules: [{ id: 'internal.m9', network: 'mastercard', program: 'ecp', level: 'internal_watch', rank: 0, comparison: '>=', ratio_threshold: 0.005 }] } },
      }),
      't.json',
    );
    expect(evaluateRows([row({ mid: 'm9', network: 'mastercard', program: 'ecp', month: '2026-01', num: 60, den: 10_000 })], set)[0].level).toBe('internal_watch');
    expect(evaluateRows([row({ mid: 'm8', network: 'mastercard', program: 'ecp', month: '2026-01', num: 60, den: 10_000 })], set)[0].level).toBeNull();
  });
});

describe('projection', () => {
  it('scales month-to-date figures by days in month over days covered', () => {
    expect(runRateFactor(10, 30)).toBe(3);
    expect(projectValue(60, 10, 30)).toBe(180);
    expect(Number.isNaN(runRateFactor(0, 30))).toBe(true);
  });

  it('judges a projected month as if closed, on top of the observed history, and labels it', () => {
    const rows = [
      mc('2026-03', 20, 10_000),
      mc('2026-04', 60, 10_000, { is_partial: true, days_covered: 10, days_in_month: 30 }),
      mc('2026-04', 180, 10_000, { is_partial: true, is_projection: true, days_covered: 10, days_in_month: 30 }),
    ];
    expect(evaluateRows(rows, rules).map((l) => l.level)).toEqual([null, null]);
    const p = evaluateProjections(rows, rules);
    expect(p).toHaveLength(1);
    expect(p[0]).toMatchObject({ month: '2026-04', level: 'ecm', is_projection: true });
  });

  it('meets() never passes a row without a ratio', () => {
    const rule = rules.rules.find((r) => r.id === 'mastercard.ecp.ecm')!;
    expect(meets(rule, mc('2026-01', 500, null))).toBe(false);
    expect(evaluateSeries([], rules.rules)).toEqual([]);
  });
});

describe('months', () => {
  it('steps months across year boundaries both ways', async () => {
    const { addMonths, inForce } = await import('./oracle/evaluate.ts');
    expect(addMonths('2025-12', 1)).toBe('2026-01');
    expect(addMonths('2026-01', -1)).toBe('2025-12');
    expect(addMonths('2026-03', -15)).toBe('2024-12');
    const r = rules.rules.find((x) => x.id === 'visa.vamp.excessive.2025')!;
    expect([inForce(r, '2025-05'), inForce(r, '2025-06'), inForce(r, '2026-03'), inForce(r, '2026-04')]).toEqual([false, true, true, false]);
  });
});
