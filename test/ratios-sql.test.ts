// The ratio views against pinned monthly figures; every expected value is worked out by hand here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { chargebackCountCheck, computeRatios, forEachRatioBatch, midRanges } from '../store/ratios.ts';
import type { RatioRow } from '../contract/ratios.ts';
import { cleanup, insertChargebacks, insertEvents, insertStats, tc40, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
let rows: RatioRow[];

const pick = (mid: string, network: string, program: string, metric: string, month: string, projection = false) => {
  const r = rows.find((x) => x.mid === mid && x.network === network && x.program === program && x.metric === metric && x.month === month && x.is_projection === projection);
  if (!r) throw new Error(`no row ${mid} ${network} ${program} ${metric} ${month} projection=${projection}`);
  return r;
};

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  await insertStats(store, [
    // Visa: MID report says 120 chargebacks on 10,000 transactions in March.
    { mid: 'v1', network: 'visa', month: '2026-03', cb: 120, cbAmount: 6000, tx: 10_000, txAmount: 500_000 },
    { mid: 'v1', network: 'all', month: '2026-03', cb: 999, tx: 1 },
    // Mastercard across the year boundary: December's own report is January's denominator.
    { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 20_000, txAmount: 1_000_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 400, cbAmount: 30_000, tx: 25_000, txAmount: 1_250_000 },
    // February carries the previous-month fields: they win over January's own report (25,000).
    { mid: 'm1', network: 'mastercard', month: '2026-02', cb: 480, cbAmount: 24_000, tx: 26_000, prevTx: 24_000, prevTxAmount: 1_200_000 },
    // Discover: February's chargebacks over January's transactions.
    { mid: 'd1', network: 'discover', month: '2026-01', cb: 5, tx: 5_000 },
    { mid: 'd1', network: 'discover', month: '2026-02', cb: 60, tx: 7_000 },
    // Amex: same month.
    { mid: 'a1', network: 'american_express', month: '2026-01', cb: 30, cbAmount: 1_500, tx: 2_000, txAmount: 90_000 },
    // Zero transactions, in the month and in the previous month.
    { mid: 'z1', network: 'visa', month: '2026-01', cb: 3, tx: 0, txAmount: 0 },
    { mid: 'z1', network: 'mastercard', month: '2026-01', cb: 0, tx: 0, txAmount: 0 },
    { mid: 'z1', network: 'mastercard', month: '2026-02', cb: 7, tx: 900 },
    // No previous month at all.
    { mid: 'n1', network: 'mastercard', month: '2026-01', cb: 50, tx: 1_000 },
    { mid: 'n1', network: 'discover', month: '2026-01', cb: 50, tx: 1_000 },
    // Month to date: April 1-10 of 30 days; March is the denominator month.
    { mid: 'p1', network: 'mastercard', month: '2026-03', cb: 20, tx: 10_000 },
    { mid: 'p1', network: 'mastercard', month: '2026-04', cb: 60, tx: 3_000, endDay: 10 },
    // A shorter April window loaded earlier is superseded by the longer one.
    { mid: 'p1', network: 'mastercard', month: '2026-04', cb: 30, tx: 1_500, endDay: 5 },
    // June: a month-to-date window carrying the previous-month fields, then the whole month without them.
    { mid: 'w1', network: 'mastercard', month: '2026-05', cb: 10, tx: 1_000 },
    { mid: 'w1', network: 'mastercard', month: '2026-06', cb: 5, tx: 500, endDay: 15, prevTx: 5_000, prevTxAmount: 250_000 },
    { mid: 'w1', network: 'mastercard', month: '2026-06', cb: 12, tx: 1_100 },
    // The same window twice, seen at the same time (the key loads keep, broken by hand).
    { mid: 't1', network: 'visa', month: '2026-05', cb: 1, tx: 100 },
    { mid: 't1', network: 'visa', month: '2026-05', cb: 2, tx: 200 },
  ]);
  await insertChargebacks(store, [
    // 100 Visa disputes in March, 10 of them with ARNs an accepted RDR resolved.
    { mid: 'v1', network: 'visa', received: '2026-03-10', n: 90, amount: 50, arnPrefix: 'arn-open-' },
    { mid: 'v1', network: 'visa', received: '2026-03-11', n: 10, amount: 50, arnPrefix: 'arn-rdr-' },
    // Mastercard January: 30 x 4837, 20 x 4863 (fraud), 350 others.
    { mid: 'm1', network: 'mastercard', received: '2026-01-05', n: 30, amount: 100, reasonCode: '4837' },
    { mid: 'm1', network: 'mastercard', received: '2026-01-06', n: 20, amount: 100, reasonCode: '4863' },
    { mid: 'm1', network: 'mastercard', received: '2026-01-07', n: 350, amount: 75, reasonCode: '4853' },
  ]);
  const rdr = Array.from({ length: 10 }, (_, i) => ({ rdr_guid: `rdr_${i}`, arn: `arn-rdr-${i}`, rdr_resolution: 'Accepted', prevention_type: 'rdr' }));
  rdr.push({ rdr_guid: 'rdr_x', arn: 'arn-open-0', rdr_resolution: 'Declined', prevention_type: 'rdr' });
  await insertEvents(store, 'rdr.new', rdr);
  // 60 TC40s in March (guid 0 arrives as .new and .match: one report), one in February, one Ethoca.
  const march = Array.from({ length: 60 }, (_, i) => tc40('v1', `pre_${i}`, `2026-03-${String((i % 28) + 1).padStart(2, '0')}T12:00:00Z`, 20));
  await insertEvents(store, 'prevention.new', march);
  await insertEvents(store, 'prevention.match', [tc40('v1', 'pre_0', '2026-03-01 12:00:00', 20)]);
  await insertEvents(store, 'prevention.new', [tc40('v1', 'pre_feb', '2026-02-28T23:59:59Z'), { ...tc40('v1', 'pre_eth', '2026-03-02T00:00:00Z'), prevention_type: 'ethoca' }]);
  rows = await computeRatios(store);
});

afterAll(() => cleanup(store, dir));

describe('ratios per network', () => {
  it('computes Visa count and amount ratios from the MID report of the same month', () => {
    const c = pick('v1', 'visa', 'monthly', 'count', '2026-03');
    expect([c.numerator, c.denominator, c.denominator_month]).toEqual([120, 10_000, '2026-03']);
    expect(c.ratio).toBe(120 / 10_000);
    expect(c.ratio_pct).toBeCloseTo(1.2, 12);
    expect(c.ratio_bps).toBeCloseTo(120, 10);
    const a = pick('v1', 'visa', 'monthly', 'amount', '2026-03');
    expect(a.ratio).toBe(6000 / 500_000);
  });

  it('counts VAMP as TC40 reports (deduplicated by prevention_guid) plus disputes not resolved through RDR, over the same month', () => {
    const v = pick('v1', 'visa', 'vamp', 'count', '2026-03');
    // 60 distinct TC40s + disputes: the chargeback report's 100 - 10 RDR-resolved = 90, but the MID report lists 120
    // chargebacks, so its 120 - 10 = 110 is the floor (never understated): 170 over 10,000 = 1.7 %.
    expect(v.numerator).toBe(170);
    expect(v.numerator_floor).toBe(true);
    expect(v.denominator).toBe(10_000);
    expect(v.ratio).toBe(170 / 10_000);
    // amounts: 60 x 20 + 90 x 50
    expect(v.numerator_amount).toBe(60 * 20 + 90 * 50);
  });

  it('divides Mastercard chargebacks by the previous month across a year boundary, falling back to that month\'s own report', () => {
    const jan = pick('m1', 'mastercard', 'ecp', 'count', '2026-01');
    expect([jan.numerator, jan.denominator, jan.denominator_month]).toEqual([400, 20_000, '2025-12']);
    expect(jan.ratio).toBe(0.02);
    const janAmt = pick('m1', 'mastercard', 'ecp', 'amount', '2026-01');
    expect(janAmt.ratio).toBe(30_000 / 1_000_000);
  });

  it('prefers master_card previous-month fields over the previous month\'s own report', () => {
    const feb = pick('m1', 'mastercard', 'ecp', 'count', '2026-02');
    expect([feb.numerator, feb.denominator, feb.denominator_month]).toEqual([480, 24_000, '2026-01']);
    expect(feb.ratio).toBe(0.02);
    expect(pick('m1', 'mastercard', 'ecp', 'amount', '2026-02').ratio).toBe(24_000 / 1_200_000);
  });

  it('computes Mastercard EFM from fraud reason codes 4837 and 4863 over the previous month', () => {
    const efm = pick('m1', 'mastercard', 'efm', 'count', '2026-01');
    expect(efm.numerator).toBe(50);
    expect(efm.numerator_amount).toBe(5_000);
    expect(efm.denominator).toBe(20_000);
    expect(efm.ratio).toBe(50 / 20_000);
  });

  it('divides Discover chargebacks by the previous month\'s transactions', () => {
    const d = pick('d1', 'discover', 'discover_excessive', 'count', '2026-02');
    expect([d.numerator, d.denominator, d.denominator_month, d.ratio]).toEqual([60, 5_000, '2026-01', 60 / 5_000]);
  });

  it('computes the Amex ratio over the same month', () => {
    const a = pick('a1', 'american_express', 'amex_excessive', 'count', '2026-01');
    expect([a.numerator, a.denominator, a.denominator_month, a.ratio]).toEqual([30, 2_000, '2026-01', 0.015]);
  });

  it('leaves out the all-networks figures', () => {
    expect(rows.some((r) => (r.network as string) === 'all')).toBe(false);
  });
});

describe('months without a ratio', () => {
  it('gives no ratio, and says why, for a month with zero transactions', () => {
    const z = pick('z1', 'visa', 'monthly', 'count', '2026-01');
    expect(z.ratio).toBeNull();
    expect(z.ratio_pct).toBeNull();
    expect(z.no_ratio_reason).toBe('zero_transactions');
    expect(z.numerator).toBe(3);
    const zp = pick('z1', 'mastercard', 'ecp', 'count', '2026-02');
    expect(zp.ratio).toBeNull();
    expect(zp.no_ratio_reason).toBe('zero_transactions_previous_month');
  });

  it('gives no ratio for a MID with no previous month', () => {
    for (const [net, prog] of [['mastercard', 'ecp'], ['discover', 'discover_excessive']]) {
      const r = pick('n1', net, prog, 'count', '2026-01');
      expect(r.ratio).toBeNull();
      expect(r.no_ratio_reason).toBe('no_previous_month');
      expect(r.denominator_month).toBe('2025-12');
    }
    // the same-month ratio of that month exists
    expect(pick('n1', 'mastercard', 'monthly', 'count', '2026-01').ratio).toBe(0.05);
  });
});

describe('month to date and projection', () => {
  it('reports month-to-date figures from the longest window of the open month', () => {
    const mtd = pick('p1', 'mastercard', 'ecp', 'count', '2026-04');
    expect(mtd.is_partial).toBe(true);
    expect([mtd.numerator, mtd.denominator, mtd.denominator_month, mtd.days_covered, mtd.days_in_month]).toEqual([60, 10_000, '2026-03', 10, 30]);
    expect(mtd.ratio).toBe(0.006);
  });

  it('takes every figure of a month from its one picked window, NULLs included, never a mix of windows', () => {
    // The whole month's row is picked, its empty previous-month fields with it: May's own report (1,000) is the
    // denominator, not the 5,000 the June 1-15 window carried.
    const june = pick('w1', 'mastercard', 'ecp', 'count', '2026-06');
    expect([june.numerator, june.denominator, june.denominator_month, june.is_partial]).toEqual([12, 1_000, '2026-05', false]);
    expect(pick('w1', 'mastercard', 'ecp', 'amount', '2026-06').denominator).toBe(10_000);
    // Two rows of one window seen at once: the one stored later, both figures from it.
    const tie = pick('t1', 'visa', 'monthly', 'count', '2026-05');
    expect([tie.numerator, tie.denominator]).toEqual([2, 200]);
  });

  it('projects to month end from the run rate and labels the row a projection', () => {
    const p = pick('p1', 'mastercard', 'ecp', 'count', '2026-04', true);
    // 60 in 10 of 30 days -> 180; the previous month's denominator is not scaled.
    expect(p.numerator).toBe(180);
    expect(p.denominator).toBe(10_000);
    expect(p.ratio).toBeCloseTo(0.018, 15);
    const same = pick('p1', 'mastercard', 'monthly', 'count', '2026-04', true);
    // same-month: both scale, so the ratio is the month-to-date one and the counts are month-end counts
    expect([same.numerator, same.denominator]).toEqual([180, 9_000]);
    expect(same.ratio).toBeCloseTo(0.02, 15);
    expect(rows.filter((r) => r.is_projection).every((r) => r.is_partial)).toBe(true);
    expect(rows.some((r) => r.month === '2026-03' && r.mid === 'p1' && r.is_projection)).toBe(false);
  });

  it('filters by month, MID and as-of month', async () => {
    const only = await computeRatios(store, { month: '2026-01', mid: 'm1' });
    expect(new Set(only.map((r) => `${r.mid} ${r.month}`))).toEqual(new Set(['m1 2026-01']));
    const upTo = await computeRatios(store, { asOf: '2026-01-31T10:00:00Z' });
    expect(upTo.every((r) => r.month <= '2026-01')).toBe(true);
  });
});

describe('batches', () => {
  it('gives the same rows MID batch by MID batch as in one go', async () => {
    const batched: RatioRow[] = [];
    let calls = 0;
    await forEachRatioBatch(store, {}, (b) => { calls++; batched.push(...b); }, 2);
    expect(calls).toBe(5); // 10 MIDs, 2 at a time
    expect(batched).toEqual(rows);
    expect(midRanges(['a', 'b', 'c'], 2)).toEqual([['a', 'b'], ['c', 'c']]);
  });
});

describe('the published snapshot', () => {
  it('carries the ratio views, so analysts get the same rows read-only', async () => {
    const { publishSnapshot, openSnapshot } = await import('../store/snapshot.ts');
    const snap = `${dir}/published/snap.duckdb`;
    await publishSnapshot(store, { snapshotPath: snap });
    const ro = await openSnapshot(snap);
    try {
      expect(await computeRatios(ro, { mid: 'm1' })).toEqual(rows.filter((r) => r.mid === 'm1'));
    } finally {
      ro.close();
    }
  });
});

describe('data quality', () => {
  it('sets chargeback counts from the chargeback report against the MID report\'s counts', async () => {
    const dq = await chargebackCountCheck(store, { mid: 'v1' });
    const march = dq.find((r) => r.network === 'visa' && r.month === '2026-03');
    expect(march).toMatchObject({ report_count: 100, mid_report_count: 120, difference: -20, agrees: false });
    const m1 = (await chargebackCountCheck(store, { mid: 'm1', month: '2026-01' }))[0];
    expect(m1).toMatchObject({ report_count: 400, mid_report_count: 400, agrees: true });
  });
});
