// The kept ratio table (issue #26): mart_ratios is a plain read of ratio_mart, which every evaluation writes for the
// months it judged. Its rows must be what the view computed before, on every row: the old view's SQL is kept here as
// the reference (REF_SQL, as it was before the table), and the table is also held against the same SQL computed from
// the sources now. And never "clear" on missing data: the MID report alone, a chargeback report covering half the
// month, counts that disagree, and a level held (no resolved notice) through months whose data is missing.
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAfterLoad, evaluateAlerts } from '../alerts/engine.ts';
import { unknownRowsOf } from '../store/status.ts';
import { loadRules } from '../rules/thresholds.ts';
import { martFreshness, writeRatioMart } from '../store/ratio-mart.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { CERTAINTIES, METRICS, PROGRAMS, RATIO_STATES, REGION_SOURCES } from '../contract/ratios.ts';
import { NETWORKS } from '../contract/common.ts';
import { cleanup, coverChargebacks, insertChargebacks, insertStats, tempStore } from './ratios-fixtures.ts';

/** mart_ratios_between as it was while mart_ratios was a view (before issue #26), as a temp macro. */
const REF_SQL = `
CREATE OR REPLACE TEMP MACRO ref_mart_ratios_between(first_day, last_day) AS TABLE
WITH ev AS (
  SELECT as_of_month, default_region, evaluated_at, least(1.0, coalesce(watch_fraction, 1.0)) AS band
    FROM ratio_evaluations ORDER BY evaluated_at DESC LIMIT 1
), targets AS (
  SELECT DISTINCT network, program, metric FROM ratio_rule_targets
), r AS (
  SELECT r.*,
    x.mid IS NOT NULL AS stored,
    x.mid IS NULL AND t.network IS NOT NULL AND g.mid IS NULL AND r.month <= ev.as_of_month AS cold,
    x.level AS x_level, x.state AS x_state, x.next_level AS x_next_level, x.next_threshold AS x_next_threshold,
    x.closeness AS x_closeness, x.reason AS x_reason, x.region AS x_region, x.region_source AS x_region_source,
    x.monitored_as AS x_monitored_as, x.superseded_by AS x_superseded_by, x.certainty AS x_certainty,
    x.certainty_note AS x_certainty_note, x.explained_at AS x_explained_at,
    coalesce(c.class, '') AS rules_class,
    coalesce(c.region, ev.default_region) AS cold_region,
    coalesce(c.region_source, 'default') AS cold_region_source,
    ev.evaluated_at, ev.band
  FROM ratio_rows_covered_between(first_day, last_day) r
  LEFT JOIN ratio_explanations x
    ON x.mid = r.mid AND x.network = r.network AND x.program = r.program AND x.metric = r.metric
   AND x.month = r.month AND x.is_projection = r.is_projection
  LEFT JOIN ev ON TRUE
  LEFT JOIN targets t ON t.network = r.network AND t.program = r.program AND t.metric = r.metric
  LEFT JOIN ratio_rule_grouped g ON g.mid = r.mid AND g.program = r.program
  LEFT JOIN ratio_rule_mids c ON c.mid = r.mid
), j AS (
  SELECT r.* REPLACE (
           -- A row not stored that meets a watch band of a rule in force now changed after the evaluation (a load,
           -- or events, after it): it was not judged so, and is not explained until the next evaluation.
           r.cold AND NOT coalesce(list_bool_or(list_transform(p.bands, lambda b:
             isfinite(r.ratio)
             AND CASE b.comparison WHEN '>=' THEN r.ratio >= b.threshold * r.band ELSE r.ratio > b.threshold * r.band END
             AND coalesce(list_bool_and(list_transform(b.conditions, lambda c: coalesce(CASE c.cmp
                   WHEN '>=' THEN cbp_condition_value(c.field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount) >= c.value * r.band
                   ELSE cbp_condition_value(c.field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount) > c.value * r.band END, FALSE))), TRUE))), FALSE) AS cold),
         p.level AS p_level, p.comparison AS p_comparison, p.threshold AS p_threshold, p.threshold_text AS p_threshold_text,
         p.certainty AS p_certainty, p.certainty_note AS p_certainty_note,
         -- The pick's conditions this row fails, as text: each with the row's figure it reads (v), the failing ones
         -- kept, each written as its text. Computed here for every row rather than inside the reason's CASE below:
         -- lambdas under a CASE branch ran 3 times slower there and held about 35 MiB more (DuckDB 1.5).
         nullif(array_to_string(list_transform(list_filter(
           list_transform(p.conditions, lambda k: {'label': k.label, 'cmp': k.cmp, 'value': k.value, 'value_text': k.value_text,
             'v': cbp_condition_value(k.field, r.numerator_count, r.numerator_amount, r.denominator_count, r.denominator_amount, r.month_transaction_count, r.month_transaction_amount)}),
           lambda k: k.v IS NULL OR (k.cmp = '>=' AND NOT (k.v >= k.value)) OR (k.cmp = '>' AND NOT (k.v > k.value))),
           lambda k: CASE WHEN k.v IS NULL THEN k.label || ' not in the data'
                          WHEN k.cmp = '>=' THEN k.label || ' ' || cbp_figure(k.v) || ' < ' || k.value_text || ' minimum'
                          ELSE k.label || ' ' || cbp_figure(k.v) || ' not above ' || k.value_text END), '; '), '') AS p_failed
  FROM r
  LEFT JOIN ratio_rule_picks p
    ON p.class = r.rules_class AND p.network = r.network AND p.program = r.program AND p.metric = r.metric
   AND r.month >= p.from_month AND r.month <= p.to_month
)
SELECT
  j.* EXCLUDE (stored, cold, x_level, x_state, x_next_level, x_next_threshold, x_closeness, x_reason, x_region, x_region_source,
               x_monitored_as, x_superseded_by, x_certainty, x_certainty_note, x_explained_at, rules_class, cold_region,
               cold_region_source, evaluated_at, band, p_level, p_comparison, p_threshold, p_threshold_text, p_certainty,
               p_certainty_note, p_failed),
  CASE WHEN stored THEN x_level END AS level,
  CASE WHEN stored THEN x_state WHEN cold AND p_level IS NOT NULL THEN 'clear' END AS state,
  CASE WHEN stored THEN x_next_level WHEN cold THEN p_level END AS next_level,
  CASE WHEN stored THEN x_next_threshold WHEN cold THEN p_threshold END AS next_threshold,
  CASE WHEN stored THEN x_closeness WHEN cold AND ratio IS NOT NULL AND p_threshold > 0 THEN ratio / p_threshold END AS closeness,
  CASE WHEN stored THEN x_reason WHEN cold AND p_level IS NOT NULL THEN nullif(concat_ws('; ',
    CASE WHEN ratio IS NULL OR NOT isfinite(ratio) THEN 'no ratio (' || coalesce(no_ratio_reason, 'no figures') || ')'
         WHEN p_comparison = '>=' AND NOT (ratio >= p_threshold) THEN 'ratio ' || cbp_percent(ratio) || ' < ' || p_threshold_text
         WHEN p_comparison = '>' AND NOT (ratio > p_threshold) THEN 'ratio ' || cbp_percent(ratio) || ' not above ' || p_threshold_text END,
    p_failed), '') END AS reason,
  CASE WHEN stored THEN x_region WHEN cold THEN cold_region END AS region,
  CASE WHEN stored THEN x_region_source WHEN cold THEN cold_region_source END AS region_source,
  CASE WHEN stored THEN x_monitored_as WHEN cold THEN mid END AS monitored_as,
  CASE WHEN stored THEN x_superseded_by END AS superseded_by,
  CASE WHEN stored THEN x_certainty WHEN cold THEN p_certainty END AS certainty,
  CASE WHEN stored THEN x_certainty_note WHEN cold THEN p_certainty_note END AS certainty_note,
  CASE WHEN stored THEN x_explained_at WHEN cold THEN evaluated_at END AS explained_at
FROM j;
`;

/** The columns mart_ratios had then. */
const OLD_COLUMNS = ['mid', 'network', 'program', 'metric', 'month', 'numerator', 'denominator', 'denominator_month', 'ratio', 'ratio_pct', 'ratio_bps',
  'no_ratio_reason', 'is_projection', 'is_partial', 'days_covered', 'days_in_month', 'numerator_count', 'numerator_amount', 'denominator_count',
  'denominator_amount', 'month_transaction_count', 'month_transaction_amount', 'tc40_observed_from', 'numerator_complete', 'level', 'state',
  'next_level', 'next_threshold', 'closeness', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by', 'certainty', 'certainty_note',
  'explained_at'];

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

/** Every column of mart_ratios, in its order. */
const martColumns = async (s: Store) => (await s.all<{ column_name: string }>('SELECT column_name FROM (DESCRIBE SELECT * FROM mart_ratios)')).map((c) => c.column_name);

const EVERY = "DATE '0001-01-01', DATE '9999-12-01'";
/** The mart's SQL computed now from the sources, as mart_ratios shows it (a row explained from the rules: the last evaluation's time). */
const FROM_SOURCES = `SELECT * EXCLUDE (explained_cold) REPLACE (CASE WHEN explained_cold THEN (SELECT max(evaluated_at) FROM ratio_evaluations) ELSE explained_at END AS explained_at)
  FROM ratio_mart_rows_between(${EVERY})`;

describe('the kept ratio table', () => {
  it('holds every row the old view returned, and the same SQL from the sources, after a full and after incremental evaluations', async () => {
    t = await tempStore();
    const s = t.store;
    const rules = loadRules();
    await generateRatioData(s, { mids: 60, months: 14 });
    await s.run(REF_SQL);
    const asOf = new Date(Date.UTC(2025, 1, 20));
    await evaluateAlerts(s, { asOf, rules, now: asOf });
    const rows = await count(s, 'SELECT * FROM mart_ratios');
    expect(rows).toBe(await count(s, `SELECT * FROM ref_mart_ratios_between(${EVERY})`));
    expect(rows).toBeGreaterThan(10_000);
    expect(await differ(s, FROM_SOURCES, await martColumns(s))).toBe(0);
    // The old view's rows, every column it had, where the figures need nothing missing (those rows are "unknown" now,
    // and VAMP takes the MID report's count as its floor: below).
    const same = "missing_sources IS NULL AND NOT numerator_floor";
    const old = `SELECT r.*, m.missing_sources, m.numerator_floor FROM ref_mart_ratios_between(${EVERY}) r
      JOIN mart_ratios m USING (mid, network, program, metric, month, is_projection)`;
    expect(await count(s, `SELECT * FROM mart_ratios WHERE ${same}`)).toBeGreaterThan(rows / 2);
    expect(await differ(s, old, OLD_COLUMNS, same)).toBe(0);
    // Rows that differ from the old view differ only by saying what is missing.
    expect(await count(s, `SELECT * FROM mart_ratios WHERE state = 'clear' AND missing_sources IS NOT NULL`)).toBe(0);
    expect(await martFreshness(s)).toEqual({ current: true, behind: null, changedMonths: [] });
    // Written again in runs of a few months (each its own transaction): the same rows.
    const { rows: again } = await writeRatioMart(s, { fromMonth: null, inputRows: 500 });
    expect(again).toBe(rows);
    expect(await differ(s, FROM_SOURCES, await martColumns(s))).toBe(0);

    // A re-fetch revises a month, another month is loaded, a MID's figures are withdrawn: behind until evaluated.
    await s.run("UPDATE mid_stats SET chargeback_count = chargeback_count * 9 WHERE mid = 'mid000007' AND window_start = DATE '2024-11-01'");
    await generateRatioData(s, { mids: 60, months: 15, firstMonth: 14 });
    expect((await martFreshness(s)).current).toBe(false);
    const next = new Date(Date.UTC(2025, 2, 20));
    const r = await evaluateAlerts(s, { asOf: next, rules, now: next });
    expect(r.fromMonth).toBe('2024-11');
    expect(await differ(s, FROM_SOURCES, await martColumns(s))).toBe(0);
    // The revision taken back: the levels it gave later months (not touched, written for the MIDs judged) go too.
    const held = "SELECT * FROM mart_ratios WHERE mid = 'mid000007' AND month > '2024-11' AND level IS NOT NULL";
    expect(await count(s, held)).toBeGreaterThan(0);
    await s.run("UPDATE mid_stats SET chargeback_count = chargeback_count / 9 WHERE mid = 'mid000007' AND window_start = DATE '2024-11-01'");
    expect((await evaluateAlerts(s, { asOf: next, rules, now: next })).fromMonth).toBe('2024-11');
    expect(await count(s, held)).toBe(0);
    expect(await differ(s, FROM_SOURCES, await martColumns(s))).toBe(0);
    // Nothing new: the same rows.
    await evaluateAlerts(s, { asOf: next, rules, now: next });
    expect(await differ(s, FROM_SOURCES, await martColumns(s))).toBe(0);
    await s.run("DELETE FROM mid_stats WHERE mid = 'mid000059'");
    await evaluateAlerts(s, { asOf: next, rules, now: next });
    expect(await differ(s, FROM_SOURCES, await martColumns(s))).toBe(0);
    expect(await count(s, "SELECT * FROM mart_ratios WHERE mid = 'mid000059'")).toBe(0);
    expect(await differ(s, old, OLD_COLUMNS, same)).toBe(0);
    expect(await martFreshness(s)).toEqual({ current: true, behind: null, changedMonths: [] });
  }, 120_000);

  it('stores closed sets as ENUMs holding every value of the contract, and shows every column with the type the SQL gives', async () => {
    t = await tempStore();
    const s = t.store;
    const byteOrder = (xs: readonly string[]) => [...xs].sort((x, y) => (Buffer.from(x) < Buffer.from(y) ? -1 : 1));
    const [e] = await s.all<Record<string, string[]>>(`SELECT enum_range(NULL::ratio_network)::VARCHAR[] AS n, enum_range(NULL::ratio_program)::VARCHAR[] AS p, enum_range(NULL::ratio_metric)::VARCHAR[] AS m,
      enum_range(NULL::ratio_state)::VARCHAR[] AS st, enum_range(NULL::ratio_region_source)::VARCHAR[] AS rs, enum_range(NULL::ratio_certainty)::VARCHAR[] AS c`);
    expect(e).toEqual({ n: byteOrder(NETWORKS), p: byteOrder(PROGRAMS), m: byteOrder(METRICS), st: byteOrder(RATIO_STATES), rs: byteOrder(REGION_SOURCES), c: byteOrder(CERTAINTIES) });
    const types = async (sql: string) => (await s.all<{ column_name: string; column_type: string }>(`SELECT column_name, column_type FROM (DESCRIBE ${sql})`))
      .map((c) => `${c.column_name} ${c.column_type}`);
    // (in the order the table had before it was narrowed: the SQL gives state and reason last)
    expect((await types('SELECT * FROM mart_ratios')).sort()).toEqual((await types(FROM_SOURCES)).sort());
  });

  it('says it is behind when the last write did not finish', async () => {
    t = await tempStore();
    await insertStats(t.store, [{ mid: 'm', network: 'mastercard', month: '2026-01', cb: 20, tx: 10_000 }, { mid: 'm', network: 'mastercard', month: '2026-04', cb: 20, tx: 10_000 }]);
    await evaluateAlerts(t.store, { asOf: '2026-04-20T06:00:00Z', rules: loadRules(), now: new Date('2026-04-20T06:00:00Z') });
    await t.store.run('UPDATE ratio_mart_state SET complete = FALSE');
    expect((await martFreshness(t.store)).behind).toBe('the last write of the ratio table did not finish: run `cbp alerts evaluate`');
    // The next evaluation judges from the month before its own, and writes every month again (one was cut short).
    await t.store.run("DELETE FROM ratio_mart WHERE month = '2026-01'");
    const r = await evaluateAlerts(t.store, { asOf: '2026-04-20T06:00:00Z', rules: loadRules(), now: new Date('2026-04-20T06:00:00Z') });
    expect(r.fromMonth).toBe('2026-03');
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
    expect(v.missing_sources).toContain('chargeback report not loaded for 2026-04-30: cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30');
    expect(String(v.reason)).toMatch(/^chargeback report not loaded for 2026-04-30/);
    expect(String(v.reason)).toContain('disputes counted from the MID report');
    // cbp status and the nightly's summary name it with what to load.
    const missing = ['TC40 reports not captured before the first event: they arrive as prevention events only (cbp run subscriptions, then cbp run ingest)',
      'chargeback report not loaded for 2026-04-30: cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30'];
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
    expect(efm.missing_sources).toBe('chargeback report not loaded for 2026-04-30 (loaded to 2026-04-15): cbp run backfill --kinds chargebacks --from 2026-04-01 --to 2026-04-30');
    // ECP reads the MID report's own count: nothing missing.
    expect(await row(s, 'm', 'ecp', '2026-04')).toMatchObject({ state: 'clear', missing_sources: null });
    // The rest of the month loaded: known again, after the next evaluation.
    await coverChargebacks(s, '2026-04-16', '2026-04-30');
    expect((await martFreshness(s)).changedMonths).toEqual(['2026-04']);
    await evaluate(s);
    expect(await row(s, 'm', 'efm', '2026-04')).toMatchObject({ state: 'clear', missing_sources: null });
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
});
