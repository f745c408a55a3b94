// The judged months notices are made from, and the open rows forecasts are made from, read in ranges of MIDs (a store of
// any size within its memory limit): the ranges cover every MID once, and together they give what one read of the whole
// store gives.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { judgedMonths, judgedRanges } from '../store/judged-months.ts';
import { histories, openRanges, openRows, stageDaily, warningCandidates } from '../store/forecast.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  const mc = (mid: string, month: string, cb: number, endDay?: number) => ({ mid, network: 'mastercard' as const, month, cb, tx: 10_000, endDay });
  // ECM then HECM, left after three months below, and a month to date projected to ECM: levels, watch bands, projections.
  await insertStats(store, ['m1', 'm2', 'm3', 'ok'].flatMap((m, i) => [mc(m, '2025-12', 10), mc(m, '2026-01', i < 3 ? 200 : 1),
    mc(m, '2026-02', i < 2 ? 350 : 1), mc(m, '2026-03', 10), mc(m, '2026-04', 10), mc(m, '2026-05', 10), mc(m, '2026-06', 60, 10)]));
  const now = new Date('2026-06-10T06:00:00Z');
  await evaluateAlerts(store, { asOf: now, rules: loadRules(), now });
});
afterAll(() => cleanup(store, dir));

describe('judged months in ranges of MIDs', () => {
  it('covers every MID once, from an open start to an open end, and reads what one read of every MID reads', async () => {
    for (const from of [null, '2026-03']) {
      const whole = await judgedMonths(store, { from, last: '2026-06' });
      expect(whole.levels.length).toBeGreaterThan(0);
      expect(whole.projections.length).toBeGreaterThan(0);
      expect(await judgedRanges(store, from)).toEqual([{ lo: null, hi: null }]);
      // At most one kept run a range: one range a MID.
      const ranges = await judgedRanges(store, from, 1);
      expect(ranges).toEqual([{ lo: null, hi: 'm2' }, { lo: 'm2', hi: 'm3' }, { lo: 'm3', hi: 'ok' }, { lo: 'ok', hi: null }]);
      const parts = { levels: [] as typeof whole.levels, projections: [] as typeof whole.projections };
      for (const range of ranges) {
        const part = await judgedMonths(store, { from, last: '2026-06', range });
        expect(new Set([...part.levels, ...part.projections].map((m) => m.mid)).size).toBeLessThanOrEqual(1);
        parts.levels.push(...part.levels);
        parts.projections.push(...part.projections);
      }
      expect(parts).toEqual(whole);
    }
  });

  it('gives the forecasts\' open rows and the early warnings\' candidates range by range of open rows as one read gives them', async () => {
    const { months, ranges: all } = (await openRanges(store))!;
    expect(months).toEqual({ lo: '2026-06', hi: '2026-06', all: ['2026-06'] });
    expect(all).toEqual([{ lo: null, hi: null }]);
    // At most one open row a range: a range a MID (a MID's rows are never split).
    const { ranges } = (await openRanges(store, 1))!;
    expect(ranges).toEqual([{ lo: null, hi: 'm2' }, { lo: 'm2', hi: 'm3' }, { lo: 'm3', hi: 'ok' }, { lo: 'ok', hi: null }]);
    const daily = await stageDaily(store, months);
    const [open, candidates] = [await openRows(store, months), await warningCandidates(store, months)];
    expect(open.length).toBeGreaterThan(0);
    expect(candidates.length).toBeGreaterThan(0);
    // (one range after another, as the engine reads them: a history stages its series in a temp table of the connection)
    const byRange = async <T>(read: (r: (typeof ranges)[number]) => Promise<T[]>) => { const out: T[] = []; for (const r of ranges) out.push(...(await read(r))); return out; };
    expect(await byRange((r) => openRows(store, months, r))).toEqual(expect.arrayContaining(open));
    expect((await byRange((r) => openRows(store, months, r))).length).toBe(open.length);
    expect(await byRange((r) => warningCandidates(store, months, r))).toEqual(candidates);
    const days = await histories(store, open);
    const rangeDays = new Map((await byRange(async (r) => [...(await histories(store, await openRows(store, months, r), r))])));
    expect(rangeDays).toEqual(days);
    await daily.drop();
  });
});
