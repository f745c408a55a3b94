// Rows no rule could move, judged in SQL like every other row (store/ratio-refresh.ts): mart_ratios explains every
// rule-read row as the oracle does (test/oracle/explain.ts), also when judged in chunks of MIDs; rows no rule reads have
// no explanation; data changed after the last refresh, or a refresh cut short, is behind until the next one judges it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAfterLoad, evaluateAlerts } from '../alerts/engine.ts';
import { explainRows, figure, percent } from './oracle/explain.ts';
import { parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import { ruleTables } from '../rules/rule-table.ts';
import { computeRatios } from '../store/ratios.ts';
import { latestMartMonth } from '../store/ratios-shown.ts';
import { ratioStatesOfLatestMonth } from '../store/status.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { martFreshness } from '../store/ratio-mart.ts';
import { keptTableCheck } from '../cli/kept-table.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { cleanup, insertChargebacks, insertStats, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
const asOf = '2026-06-20T06:00:00Z';
const rules: RuleSet = parseThresholds(JSON.stringify({
  watch: { fraction: 0.8, notify: false },
  mids: {
    // Its own, tighter ECM line (0.4 %, no minimum count) and its own region.
    tight: { region: 'EU', rules: [{ id: 'tight.ecp', network: 'mastercard', program: 'ecp', level: 'internal', rank: 0, comparison: '>=', ratio_threshold: 0.004 }] },
  },
}), 't.json');

const EXPLAINED = ['level', 'state', 'next_level', 'next_threshold', 'closeness', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by', 'certainty', 'certainty_note'] as const;
const key = (r: object) => { const x = r as Record<string, unknown>; return [x.mid, x.network, x.program, x.metric, x.month, x.is_projection].join('|'); };
/** network|program|metric some rule of some rules class reads (the rows that have an explanation). */
const targetsOf = (set: RuleSet) => new Set(ruleTables(set).rules.map((x) => `${x.network}|${x.program}|${x.metric}`));

async function mart(q = ''): Promise<Map<string, Record<string, unknown>>> {
  const rows = await store.all<Record<string, unknown>>(`SELECT * FROM mart_ratios ${q}`);
  return new Map(rows.map((r) => [key(r), r]));
}

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  const mc = (mid: string, month: string, cb: number, tx: number) => ({ mid, network: 'mastercard' as const, month, cb, tx });
  await insertStats(store, [
    // few: 43 of April's 2,000 transactions in May, 2.15 %: over ECM's 1.5 %, but 43 < 100 chargebacks (and < 80, the watch band's).
    mc('few', '2026-04', 5, 2_000), mc('few', '2026-05', 43, 2_000), mc('few', '2026-06', 5, 2_000),
    // calm: 0.2 % every month.
    mc('calm', '2026-04', 20, 10_000), mc('calm', '2026-05', 20, 10_000), mc('calm', '2026-06', 20, 10_000),
    // tight: 0.5 % — nothing under the common rules, its own 0.4 % line every month.
    mc('tight', '2026-04', 50, 10_000), mc('tight', '2026-05', 50, 10_000), mc('tight', '2026-06', 50, 10_000),
    // hot: 2 % with 200 chargebacks in May: ECM.
    mc('hot', '2026-04', 10, 10_000), mc('hot', '2026-05', 200, 10_000), mc('hot', '2026-06', 10, 10_000),
  ]);
  await insertChargebacks(store, [{ mid: 'few', network: 'mastercard', received: '2026-05-03', n: 3, reasonCode: '4837', amount: 100 }]);
});
afterAll(() => cleanup(store, dir));

describe('rows no rule could move', () => {
  it('are explained in mart_ratios, every rule-read row exactly as the oracle explains it', async () => {
    const r = await evaluateAlerts(store, { asOf, rules, now: new Date(asOf), full: true });
    expect(r.rows).toBeGreaterThan(0);
    const targets = targetsOf(rules);
    const js = explainRows(await computeRatios(store, { asOf }), rules).filter((x) => targets.has(`${x.network}|${x.program}|${x.metric}`));
    const shown = await mart();
    for (const x of js) {
      const got = shown.get(key(x));
      expect(got, key(x)).toBeDefined();
      expect(Object.fromEntries(EXPLAINED.map((f) => [f, got![f]])), key(x)).toEqual(Object.fromEntries(EXPLAINED.map((f) => [f, x[f]])));
    }
    const may = shown.get('few|mastercard|ecp|count|2026-05|false')!;
    expect(may).toMatchObject({ state: 'clear', level: null, next_level: 'ecm', reason: 'count 43 < 100 minimum', region: 'US', region_source: 'default', monitored_as: 'few' });
    expect(may.closeness).toBeCloseTo(0.0215 / 0.015, 12);
    // EFM's conditions read other figures: the fraud amount fails, the previous month's 2,000 transactions do not.
    // The chargeback report lists 3 of the MID report's 43: EFM's fraud count may be understated, so not "clear".
    expect(shown.get('few|mastercard|efm|count|2026-05|false')).toMatchObject({
      state: 'unknown',
      reason: 'chargeback counts disagree (chargeback report 3, MID report 43): cbp run backfill --kinds chargebacks,mid_report --from 2026-05-01 --to 2026-05-31 --force; ratio 0.15 % < 0.50 %; amount 300 < 50,000 minimum',
    });
    expect(shown.get('tight|mastercard|ecp|count|2026-05|false')).toMatchObject({ state: 'level', level: 'internal', region: 'EU', region_source: 'mid' });
    expect(shown.get('hot|mastercard|ecp|count|2026-05|false')).toMatchObject({ state: 'level', level: 'ecm' });
    expect(shown.get('calm|mastercard|ecp|count|2026-05|false')).toMatchObject({ state: 'clear', reason: 'ratio 0.20 % < 1.50 %; count 20 < 100 minimum' });
    // Rows no rule reads (the monthly ratios, ECP by amount) have no explanation; the MID's region and who it is
    // monitored as are still said, as the oracle says them.
    expect(shown.get('calm|mastercard|monthly|count|2026-05|false')).toMatchObject({ state: null, level: null, reason: null, next_level: null });
    expect(shown.get('calm|mastercard|ecp|amount|2026-05|false')).toMatchObject({ state: null, level: null, reason: null, next_level: null });
    expect(shown.get('calm|mastercard|monthly|count|2026-05|false')).toMatchObject({ region: 'US', region_source: 'default', monitored_as: 'calm' });
  });

  it('has no row of a month loaded after the evaluation, says the ratios are behind, until the next one judges it', async () => {
    await insertStats(store, [{ mid: 'few', network: 'mastercard', month: '2026-07', cb: 150, tx: 2_000 }]);
    expect((await mart("WHERE mid = 'few' AND month = '2026-07'")).size).toBe(0);
    expect(await martFreshness(store)).toMatchObject({ current: false, changedMonths: ['2026-07'] });
    expect((await martFreshness(store)).behind).toContain('run `cbp alerts evaluate`');
    await evaluateAlerts(store, { asOf: '2026-07-20T06:00:00Z', rules, now: new Date('2026-07-20T06:00:00Z') });
    // 150 of June's 2,000: 7.5 % and 150 ≥ 100: few is judged now, its rows stored.
    expect((await mart("WHERE mid = 'few' AND month = '2026-07' AND program = 'ecp' AND metric = 'count' AND NOT is_projection")).values().next().value)
      .toMatchObject({ state: 'level', level: 'ecm' });
    expect(await martFreshness(store)).toEqual({ current: true, behind: null, changedMonths: [] });
  });

  it('are explained under the rules of the last evaluation, and not at all after one under rules that read no ratio', async () => {
    const none = parseThresholds(JSON.stringify({ extends_defaults: false, rules: [] }), 'none.json');
    await evaluateAlerts(store, { asOf: '2026-07-20T06:00:00Z', rules: none, now: new Date('2026-07-20T06:00:00Z') });
    const rows = [...(await mart()).values()];
    expect(rows.length).toBeGreaterThan(0);
    expect((await store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM ratio_rules'))[0].n).toBe(0);
    expect(rows.filter((x) => x.state !== null || x.reason !== null || x.level !== null || x.next_level !== null)).toEqual([]);
    expect(rows.filter((x) => x.monitored_as !== x.mid)).toEqual([]);
  });
});

describe('the kept table judged in chunks of MIDs', () => {
  it('explains every row as the oracle does judging every row at once: a group across chunks, a MID with rules of its own', async () => {
    const t = await tempStore();
    try {
      await generateRatioData(t.store, { mids: 120, months: 20 });
      // A group across chunks, and a MID with rules of its own.
      const set = parseThresholds(JSON.stringify({
        watch: { fraction: 0.75, notify: false },
        groups: { acme: { mids: ['mid000003', 'mid000077'], programs: ['vamp'] } },
        mids: { mid000011: { region: 'EU', rules: [{ id: 'own.ecp', network: 'mastercard', program: 'ecp', level: 'internal', rank: 0, comparison: '>=', ratio_threshold: 0.003 }] } },
      }), 't.json');
      // About 25 MIDs' kept inputs a chunk (each its own transaction), the grouped MIDs' rows in one of their own.
      const r = await refreshRatios(t.store, set, { judgedRows: 2_000 });
      expect(r.fromMonth).toBeNull();
      const chunks = Math.ceil((await t.store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM ratio_month_inputs'))[0].n / 2_000);
      expect(chunks).toBeGreaterThan(3);
      const all = await computeRatios(t.store);
      const targets = targetsOf(set);
      const want = explainRows(all, set).filter((x) => targets.has(`${x.network}|${x.program}|${x.metric}`));
      const got = new Map((await t.store.all<Record<string, unknown>>('SELECT * FROM mart_ratios'))
        .filter((x) => targets.has(`${x.network}|${x.program}|${x.metric}`)).map((x) => [key(x), x]));
      expect([...got.keys()].sort()).toEqual(want.map(key).sort());
      for (const w of want) {
        const g = got.get(key(w))!;
        expect(Object.fromEntries(EXPLAINED.map((f) => [f, g[f]])), key(w)).toEqual(Object.fromEntries(EXPLAINED.map((f) => [f, w[f]])));
      }
      expect(want.some((x) => x.state === 'level') && want.some((x) => x.monitored_as === 'acme') && want.some((x) => x.level === 'internal')).toBe(true);
    } finally {
      cleanup(t.store, t.dir);
    }
  }, 60_000);
});

describe('what mart_ratios does not claim (review of issue #13)', () => {
  const EXPLAINED_KEYS = EXPLAINED;
  async function fresh(rows: Parameters<typeof insertStats>[1]) {
    const t = await tempStore();
    await insertStats(t.store, rows);
    return t;
  }
  const mc = (mid: string, month: string, cb: number, tx: number) => ({ mid, network: 'mastercard' as const, month, cb, tx });
  const martRow = async (s: Store, k: string) => {
    const [mid, network, program, metric, month] = k.split('|');
    return (await s.all<Record<string, unknown>>(
      'SELECT * FROM mart_ratios WHERE mid = $mid AND network = $network AND program = $program AND metric = $metric AND month = $month AND NOT is_projection',
      { mid, network, program, metric, month },
    ))[0];
  };

  it('keeps the evaluation\'s row, and says the ratios are behind, when figures changed after the evaluation, until the next one', async () => {
    const t = await fresh([mc('m', '2026-04', 20, 10_000), mc('m', '2026-05', 20, 10_000)]);
    try {
      await evaluateAlerts(t.store, { asOf, rules, now: new Date(asOf), full: true });
      expect(await martRow(t.store, 'm|mastercard|ecp|count|2026-05')).toMatchObject({ state: 'clear' });
      // A re-fetch (no evaluation yet): May at 3.2 % of April with 320 chargebacks.
      await t.store.run("UPDATE mid_stats SET chargeback_count = 320 WHERE mid = 'm' AND window_start = DATE '2026-05-01'");
      // The kept row is the evaluation's (figures and state together); a reader is told it is behind, and what to run.
      expect(await martRow(t.store, 'm|mastercard|ecp|count|2026-05')).toMatchObject({ state: 'clear', numerator: 20 });
      expect(await martFreshness(t.store)).toMatchObject({ current: false, changedMonths: ['2026-05'] });
      await evaluateAlerts(t.store, { asOf, rules, now: new Date(asOf) });
      expect(await martRow(t.store, 'm|mastercard|ecp|count|2026-05')).toMatchObject({ state: 'level', level: 'hecm' });
    } finally {
      cleanup(t.store, t.dir);
    }
  });

  it('measures against levels in the order the rules engine ranks them (a level\'s highest rank), and explains programs only a region\'s rules read', async () => {
    const set = parseThresholds(JSON.stringify({
      extends_defaults: false,
      rules: [
        { id: 'a.count', network: 'mastercard', program: 'ecp', level: 'a', rank: 1, comparison: '>=', ratio_threshold: 0.01 },
        { id: 'a.amount', network: 'mastercard', program: 'ecp', metric: 'amount', level: 'a', rank: 5, comparison: '>=', ratio_threshold: 0.01 },
        { id: 'b.count', network: 'mastercard', program: 'ecp', level: 'b', rank: 3, comparison: '>=', ratio_threshold: 0.02 },
        { id: 'disc.lac', network: 'discover', program: 'discover_excessive', level: 'x', rank: 1, comparison: '>=', ratio_threshold: 0.01, regions: ['LAC'] },
      ],
    }), 'ranks.json');
    const t = await fresh([mc('m', '2026-04', 20, 10_000), mc('m', '2026-05', 20, 10_000),
      { mid: 'm', network: 'discover', month: '2026-04', cb: 5, tx: 10_000 }, { mid: 'm', network: 'discover', month: '2026-05', cb: 5, tx: 10_000 }]);
    try {
      await evaluateAlerts(t.store, { asOf, rules: set, now: new Date(asOf), full: true });
      const js = explainRows(await computeRatios(t.store, { asOf }), set);
      for (const k of ['m|mastercard|ecp|count|2026-05', 'm|discover|discover_excessive|count|2026-05']) {
        const want = js.find((x) => key(x) === `${k}|false`)!;
        const got = await martRow(t.store, k);
        expect(Object.fromEntries(EXPLAINED_KEYS.map((f) => [f, got[f]])), k).toEqual(Object.fromEntries(EXPLAINED_KEYS.map((f) => [f, want[f]])));
      }
      expect((await martRow(t.store, 'm|mastercard|ecp|count|2026-05')).next_level).toBe('b');
      expect(await martRow(t.store, 'm|discover|discover_excessive|count|2026-05')).toMatchObject({ region: 'US', monitored_as: 'm', state: null });
    } finally {
      cleanup(t.store, t.dir);
    }
  });

  it('judges every month again after a refresh that stopped half way, whatever rules it ran under; readers say it is behind until then', async () => {
    const strict = parseThresholds(JSON.stringify({ extends_defaults: false, rules: [{ id: 'hi', network: 'mastercard', program: 'ecp', level: 'ecm', rank: 1, comparison: '>=', ratio_threshold: 0.05 }] }), 'strict.json');
    const rows = ['a', 'b', 'c'].flatMap((mid) => [mc(mid, '2026-03', 20, 10_000), mc(mid, '2026-04', 200, 10_000), mc(mid, '2026-05', 200, 10_000)]);
    const t = await fresh(rows);
    const ref = await fresh(rows);
    /** t's store, killed when it judges the runs of its second chunk of MIDs. */
    const dying = () => {
      let chunks = 0;
      const killing = <S extends object>(s: S): S => new Proxy(s, {
        get(target, p, recv) {
          if (p === 'run' || p === 'all') {
            return async (sql: string, params?: never) => {
              if (sql.includes('CREATE OR REPLACE TEMP TABLE _ratio_runs') && ++chunks > 1) throw new Error('killed');
              return (target as Record<string, (...a: unknown[]) => unknown>)[p as string](sql, params);
            };
          }
          if (p === 'transaction') return (fn: (x: unknown) => unknown) => (target as unknown as Store).transaction((x) => fn(killing(x)) as never);
          const v = Reflect.get(target, p, recv);
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      return killing(t.store);
    };
    const read = (s: Store) => s.all(`SELECT mid, network, program, metric, month, is_projection, level, state, next_level, reason FROM mart_ratios ORDER BY ALL`);
    try {
      await evaluateAlerts(t.store, { asOf, rules, now: new Date(asOf), full: true });
      // Under other rules, one MID's month a tile (judgedRows: 1), killed after its first tile's writes: MID a's runs alone
      // are there, and no ratio row (every month judged again empties the table first; its rows are written last).
      await expect(refreshRatios(dying(), strict, { judgedRows: 1 })).rejects.toThrow('killed');
      expect(await t.store.all('SELECT DISTINCT mid FROM ratio_streaks')).toEqual([{ mid: 'a' }]);
      expect(await t.store.all('SELECT count(*)::INTEGER AS n FROM ratio_mart')).toEqual([{ n: 0 }]);
      expect((await martFreshness(t.store)).behind).toBe('the last write of the ratio table did not finish: run `cbp alerts evaluate`');
      expect(await keptTableCheck(t.store, rules)).toMatchObject({ holds: false });
      const again = await evaluateAlerts(t.store, { asOf, rules, now: new Date(asOf) });
      expect(again.fromMonth).toBeNull();
      await evaluateAlerts(ref.store, { asOf, rules, now: new Date(asOf), full: true });
      expect(await read(t.store)).toEqual(await read(ref.store));
      const states = (s: Store) => s.all("SELECT mid, network, program, level, month, status FROM alert_states WHERE status = 'reached' ORDER BY ALL");
      expect(await states(t.store)).toEqual(await states(ref.store));
      expect(await keptTableCheck(t.store, rules)).toEqual({ holds: true, behind: null });
      // Under the same rules: a refresh with nothing to judge writes nothing; one cut short after a revision makes the
      // next one judge every month.
      await expect(refreshRatios(dying(), rules, { judgedRows: 1 })).resolves.toMatchObject({ fromMonth: undefined });
      await t.store.run("UPDATE mid_stats SET chargeback_count = 210 WHERE mid = 'c' AND window_start = DATE '2026-05-01'");
      await ref.store.run("UPDATE mid_stats SET chargeback_count = 210 WHERE mid = 'c' AND window_start = DATE '2026-05-01'");
      await expect(refreshRatios(dying(), rules, { judgedRows: 1 })).rejects.toThrow('killed');
      expect((await martFreshness(t.store)).current).toBe(false);
      expect(await refreshRatios(t.store, rules)).toMatchObject({ fromMonth: null, why: 'the last write did not finish' });
      await refreshRatios(ref.store, rules);
      expect(await read(t.store)).toEqual(await read(ref.store));
      expect(await martFreshness(t.store)).toEqual({ current: true, behind: null, changedMonths: [] });
    } finally {
      cleanup(t.store, t.dir);
      cleanup(ref.store, ref.dir);
    }
  });

  it('counts the levels in force in the latest month with data, not the month of now', async () => {
    const t = await fresh([mc('m', '2026-03', 200, 10_000), mc('m', '2026-04', 200, 10_000), mc('m', '2026-05', 200, 10_000)]);
    try {
      // Months after the data's last: the MID is still at ECM, as of its latest month.
      const r = await evaluateAfterLoad(t.store, { asOf: '2026-09-02T06:00:00Z', rules, notify: false });
      expect([r.alerts, r.alertsMonth]).toEqual([1, '2026-05']);
      const before = await evaluateAfterLoad(t.store, { asOf: '2026-02-02T06:00:00Z', rules, notify: false });
      expect([before.alerts, before.alertsMonth]).toEqual([0, null]);
    } finally {
      cleanup(t.store, t.dir);
    }
  });

  it('names as the ratio table\'s latest month the newest month of ratio rows, not a window that makes none', async () => {
    const t = await fresh([mc('m', '2026-04', 20, 10_000), mc('m', '2026-05', 200, 10_000)]);
    try {
      // A window from June 10th (a --from in the middle of the month): no ratio row for June.
      await t.store.run("INSERT INTO mid_stats SELECT mid, DATE '2026-06-10', DATE '2026-06-19', network, 5, 50, 1000, 10000, NULL, NULL, NULL, NULL, seen_at, landing_file FROM mid_stats WHERE window_start = DATE '2026-05-01'");
      await evaluateAlerts(t.store, { asOf: '2026-06-20T06:00:00Z', rules, now: new Date('2026-06-20T06:00:00Z'), full: true });
      expect(await latestMartMonth(t.store)).toBe('2026-05');
      expect((await ratioStatesOfLatestMonth(t.store)).rows.map((r) => `${r.mid} ${r.program} ${r.state}`)).toContain('m ecp level');
    } finally {
      cleanup(t.store, t.dir);
    }
  });

  it('writes negative figures with their sign, in SQL as in JS', async () => {
    const values = [-1500, -0.5, -1234.565, 1234.565, 0.005, 999.995, -0.0131];
    const sql = await store.all<{ f: string; p: string }>(`SELECT cbp_figure(v) AS f, cbp_percent(v) AS p FROM (VALUES ${values.map((v) => `(${v}::DOUBLE, ${values.indexOf(v)})`).join(', ')}) t(v, i) ORDER BY i`);
    expect(sql.map((r) => r.f)).toEqual(values.map(figure));
    expect(sql.map((r) => r.p)).toEqual(values.map(percent));
    expect(figure(-1500)).toBe('-1,500');
    expect(percent(-0.0131)).toBe('-1.31 %');
  });

  it('writes figures and percentages in SQL as in JS on each of its paths: whole numbers, hundredths in BIGINT and in HUGEINT', async () => {
    // Whole below 10^13 (written as they are), fractions and whole numbers from 10^13 (hundredths in a BIGINT), from
    // 9 x 10^16 (in a HUGEINT); halves at the hundredth, and percentages either side of 9 x 10^14. (Past 2^53 hundredths
    // JS's arithmetic is no longer exact, so the large values here are ones it represents exactly.)
    const values = [0, 1, 7, 999, 1000, 1500, 99_999, 1_234_567, 1e13 - 1, 1e13, 1e13 + 0.5, 12_345_678_901_234.56, 1e14 / 7, 9e16 - 8, 9e16, 1.5e17,
      0.125, 2.675, 0.015, 0.0151, 0.02995, 1e-9, 123_456_789.125, 9e11 - 1, 9.5e14, -2.675, -1e13, -9.5e14];
    const sql = await store.all<{ f: string; p: string }>(`SELECT cbp_figure(v) AS f, cbp_percent(v) AS p FROM (VALUES ${values.map((v, i) => `(${v}::DOUBLE, ${i})`).join(', ')}) t(v, i) ORDER BY i`);
    expect(sql.map((r) => r.f)).toEqual(values.map(figure));
    expect(sql.map((r) => r.p)).toEqual(values.map(percent));
    expect(figure(12_345_678_901_234.56)).toBe('12,345,678,901,234.56');
  });
});
