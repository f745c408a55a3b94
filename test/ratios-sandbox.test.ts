// End to end from a sandbox scenario: pinned monthly figures -> the sandbox's MID report -> the store's loader -> the
// ratios, and the levels the kept ratio table (judged in SQL) and the oracle give. Expected ratios divided by hand.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { loadReport } from '../store/load.ts';
import { computeRatios } from '../store/ratios.ts';
import { generateWorld } from '../sandbox/generate.ts';
import { selectReport } from '../sandbox/reports.ts';
import { evaluateRows, type RatioRow } from './oracle/evaluate.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
let rows: RatioRow[];
const START = '2026-03-05T00:00:00Z';

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  const world = generateWorld({
    seed: 7,
    start: START,
    scenario: {
      history_months: 3,
      horizon_months: 0,
      orders: 0,
      mids: [
        {
          mid: 'S1',
          monthly_transactions: 12_000,
          months: {
            '2025-12': { mastercard: { transactions: 8_000, transaction_amount: 400_000, chargebacks: 20 }, visa: { transactions: 0, chargebacks: 0 } },
            '2026-01': { mastercard: { transactions: 10_000, transaction_amount: 500_000, chargebacks: 400 } },
            '2026-02': { mastercard: { transactions: 9_000, transaction_amount: 450_000, chargebacks: 250 }, american_express: { transactions: 2_000, chargebacks: 30 } },
          },
        },
      ],
    },
  });
  for (const [month, last] of [['2025-12', '31'], ['2026-01', '31'], ['2026-02', '28']] as const) {
    const records = selectReport(world, { kind: 'mid_report', start: `${month}-01T00:00:00Z`, end: `${month}-${last}T23:59:59Z`, now: START });
    const file = path.join(dir, `mid_report_${month}.json`);
    fs.writeFileSync(file, JSON.stringify(records));
    await loadReport(store, file, { kind: 'mid_report', format: 'json', window: { from: `${month}-01`, to: `${month}-${last}` } });
  }
  rows = await computeRatios(store, { mid: 'S1' });
});
afterAll(() => cleanup(store, dir));

const pick = (network: string, program: string, month: string) =>
  rows.find((r) => r.network === network && r.program === program && r.metric === 'count' && r.month === month && !r.is_projection);

describe('ratios from a sandbox scenario', () => {
  it('divides Mastercard chargebacks of M by the pinned transactions of M-1, across the year boundary', () => {
    expect(pick('mastercard', 'ecp', '2026-01')).toMatchObject({ numerator: 400, denominator: 8_000, denominator_month: '2025-12', ratio: 400 / 8_000 });
    expect(pick('mastercard', 'ecp', '2026-02')).toMatchObject({ numerator: 250, denominator: 10_000, denominator_month: '2026-01', ratio: 0.025 });
  });

  it('computes the same-month ratio from the pinned month', () => {
    expect(pick('american_express', 'amex_excessive', '2026-02')).toMatchObject({ numerator: 30, denominator: 2_000, ratio: 0.015 });
    expect(pick('mastercard', 'monthly', '2026-02')).toMatchObject({ numerator: 250, denominator: 9_000 });
  });

  it('gives no ratio for a pinned month with zero transactions', () => {
    expect(pick('visa', 'monthly', '2025-12')).toMatchObject({ numerator: 0, denominator: 0, ratio: null, no_ratio_reason: 'zero_transactions' });
  });

  it('rates 400 chargebacks at 5 % as HECM, and ECM the month after at 2.5 % (HECM steps down to ECM at once, issue #13)', async () => {
    await refreshRatios(store, loadRules());
    const kept = await store.all<{ month: string; level: string | null }>(
      "SELECT month, level FROM mart_ratios WHERE mid = 'S1' AND network = 'mastercard' AND program = 'ecp' AND metric = 'count' AND NOT is_projection ORDER BY month");
    expect(kept.map((l) => [l.month, l.level])).toEqual([['2025-12', null], ['2026-01', 'hecm'], ['2026-02', 'ecm']]);
    // The oracle says the same.
    const levels = evaluateRows(rows.filter((r) => r.network === 'mastercard' && r.program === 'ecp'), loadRules());
    expect(levels.map((l) => [l.month, l.level])).toEqual([['2025-12', null], ['2026-01', 'hecm'], ['2026-02', 'ecm']]);
  });
});
