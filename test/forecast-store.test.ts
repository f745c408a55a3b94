// The chance of a breach over a real store (issue #39): kept in ratio_forecasts after every write of the ratio table,
// shown on the open month's row of mart_ratios, and its early warning (a `likely` notice) once per level and month.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { forecast } from '../rules/forecast.ts';
import { loadRules, parseThresholds } from '../rules/thresholds.ts';
import { cleanup, insertChargebacks, insertStats, tempStore } from './ratios-fixtures.ts';
import { ratiosView, renderRatios } from '../cli/commands/ratios.ts';
import { streamRatiosJson } from '../store/ratios-stream.ts';
import { keptSection } from '../cli/report-source.ts';
import { buildDigest, digestText } from '../alerts/digest.ts';
import { chancePct, chanceWords } from '../rules/forecast.ts';

let store: Store;
let dir: string;
const rules = loadRules();
const asOf = new Date('2026-06-11T06:00:00Z');
const dayMs = 86_400_000;
const dayOf = (t: number) => new Date(t).toISOString().slice(0, 10);
/** m1's chargebacks received on each day before June: 4, 5 or 6 by the day's number since 2026-01-01 (1.25 % of 12,000: no level). */
const before = (i: number) => 4 + (i % 3);

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  const months = ['2026-01', '2026-02', '2026-03', '2026-04', '2026-05'];
  const t0 = Date.parse('2026-01-01T00:00:00Z');
  const days = (Date.parse('2026-06-01T00:00:00Z') - t0) / dayMs;
  const perMonth = new Map<string, number>();
  for (let i = 0; i < days; i++) {
    const d = dayOf(t0 + i * dayMs);
    perMonth.set(d.slice(0, 7), (perMonth.get(d.slice(0, 7)) ?? 0) + before(i));
    await insertChargebacks(store, [{ mid: 'm1', network: 'mastercard', received: d, n: before(i) }]);
  }
  for (let d = 1; d <= 10; d++) await insertChargebacks(store, [{ mid: 'm1', network: 'mastercard', received: `2026-06-${String(d).padStart(2, '0')}`, n: 8 }]);
  await insertStats(store, [
    ...months.map((month) => ({ mid: 'm1', network: 'mastercard' as const, month, cb: perMonth.get(month)!, tx: 12_000 })),
    { mid: 'm1', network: 'mastercard', month: '2026-06', cb: 80, tx: 3_600, endDay: 10 },
    // A MID holding ECM since January (2 %), as likely to meet it in June: no warning of a level it holds.
    ...months.map((month) => ({ mid: 'held', network: 'mastercard' as const, month, cb: 200, tx: 10_000 })),
    { mid: 'held', network: 'mastercard', month: '2026-06', cb: 80, tx: 3_000, endDay: 10 },
    // A MID far from every level: its chance is nil.
    { mid: 'ok', network: 'mastercard', month: '2026-05', cb: 1, tx: 10_000 },
    { mid: 'ok', network: 'mastercard', month: '2026-06', cb: 1, tx: 3_000, endDay: 10 },
  ]);
});
afterAll(() => cleanup(store, dir));

describe('the chance of a breach in the store', () => {
  it('forecasts the open month against each level from its daily history, as rules/forecast.ts computes it', async () => {
    await evaluateAlerts(store, { asOf, rules, now: asOf });
    const rows = await store.all<Record<string, unknown>>("SELECT * FROM ratio_forecasts WHERE mid = 'm1' AND program = 'ecp' ORDER BY rank");
    expect(rows.map((r) => [r.level, r.is_headline, r.month, r.days_covered, r.count_to_date])).toEqual([
      ['ecm', true, '2026-06', 10, 80],
      ['hecm', false, '2026-06', 10, 80],
    ]);
    // The history: the days from the series' first month (2026-01-01) to May's last, in order.
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const history = Array.from({ length: (Date.parse('2026-06-01T00:00:00Z') - t0) / dayMs }, (_, i) => before(i));
    const input = { daysInMonth: 30, daysElapsed: 10, firstWeekday: new Date('2026-06-01T00:00:00Z').getUTCDay(), countToDate: 80, history, denominator: { known: 12_000 } };
    const ecm = forecast(input, { threshold: 0.015, comparison: '>=', minCount: 100 });
    const hecm = forecast(input, { threshold: 0.03, comparison: '>=', minCount: 300 });
    expect(rows[0]!.chance).toBeCloseTo(ecm.chance, 12);
    expect(rows[0]!.expected_count).toBeCloseTo(ecm.expected, 9);
    expect([rows[0]!.low80_count, rows[0]!.high80_count, rows[0]!.pace_day, rows[0]!.needed_count]).toEqual([ecm.low80, ecm.high80, ecm.paceDay, 180]);
    expect(rows[1]!.chance).toBeCloseTo(hecm.chance, 12);
    expect(ecm.chance).toBeGreaterThan(0.5);
    expect(hecm.chance).toBeLessThan(0.01);
  });

  it('shows the headline level\'s chance on the open month\'s observed row of mart_ratios only', async () => {
    const rows = await store.all<Record<string, unknown>>(
      "SELECT month, is_projection, chance, chance_level, expected_count, expected_low80, expected_high80, pace_day FROM mart_ratios WHERE mid = 'm1' AND program = 'ecp' AND metric = 'count' ORDER BY month, is_projection");
    const open = rows.filter((r) => r.month === '2026-06' && !r.is_projection);
    expect(open).toHaveLength(1);
    expect(open[0]!.chance_level).toBe('ecm');
    expect(Number(open[0]!.chance)).toBeGreaterThan(0.5);
    expect(Number(open[0]!.expected_low80)).toBeLessThanOrEqual(Number(open[0]!.expected_count));
    expect(Number(open[0]!.expected_high80)).toBeGreaterThanOrEqual(Number(open[0]!.expected_count));
    expect(rows.filter((r) => r !== open[0]).every((r) => r.chance === null && r.expected_count === null)).toBe(true);
    const [ok] = await store.all<{ chance: number }>("SELECT chance FROM mart_ratios WHERE mid = 'ok' AND program = 'ecp' AND metric = 'count' AND month = '2026-06' AND NOT is_projection");
    expect(ok!.chance).toBeLessThan(0.001);
  });

  it('sends the early warning once per level and month, with its figures, and none of a level the series holds', async () => {
    const [n, ...more] = await store.all<{ kind: string; level: string; notify: boolean; message: string }>("SELECT kind, level, notify, message FROM alerts WHERE kind = 'likely'");
    expect(more).toEqual([]);
    const [held] = await store.all<{ chance: number; state: string; level: string }>(
      "SELECT chance, state, level FROM mart_ratios WHERE mid = 'held' AND program = 'ecp' AND metric = 'count' AND month = '2026-06' AND NOT is_projection");
    expect(held).toMatchObject({ state: 'level', level: 'ecm' });
    expect(held!.chance).toBeGreaterThan(0.5);
    expect(n).toMatchObject({ kind: 'likely', level: 'ecm', notify: true });
    expect(n!.message).toMatch(/^m1 mastercard ecp: LIKELY — a \d+ % chance that 2026-06 ends at level ecm: 80 so far in 10 of 30 days, \d+ expected \(80 %: \d+–\d+\) against 180 needed/);
    const again = await evaluateAlerts(store, { asOf, rules, now: asOf });
    expect(again.newNotices).toEqual([]);
  });

  it('is shown by cbp ratios (a chance column, a line under the table, --json fields), the report and the digest', async () => {
    const loaded = loadRules();
    const view = await ratiosView(store, loaded, {});
    const row = view.rows.find((r) => r.mid === 'm1' && r.program === 'ecp' && r.month === '2026-06' && !r.is_projection)!;
    expect(row.chance_level).toBe('ecm');
    const text = renderRatios(view);
    expect(text).toMatch(/next at\s+close\s+chance\s+figures/);
    expect(text).toContain(`${chancePct(row.chance!)}%`);
    expect(text).toMatch(/chance of a breach \(forecast\):\n( {2}\S.*\n)* {2}m1 mc ecp: \d+ % chance of ecm \(\d+ expected, 80 %: \d+–\d+/);
    let json = '';
    await streamRatiosJson(store, { scope: 'latest' }, (t) => { json += t; });
    const streamed = (JSON.parse(json) as Array<Record<string, unknown>>).find((r) => r.mid === 'm1' && r.program === 'ecp' && r.metric === 'count' && r.month === '2026-06' && !r.is_projection)!;
    expect(streamed).toMatchObject({ chance: row.chance, chance_level: 'ecm', expected_count: row.expected_count, expected_low80: row.expected_low80, expected_high80: row.expected_high80, pace_day: row.pace_day });
    const section = await keptSection(store, { month: '2026-06', scope: 'latest', rules });
    const risk = section.atRisk.find((r) => r.mid === 'm1' && r.program === 'ecp' && r.month === '2026-06')!;
    expect(risk.chance_words).toBe(chanceWords(row));
    const trend = section.trends.find((t) => t.mid === 'm1' && t.program === 'ecp')!;
    const june = trend.months.find((m) => m.month === '2026-06')!;
    expect(june.band80![0]).toBeCloseTo(row.expected_low80! / 12_000, 12);
    expect(june.band80![1]).toBeCloseTo(row.expected_high80! / 12_000, 12);
    expect(june.chance).toBe(row.chance);
    const digest = await buildDigest(store, rules, { now: asOf, dueWithin: 7 });
    expect(digestText(digest)).toContain(chanceWords(row)!);
  });

  it('is made again after every write that changes the ratio table', async () => {
    await insertStats(store, [{ mid: 'm1', network: 'mastercard', month: '2026-06', cb: 120, tx: 5_400, endDay: 15 }]);
    await evaluateAlerts(store, { asOf: new Date('2026-06-16T06:00:00Z'), rules, now: asOf });
    const [r] = await store.all<{ days_covered: number; count_to_date: number }>("SELECT days_covered, count_to_date FROM ratio_forecasts WHERE mid = 'm1' AND level = 'ecm'");
    expect(r).toEqual({ days_covered: 15, count_to_date: 120 });
  });

  it('is kept after a write that leaves every open month as it was, unless it was not of the write before', async () => {
    const made = async () => (await store.all<{ at: string }>("SELECT max(forecast_at)::VARCHAR AS at FROM ratio_forecasts"))[0]!.at;
    const stale = async () => (await store.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM ratio_mart_state s
      WHERE s.complete AND s.written_at NOT IN (SELECT mart_written_at FROM ratio_forecast_state)`))[0]!.n;
    const before = await made();
    // A later month loaded whole: judged from July on, June (open) untouched.
    await insertStats(store, [{ mid: 'ok', network: 'mastercard', month: '2026-07', cb: 1, tx: 10_000 }]);
    const r = await evaluateAlerts(store, { asOf: new Date('2026-08-02T06:00:00Z'), rules, now: new Date('2026-08-02T06:00:00Z') });
    expect(r.fromMonth).toBe('2026-07');
    expect(await made()).toBe(before);
    expect(await stale()).toBe(0);
    // Forecasts of an older write (one cut short before them): made again.
    await store.run('DELETE FROM ratio_forecast_state');
    await insertStats(store, [{ mid: 'ok', network: 'mastercard', month: '2026-08', cb: 1, tx: 10_000 }]);
    await evaluateAlerts(store, { asOf: new Date('2026-09-02T06:00:00Z'), rules, now: new Date('2026-09-02T06:00:00Z') });
    expect(await made()).not.toBe(before);
    expect(await stale()).toBe(0);
    // The open month loaded whole: judged from June, whose forecasts go (no month is open any more).
    await insertStats(store, ['m1', 'held', 'ok'].map((mid) => ({ mid, network: 'mastercard' as const, month: '2026-06', cb: 10, tx: 12_000 })));
    await evaluateAlerts(store, { asOf: new Date('2026-09-03T06:00:00Z'), rules, now: new Date('2026-09-03T06:00:00Z') });
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM ratio_forecasts'))[0]!.n).toBe(0);
    expect(await stale()).toBe(0);
  });
});

describe('the early warning\'s settings (thresholds file forecast)', () => {
  const own = async (text: string) => {
    const s = await tempStore();
    await insertStats(s.store, [
      { mid: 'm1', network: 'mastercard', month: '2026-05', cb: 100, tx: 10_000 },
      { mid: 'm1', network: 'mastercard', month: '2026-06', cb: 60, tx: 3_000, endDay: 10 },
    ]);
    const set = parseThresholds(text, 'thresholds.json');
    const r = await evaluateAlerts(s.store, { asOf, rules: set, now: asOf });
    const chance = (await s.store.all<{ chance: number }>("SELECT chance FROM ratio_forecasts WHERE level = 'ecm'"))[0]!.chance;
    cleanup(s.store, s.dir);
    return { likely: r.newNotices.filter((n) => n.kind === 'likely'), chance };
  };

  it('warns at 50 % by default, at a level\'s own chance when set, and records without sending when notify is false', async () => {
    const base = await own('{}');
    expect(base.chance).toBeGreaterThan(0.5);
    expect(base.likely.map((n) => [n.level, n.notify])).toEqual([['ecm', true]]);
    const above = Math.min(1, base.chance + (1 - base.chance) / 2);
    expect((await own(JSON.stringify({ forecast: { levels: { 'mastercard.ecp.ecm': above } } }))).likely).toEqual([]);
    expect((await own(JSON.stringify({ forecast: { warn_at: above } }))).likely).toEqual([]);
    expect((await own(JSON.stringify({ forecast: { notify: false } }))).likely.map((n) => n.notify)).toEqual([false]);
  });

  it('refuses a level that no rule has, naming it', () => {
    expect(() => parseThresholds(JSON.stringify({ forecast: { levels: { 'mastercard.ecp.ecn': 0.4 } } }), 'thresholds.json')).toThrow(/forecast\.levels names "mastercard\.ecp\.ecn", no level of the rules/);
    expect(() => parseThresholds(JSON.stringify({ forecast: { warn_at: 1.5 } }), 'thresholds.json')).toThrow(/warn_at/);
  });
});
