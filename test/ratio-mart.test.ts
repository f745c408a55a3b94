// The kept ratio table: mart_ratios is a plain read of ratio_mart, which every refresh (store/ratio-refresh.ts) judges in
// SQL from the months that changed. Its rows must be those the sources give, each explained as the oracle explains it
// (test/oracle/explain.ts), after a full and after incremental evaluations. And never "clear" on missing data: the MID
// report alone, a chargeback report covering half the month, counts that disagree, a level held through missing data.
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAfterLoad, evaluateAlerts } from '../alerts/engine.ts';
import { unknownRowsOf } from '../store/status.ts';
import { loadRules, type RuleSet } from '../rules/thresholds.ts';
import { martFreshness } from '../store/ratio-mart.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { computeRatios } from '../store/ratios.ts';
import { explainRows } from './oracle/explain.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { CERTAINTIES, EXPLAINED_RATIO_FIELDS, METRICS, PROGRAMS, RATIO_STATES, REGION_SOURCES } from '../contract/ratios.ts';
import { NETWORKS } from '../contract/common.ts';
import { Writable } from 'node:stream';
import { createLogger, log, setLogger } from '../lib/log.ts';
import { cleanup, coverChargebacks, insertChargebacks, insertStats, tempStore } from './ratios-fixtures.ts';

/** The explanation columns (the rest of a row are its figures, as the sources give them). */
const EXPLAINED = ['level', 'state', 'next_level', 'next_threshold', 'closeness', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by',
  'certainty', 'certainty_note', 'headroom_count', 'over_by_count', 'headroom_basis', 'fee_estimate', 'fee_currency', 'fee_basis'] as const;
/** An open month's chance of a breach (ratio_forecasts' headline; test/forecast-store.test.ts). */
const CHANCE = ['chance', 'chance_level', 'expected_count', 'expected_low80', 'expected_high80', 'pace_day'];
/** The figures' columns: every column of an explained row but the explanation and the chance. */
const FIGURES = EXPLAINED_RATIO_FIELDS.filter((c) => !(EXPLAINED as readonly string[]).includes(c) && !CHANCE.includes(c));

let t: { store: Store; dir: string } | undefined;
afterEach(() => { cleanup(t?.store, t?.dir); t = undefined; });

const count = async (s: Store, sql: string) => Number((await s.all<{ n: string }>(`SELECT count(*)::VARCHAR AS n FROM (${sql})`))[0].n);

/** Rows of mart_ratios not in `other` and the reverse, over the columns given. */
async function differ(s: Store, other: string, cols: string[], where = 'TRUE'): Promise<number> {
  const c = cols.join(', ');
  // The other rows computed once (two computations from the sources in one statement did not fit the store's 192MB).
  await s.run(`CREATE OR REPLACE TEMP TABLE differ_other AS ${other}`);
  try {
    return await count(s, `(SELECT ${c} FROM mart_ratios WHERE ${where} EXCEPT ALL SELECT ${c} FROM differ_other WHERE ${where})
      UNION ALL (SELECT ${c} FROM differ_other WHERE ${where} EXCEPT ALL SELECT ${c} FROM mart_ratios WHERE ${where})`);
  } finally {
    await s.run('DROP TABLE IF EXISTS differ_other');
  }
}

const EVERY = "DATE '0001-01-01', DATE '9999-12-01'";
/** The ratio rows computed now from the sources (not the kept inputs). */
const FROM_SOURCES = `SELECT * FROM ratio_rows_covered_between(${EVERY})`;

const key = (r: object) => { const x = r as Record<string, unknown>; return [x.mid, x.network, x.program, x.metric, x.month, x.is_projection].join('|'); };

/**
 * Rows of the kept table that are not what the sources and the oracle give now: every row of the sources there, with its
 * figures (compared in SQL) and its explanation as the oracle judges every row of every MID (0 when the table holds).
 */
async function wrongRows(s: Store, rules: RuleSet): Promise<number> {
  const figures = await differ(s, FROM_SOURCES, [...FIGURES]);
  const want = explainRows(await computeRatios(s), rules);
  const got = new Map((await s.all<Record<string, unknown>>(`SELECT mid, network, program, metric, month, is_projection, ${EXPLAINED.join(', ')} FROM mart_ratios`))
    .map((x) => [key(x), x]));
  let wrong = Math.abs(got.size - want.length);
  for (const w of want) {
    const g = got.get(key(w));
    if (!g) { wrong++; continue; }
    const a = Object.fromEntries(EXPLAINED.map((f) => [f, g[f]]));
    const b = Object.fromEntries(EXPLAINED.map((f) => [f, w[f]]));
    if (JSON.stringify(a) !== JSON.stringify(b)) {
      wrong++;
      if (wrong <= 3) expect(a, key(w)).toEqual(b);
    }
  }
  return figures + wrong;
}

describe('the kept ratio table', () => {
  it('holds every row the sources give, explained as the oracle explains it, after a full and after incremental evaluations', async () => {
    t = await tempStore();
    const s = t.store;
    const rules = loadRules();
    await generateRatioData(s, { mids: 60, months: 14 });
    const asOf = new Date(Date.UTC(2025, 1, 20));
    await evaluateAlerts(s, { asOf, rules, now: asOf });
    const rows = await count(s, 'SELECT * FROM mart_ratios');
    expect(rows).toBe(await count(s, FROM_SOURCES));
    expect(rows).toBeGreaterThan(10_000);
    expect(await wrongRows(s, rules)).toBe(0);
    // Plenty of rows with nothing missing, and none "clear" with something missing.
    expect(await count(s, 'SELECT * FROM mart_ratios WHERE missing_sources IS NULL AND NOT numerator_floor')).toBeGreaterThan(rows / 2);
    expect(await count(s, `SELECT * FROM mart_ratios WHERE state = 'clear' AND missing_sources IS NOT NULL`)).toBe(0);
    expect(await martFreshness(s)).toEqual({ current: true, behind: null, changedMonths: [] });
    // Judged again in tiles of a month or two (each its own transaction, runs carried from one to the next): the same rows.
    await s.run('CREATE OR REPLACE TEMP TABLE mart_before AS SELECT * EXCLUDE (explained_at) FROM mart_ratios');
    const { rows: again } = await refreshRatios(s, rules, { full: true, judgedRows: 900 });
    expect(again).toBe(rows);
    expect(await count(s, `(SELECT * EXCLUDE (explained_at) FROM mart_ratios EXCEPT ALL SELECT * FROM mart_before)
      UNION ALL (SELECT * FROM mart_before EXCEPT ALL SELECT * EXCLUDE (explained_at) FROM mart_ratios)`)).toBe(0);
    // A tile DuckDB runs out of memory on is judged again in halves (planted: every tile of more ruled rows than five
    // months'), by months, then by MIDs; a MID's month alone that does not fit fails the refresh, saying which and what
    // to do, and the table says it is behind.
    const [all, run] = [s.all.bind(s), s.run.bind(s)];
    let refused = 0;
    const oom = () => new Error('Out of Memory Error: could not allocate block of size 256.0 KiB (planted)');
    const plant = (refuse: (rows: { n: number; mids: string[] }) => boolean) => {
      s.run = (async (sql: string, params?: unknown[]) => {
        if (sql.includes('CREATE OR REPLACE TEMP TABLE _ratio_runs')) {
          const [r] = await all<{ n: number; mids: string[] }>('SELECT count(*)::INTEGER AS n, list(DISTINCT mid) AS mids FROM _ratio_rows');
          if (refuse(r!)) { refused++; throw oom(); }
        }
        return run(sql, params as never);
      }) as Store['run'];
    };
    const logged: string[] = [];
    const logger = log();
    setLogger(createLogger({ level: 'info', destination: new Writable({ write(c, _e, cb) { logged.push(String(c)); cb(); } }) }));
    try {
      const [{ n: month }] = await all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM mart_ratios WHERE month = '2024-06' AND state IS NOT NULL");
      plant((r) => r.n > month * 5);
      expect((await refreshRatios(s, rules, { full: true, judgedRows: 1e9 })).rows).toBe(rows);
      // Each halving is said, with the months, the MIDs and the setting to raise: every month's, then fewer months'; the
      // tiles after it are of the size that fitted (none refused).
      const warned = logged.map((l) => JSON.parse(l) as { msg: string; months: string; mids: string; memoryLimit: string }).filter((l) => l.msg.includes('judges them again in halves'));
      expect(warned.length).toBe(refused);
      expect(warned[0]).toMatchObject({ months: expect.stringMatching(/^0000-01\.\./), mids: 'all' });
      expect(warned.length).toBeGreaterThan(1);
      expect(warned.every((w) => w.mids === 'all')).toBe(true);
      expect(warned.map((w) => w.months.split('..')[1]).every((to, i, a) => i === 0 || to <= a[i - 1]!)).toBe(true);
      expect(warned[0]!.memoryLimit).toBe('192MB');
      expect(warned[0]!.msg).toContain('CBP_STORE_MEMORY_LIMIT');
      expect(await count(s, `(SELECT * EXCLUDE (explained_at) FROM mart_ratios EXCEPT ALL SELECT * FROM mart_before)
        UNION ALL (SELECT * FROM mart_before EXCEPT ALL SELECT * EXCLUDE (explained_at) FROM mart_ratios)`)).toBe(0);
      plant((r) => r.mids.includes('mid000007'));
      await expect(refreshRatios(s, rules, { full: true, judgedRows: 1e9 })).rejects.toThrow(/CBP_STORE_MEMORY_LIMIT \(192MB\) is too small to judge the ratios of MID mid000007 in \d{4}-\d{2}: raise it/);
      expect((await martFreshness(s)).current).toBe(false);
      // The rows, written last in one statement, out of memory on one thread: the same, for every MID.
      plant(() => false);
      s.all = (async (sql: string, params?: unknown[]) => (sql.includes('INSERT INTO ratio_mart BY NAME') ? Promise.reject(oom()) : all(sql, params as never))) as Store['all'];
      await expect(refreshRatios(s, rules, { full: true })).rejects.toThrow(/CBP_STORE_MEMORY_LIMIT \(192MB\) is too small to judge the ratios of every MID: raise it/);
      expect((await martFreshness(s)).current).toBe(false);
    } finally {
      [s.all, s.run] = [all, run];
      setLogger(logger);
    }
    await refreshRatios(s, rules);
    await s.run('DROP TABLE mart_before');

    // A re-fetch revises a month, another month is loaded, a MID's figures are withdrawn: behind until evaluated.
    await s.run("UPDATE mid_stats SET chargeback_count = chargeback_count * 9 WHERE mid = 'mid000007' AND window_start = DATE '2024-11-01'");
    await generateRatioData(s, { mids: 60, months: 15, firstMonth: 14 });
    expect((await martFreshness(s)).current).toBe(false);
    const next = new Date(Date.UTC(2025, 2, 20));
    const r = await evaluateAlerts(s, { asOf: next, rules, now: next });
    expect(r.fromMonth).toBe('2024-11');
    expect(await wrongRows(s, rules)).toBe(0);
    // The revision taken back: the levels it gave later months (not touched) go too.
    const held = "SELECT * FROM mart_ratios WHERE mid = 'mid000007' AND month > '2024-11' AND level IS NOT NULL";
    expect(await count(s, held)).toBeGreaterThan(0);
    await s.run("UPDATE mid_stats SET chargeback_count = chargeback_count / 9 WHERE mid = 'mid000007' AND window_start = DATE '2024-11-01'");
    expect((await evaluateAlerts(s, { asOf: next, rules, now: next })).fromMonth).toBe('2024-11');
    expect(await count(s, held)).toBe(0);
    expect(await wrongRows(s, rules)).toBe(0);
    // Nothing new: nothing judged, the same rows.
    expect((await evaluateAlerts(s, { asOf: next, rules, now: next })).fromMonth).toBeUndefined();
    expect(await wrongRows(s, rules)).toBe(0);
    await s.run("DELETE FROM mid_stats WHERE mid = 'mid000059'");
    await evaluateAlerts(s, { asOf: next, rules, now: next });
    expect(await wrongRows(s, rules)).toBe(0);
    expect(await count(s, "SELECT * FROM mart_ratios WHERE mid = 'mid000059'")).toBe(0);
    expect(await martFreshness(s)).toEqual({ current: true, behind: null, changedMonths: [] });
  }, 120_000);

  it('stores closed sets as ENUMs holding every value of the contract, and shows every column as text or with the type the SQL gives', async () => {
    t = await tempStore();
    const s = t.store;
    const byteOrder = (xs: readonly string[]) => [...xs].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1));
    const [e] = await s.all<Record<string, string[]>>(`SELECT enum_range(NULL::ratio_network)::VARCHAR[] AS n, enum_range(NULL::ratio_program)::VARCHAR[] AS p, enum_range(NULL::ratio_metric)::VARCHAR[] AS m,
      enum_range(NULL::ratio_state)::VARCHAR[] AS st, enum_range(NULL::ratio_region_source)::VARCHAR[] AS rs, enum_range(NULL::ratio_certainty)::VARCHAR[] AS c`);
    expect(e).toEqual({ n: byteOrder(NETWORKS), p: byteOrder(PROGRAMS), m: byteOrder(METRICS), st: byteOrder(RATIO_STATES), rs: byteOrder(REGION_SOURCES), c: byteOrder(CERTAINTIES) });
    const types = async (sql: string) => new Map((await s.all<{ column_name: string; column_type: string }>(`SELECT column_name, column_type FROM (DESCRIBE ${sql})`))
      .map((c) => [c.column_name, c.column_type]));
    const table = await types('SELECT * FROM ratio_mart');
    const closed = ['network', 'program', 'metric', 'state', 'region_source', 'certainty', 'headroom_basis', 'fee_basis'];
    const enums = await types(`SELECT ${closed.map((c) => `NULL::ratio_${c} AS ${c}`).join(', ')}`);
    expect(closed.map((c) => `${c} ${table.get(c)}`)).toEqual(closed.map((c) => `${c} ${enums.get(c)}`));
    // mart_ratios: every field of an explained row and explained_at; the figures typed as the SQL computes them from the
    // sources, the explanation's closed sets as text.
    const shown = await types('SELECT * FROM mart_ratios');
    expect([...shown.keys()].sort()).toEqual([...EXPLAINED_RATIO_FIELDS, 'explained_at'].sort());
    const sources = await types(FROM_SOURCES);
    expect(FIGURES.map((c) => `${c} ${shown.get(c)}`)).toEqual(FIGURES.map((c) => `${c} ${sources.get(c)}`));
    const text = ['level', 'state', 'next_level', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by', 'certainty', 'certainty_note',
      'headroom_basis', 'fee_currency', 'fee_basis'];
    expect(EXPLAINED.map((c) => `${c} ${shown.get(c)}`)).toEqual(EXPLAINED.map((c) => `${c} ${text.includes(c) ? 'VARCHAR' : 'DOUBLE'}`));
    expect(shown.get('explained_at')).toBe('TIMESTAMP');
  });

  it('says it is behind when the last write did not finish', async () => {
    t = await tempStore();
    await insertStats(t.store, [{ mid: 'm', network: 'mastercard', month: '2026-01', cb: 20, tx: 10_000 }, { mid: 'm', network: 'mastercard', month: '2026-04', cb: 20, tx: 10_000 }]);
    await evaluateAlerts(t.store, { asOf: '2026-04-20T06:00:00Z', rules: loadRules(), now: new Date('2026-04-20T06:00:00Z') });
    await t.store.run('UPDATE ratio_mart_state SET complete = FALSE');
    expect((await martFreshness(t.store)).behind).toBe('the last write of the ratio table did not finish: run `cbp alerts evaluate`');
    // The next evaluation judges every month again (the last write was cut short), though no source changed.
    await t.store.run("DELETE FROM ratio_mart WHERE month = '2026-01'");
    const r = await evaluateAlerts(t.store, { asOf: '2026-04-20T06:00:00Z', rules: loadRules(), now: new Date('2026-04-20T06:00:00Z') });
    expect(r.fromMonth).toBeNull();
    expect(await count(t.store, "SELECT * FROM mart_ratios WHERE month = '2026-01'")).toBeGreaterThan(0);
    expect(await martFreshness(t.store)).toEqual({ current: true, behind: null, changedMonths: [] });
  });
});

describe('never "clear" on missing data', () => {
  const asOf = '2026-05-20T06:00:00Z';
  const evaluate = (s: Store, at = asOf) => evaluateAlerts(s, { asOf: at, rules: loadRules(), now: new Date(at) });
  const row = async (s: Store, mid: string, program: string, month: string) =>
    (await s.all<Record<string, unknown>>(`SELECT * FROM mart_ratios WHERE mid = $mid AND program = $program AND month = $month AND metric = 'count' AND NOT is_projection`,
      { mid, program, month }))[0];

  it('with the MID report alone: VAMP counts the MID report\'s disputes as its floor and is unknown, naming the chargeback report and the command', async () => {
    t = await tempStore();
    const s = t.store;
    // 100 Visa disputes over 5,000 transactions in the MID report; the chargeback report was never loaded.
    await insertStats(s, [{ mid: 'v', network: 'visa', month: '2026-04', cb: 100, tx: 5_000, cbReport: false }]);
    await evaluate(s);
    const v = await row(s, 'v', 'vamp', '2026-04');
    expect(v.state).toBe('unknown');
    expect(v.numerator_floor).toBe(true);
    expect(v.numerator).toBeGreaterThanOrEqual(100);
    expect(v.ratio).toBeGreaterThanOrEqual(0.02);
    expect(v.missing_sources).toContain('chargeback report not loaded for 2026-04-30: cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30 (or cbp load chargebacks FILE --from 2026-04-01 --to 2026-04-30)');
    expect(String(v.reason)).toMatch(/^chargeback report not loaded for 2026-04-30/);
    expect(String(v.reason)).toContain('disputes counted from the MID report');
    // cbp status and the nightly's summary name it with what to load.
    const missing = ['TC40 reports not captured before the first event: they arrive as prevention events only (cbp run subscriptions, then cbp run ingest)',
      'chargeback report not loaded for 2026-04-30: cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30 (or cbp load chargebacks FILE --from 2026-04-01 --to 2026-04-30)'];
    expect(await unknownRowsOf(s, '2026-04')).toEqual({ series: 1, missing: missing.map((m) => ({ missing: m, series: 1 })) });
    const after = await evaluateAfterLoad(s, { asOf, rules: loadRules(), notify: false, now: new Date(asOf) });
    expect(after.unknown).toEqual({ series: 1, missing });
  });

  it('with a chargeback report covering half the month: EFM and VAMP are unknown, saying how far it is loaded', async () => {
    t = await tempStore();
    const s = t.store;
    await insertStats(s, [
      { mid: 'm', network: 'mastercard', month: '2026-03', cb: 10, tx: 10_000, cbReport: false },
      { mid: 'm', network: 'mastercard', month: '2026-04', cb: 10, tx: 10_000, cbReport: false },
    ]);
    await coverChargebacks(s, '2026-03-01', '2026-03-31');
    await coverChargebacks(s, '2026-04-01', '2026-04-15');
    await insertChargebacks(s, [{ mid: 'm', network: 'mastercard', received: '2026-04-03', n: 10, reasonCode: '4853' }]);
    await evaluate(s);
    const efm = await row(s, 'm', 'efm', '2026-04');
    expect(efm.state).toBe('unknown');
    expect(efm.missing_sources).toBe('chargeback report not loaded for 2026-04-30 (loaded to 2026-04-15): cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30 (or cbp load chargebacks FILE --from 2026-04-01 --to 2026-04-30)');
    // ECP reads the MID report's own count: nothing missing.
    expect(await row(s, 'm', 'ecp', '2026-04')).toMatchObject({ state: 'clear', missing_sources: null });
    // The rest of the month loaded: known again, after the next evaluation.
    await coverChargebacks(s, '2026-04-16', '2026-04-30');
    expect((await martFreshness(s)).changedMonths).toEqual(['2026-04']);
    await evaluate(s);
    expect(await row(s, 'm', 'efm', '2026-04')).toMatchObject({ state: 'clear', missing_sources: null });
  });

  it('in the month to date: the MID report fetched on the service\'s day in progress needs the chargeback report through the day before', async () => {
    t = await tempStore();
    const s = t.store;
    // As the nightly fetches them on 2026-05-20: the MID report over 05-01..05-20 (that day in progress), the
    // chargeback report over the same window, covering through 05-19 (a fetch counts up to the day before its answer).
    await insertStats(s, [{ mid: 'm', network: 'mastercard', month: '2026-04', cb: 10, tx: 10_000 },
      { mid: 'm', network: 'mastercard', month: '2026-05', endDay: 20, cb: 5, tx: 6_000, cbReport: false }]);
    for (const kind of ['chargebacks', 'mid_report']) {
      await s.run(`INSERT INTO report_fetches VALUES ($kind, DATE '2026-05-01', DATE '2026-05-20', TIMESTAMP '2026-05-20 06:00:00', TIMESTAMP '2026-05-20 06:00:00', 0, 0, 'fixture')`, { kind });
    }
    await evaluate(s);
    expect(await row(s, 'm', 'efm', '2026-05')).toMatchObject({ is_partial: true, state: 'clear', missing_sources: null });
    // A chargeback report loaded only through 05-18 still leaves it unknown, naming the 19th.
    await s.run("DELETE FROM report_fetches WHERE kind = 'chargebacks' AND window_start = DATE '2026-05-01'");
    await coverChargebacks(s, '2026-05-01', '2026-05-18');
    await evaluate(s);
    expect(String((await row(s, 'm', 'efm', '2026-05'))!.missing_sources)).toMatch(/^chargeback report not loaded for 2026-05-19 \(loaded to 2026-05-18\)/);
  });

  it('when the chargeback report lists more cases than the MID report counts: unknown, with both counts', async () => {
    t = await tempStore();
    const s = t.store;
    await insertStats(s, [
      { mid: 'm', network: 'mastercard', month: '2026-03', cb: 10, tx: 10_000 },
      { mid: 'm', network: 'mastercard', month: '2026-04', cb: 10, tx: 10_000 },
    ]);
    await insertChargebacks(s, [{ mid: 'm', network: 'mastercard', received: '2026-04-03', n: 130, reasonCode: '4853' }]);
    await evaluate(s);
    const ecp = await row(s, 'm', 'ecp', '2026-04');
    expect(ecp.state).toBe('unknown');
    expect(ecp.missing_sources).toBe('chargeback counts disagree (chargeback report 130, MID report 10): cbp run backfill --kinds chargebacks,mid_report --from 2026-04-01 --to 2026-04-30 --force');
    // Within the tolerance (5 cases and 10 %): known.
    await s.run("DELETE FROM chargebacks WHERE mid = 'm' AND case_number NOT IN (SELECT case_number FROM chargebacks WHERE mid = 'm' ORDER BY case_number LIMIT 14)");
    await evaluate(s);
    expect(await row(s, 'm', 'ecp', '2026-04')).toMatchObject({ state: 'clear', missing_sources: null });
  });

  it('holds a level through months whose data is missing: no resolved notice, and unknown shown with what to load', async () => {
    t = await tempStore();
    const s = t.store;
    const months = ['2026-01', '2026-02', '2026-03', '2026-04', '2026-05', '2026-06', '2026-07'];
    // ECM (2 %, 200 chargebacks) in January to March; then the MID report says 10 but the chargeback report lists 300.
    await insertStats(s, [{ mid: 'm', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
      ...months.map((month, i) => ({ mid: 'm', network: 'mastercard' as const, month, cb: i < 3 ? 200 : 10, tx: 10_000 }))]);
    for (const [i, month] of months.entries()) {
      await insertChargebacks(s, [{ mid: 'm', network: 'mastercard', received: `${month}-05`, n: i < 3 ? 200 : 300, reasonCode: '4853' }]);
    }
    const r = await evaluate(s, '2026-07-20T06:00:00Z');
    const kinds = r.newNotices.filter((n) => n.program === 'ecp').map((n) => `${n.kind} ${n.month}`);
    expect(kinds).toContain('reached 2026-01');
    expect(kinds.filter((k) => k.startsWith('resolved'))).toEqual([]);
    const june = await row(s, 'm', 'ecp', '2026-06');
    expect(june).toMatchObject({ state: 'level', level: 'ecm' });
    expect(String(june.reason)).toMatch(/^chargeback counts disagree \(chargeback report 300, MID report 10\)/);
  });

  it('judges a month on the figures its rules read: ECM held through a month whose amount only misses its previous month, with no unknown notice', async () => {
    t = await tempStore();
    const s = t.store;
    // ECM in January and February; no MID report for March; April below it, its count over the previous month's
    // transactions the April record gives, its amount without one (no previous amount, no March window).
    await insertStats(s, [{ mid: 'm', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
      { mid: 'm', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 }, { mid: 'm', network: 'mastercard', month: '2026-02', cb: 200, tx: 10_000 },
      { mid: 'm', network: 'mastercard', month: '2026-04', cb: 10, tx: 10_000, prevTx: 10_000, prevTxAmount: null }]);
    const r = await evaluate(s);
    const april = await row(s, 'm', 'ecp', '2026-04');
    expect(april).toMatchObject({ state: 'level', level: 'ecm', missing_sources: null });
    expect(april.reason).toMatch(/^ECM kept until 3 consecutive months below \(2 so far\); /);
    const [amount] = await s.all<Record<string, unknown>>("SELECT * FROM mart_ratios WHERE mid = 'm' AND program = 'ecp' AND month = '2026-04' AND metric = 'amount'");
    expect(String(amount.missing_sources)).toMatch(/^MID report for 2026-03 not loaded as a complete month/);
    expect(r.newNotices.filter((n) => n.program === 'ecp').map((n) => `${n.kind} ${n.month}`)).toEqual(['reached 2026-01']);
  });
});

describe('the ratio rows\' write', () => {
  /** A store of 20 MIDs × 6 months judged again with its ratio rows' inserts refused (out of memory) where `refuse` says,
   * given the store's threads and the insert's number: the refresh's rows must be the first's. The threads of each insert, and what was logged. */
  async function refusedWrites(refuse: (threads: number, n: number) => boolean) {
    t = await tempStore({ memoryLimit: '512MB' });
    const s = t.store;
    await s.run('SET threads = 2');
    await generateRatioData(s, { mids: 20, months: 6 });
    const rules = loadRules();
    const rows = (await refreshRatios(s, rules, { full: true })).rows;
    const [all, logged, logger] = [s.all.bind(s), [] as string[], log()];
    const setting = async (name: string) => (await all<{ v: string }>(`SELECT current_setting('${name}')::VARCHAR AS v`))[0]!.v;
    const [threads, buffered] = [async () => Number(await setting('threads')), await setting('write_buffer_row_group_count')];
    const tried: number[] = [];
    s.all = (async (sql: string, params?: unknown[]) => {
      if (!sql.includes('INSERT INTO ratio_mart BY NAME')) return all(sql, params as never);
      tried.push(await threads());
      return refuse(tried.at(-1)!, tried.length) ? Promise.reject(new Error('Out of Memory Error: could not allocate block of size 256.0 KiB (planted)')) : all(sql, params as never);
    }) as Store['all'];
    setLogger(createLogger({ level: 'info', destination: new Writable({ write(c, _e, cb) { logged.push(String(c)); cb(); } }) }));
    try {
      expect((await refreshRatios(s, rules, { full: true })).rows).toBe(rows);
    } finally {
      s.all = all;
      setLogger(logger);
    }
    return { s, rules, tried, logged, threads, buffered: async () => (await setting('write_buffer_row_group_count')) === buffered };
  }

  it('writes the rows again on one thread when several run out of memory, saying so, and leaves the store its settings', async () => {
    const { s, rules, tried, logged, threads, buffered } = await refusedWrites((n) => n > 1);
    expect(tried).toEqual([2, 1]);
    expect(logged.some((l) => l.includes('done again on one thread'))).toBe(true);
    expect(await threads()).toBe(2);
    expect(await buffered()).toBe(true);
    expect(await wrongRows(s, rules)).toBe(0);
  });

  it('writes the rows a month an insert when one thread runs out of memory too, saying so', async () => {
    const { s, rules, tried, logged } = await refusedWrites((_n, i) => i <= 2);
    expect(tried.length).toBe(2 + 6); // two refused, then one a month
    expect(logged.filter((l) => l.includes('on one thread')).length).toBe(1);
    expect(logged.filter((l) => l.includes('a month at a time')).length).toBe(1);
    expect(await wrongRows(s, rules)).toBe(0);
  });

  it('writes the same rows from runs judged in one tile, in one insert, as in many; a whole judgement commits each insert', async () => {
    t = await tempStore();
    const s = t.store;
    await generateRatioData(s, { mids: 30, months: 8 });
    const rules = loadRules();
    await refreshRatios(s, rules, { full: true, judgedRows: 1e9 });
    await s.run('CREATE TABLE one_tile AS SELECT * EXCLUDE (judged_at) FROM ratio_mart');
    await refreshRatios(s, rules, { full: true, judgedRows: 50 });
    expect(await count(s, `(SELECT * EXCLUDE (judged_at) FROM ratio_mart EXCEPT ALL SELECT * FROM one_tile)
      UNION ALL (SELECT * FROM one_tile EXCEPT ALL SELECT * EXCLUDE (judged_at) FROM ratio_mart)`)).toBe(0);
    expect(await count(s, 'SELECT * FROM ratio_mart')).toBeGreaterThan(1000);
    // Its inserts commit one by one (a month each here): one failing leaves those before it and the table behind; the next
    // refresh writes it whole again.
    const all = s.all.bind(s);
    let inserts = 0;
    s.all = (async (sql: string, params?: unknown[]) => (sql.includes('INSERT INTO ratio_mart BY NAME') && ++inserts === 3
      ? Promise.reject(new Error('killed (planted)')) : all(sql, params as never))) as Store['all'];
    try {
      await expect(refreshRatios(s, rules, { full: true, judgedRows: 50 })).rejects.toThrow('killed (planted)');
    } finally {
      s.all = all;
    }
    expect(await count(s, 'SELECT DISTINCT month FROM ratio_mart')).toBe(2);
    expect((await martFreshness(s)).current).toBe(false);
    await refreshRatios(s, rules, { judgedRows: 50 });
    expect((await martFreshness(s)).current).toBe(true);
    expect(await count(s, `(SELECT * EXCLUDE (judged_at) FROM ratio_mart EXCEPT ALL SELECT * FROM one_tile)
      UNION ALL (SELECT * FROM one_tile EXCEPT ALL SELECT * EXCLUDE (judged_at) FROM ratio_mart)`)).toBe(0);
  });
});
