// The ratio inputs kept per month that the SQL judge reads (store/ratio-inputs.ts): after any change to the sources they
// must be exactly what the SQL computes from the sources, computing again only the months a change touched (and the
// month after each), everything when the SQL itself changed, and nothing when a refresh fails half way.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Store } from '../store/db.ts';
import { refreshRatioInputs } from '../store/ratio-inputs.ts';
import { sourceMarksOf, type SourceMark } from '../store/source-marks.ts';
import { cleanup, insertChargebacks, insertEvents, insertStats, tc40, tempStore, type StatFixture } from './ratios-fixtures.ts';

let t: { store: Store; dir: string };
beforeEach(async () => { t = await tempStore(); });
afterEach(() => cleanup(t?.store, t?.dir));

const EVERY = "DATE '0001-01-01', DATE '9999-12-01'";

/** Rows of the kept inputs the sources do not give, and rows the sources give the kept inputs lack (both must be 0). */
async function drift(s: Store): Promise<{ kept: number; missing: number; rows: number }> {
  const n = async (sql: string) => Number((await s.all<{ n: string }>(sql))[0].n);
  const kept = await n(`SELECT count(*) AS n FROM (SELECT * FROM ratio_month_inputs EXCEPT ALL SELECT * FROM ratio_month_inputs_between(${EVERY}))`);
  const missing = await n(`SELECT count(*) AS n FROM (SELECT * FROM ratio_month_inputs_between(${EVERY}) EXCEPT ALL SELECT * FROM ratio_month_inputs)`);
  // And the ratio rows the judge reads from them: the same as those computed from the sources.
  const rows = await n(`SELECT count(*) AS n FROM (
    (SELECT * FROM ratio_rows_covered_between(${EVERY}, cached := TRUE) EXCEPT ALL SELECT * FROM ratio_rows_covered_between(${EVERY}))
    UNION ALL
    (SELECT * FROM ratio_rows_covered_between(${EVERY}) EXCEPT ALL SELECT * FROM ratio_rows_covered_between(${EVERY}, cached := TRUE)))`);
  return { kept, missing, rows };
}

const stats = (month: string, o: Partial<StatFixture> = {}): StatFixture[] => [
  { mid: 'm1', network: 'mastercard', month, cb: 150, tx: 10_000, ...o },
  { mid: 'd1', network: 'discover', month, cb: 40, tx: 4_000, ...o },
  { mid: 'v1', network: 'visa', month, cb: 3, tx: 20_000, ...o },
];

describe('refreshRatioInputs', () => {
  it('computes every month the first time, then only the months a change touched and the month after each', async () => {
    const s = t.store;
    for (const m of ['2025-01', '2025-02', '2025-03', '2025-04']) await insertStats(s, stats(m));
    await insertChargebacks(s, [{ mid: 'v1', network: 'visa', received: '2025-02-10', n: 5, arnPrefix: 'arn-v1-' }]);
    const first = await refreshRatioInputs(s);
    expect(first).toMatchObject({ full: true, months: ['2025-01', '2025-02', '2025-03', '2025-04'] });
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    expect(Number((await s.all<{ n: string }>('SELECT count(*) AS n FROM ratio_month_inputs'))[0].n)).toBe(12);

    // Nothing changed: nothing computed.
    expect(await refreshRatioInputs(s)).toMatchObject({ full: false, months: [] });

    // A re-fetch revises February: February, and March (whose denominator is February's transactions).
    await s.run("UPDATE mid_stats SET transaction_count = 5000 WHERE mid = 'm1' AND window_start = DATE '2025-02-01'");
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-02', '2025-03']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });

    // May to date (a partial window), then the closed month.
    await insertStats(s, stats('2025-05', { endDay: 12 }));
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-05', '2025-06']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    await insertStats(s, stats('2025-05'));
    await refreshRatioInputs(s);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });

    // RDR resolves February's Visa disputes (an event, not a report row): February's VAMP numerator drops.
    await insertEvents(s, 'rdr.new', [0, 1, 2].map((i) => ({ arn: `arn-v1-${i}`, rdr_resolution: 'Accepted', mid: 'v1' })));
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-02', '2025-03']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    expect((await s.all<{ n: string }>("SELECT vamp_dispute_count::VARCHAR AS n FROM ratio_month_inputs WHERE mid = 'v1' AND month = '2025-02'"))[0].n).toBe('2');

    // A TC40 in April, and its .match dated in March: the report moves to March (the earlier timestamp).
    await insertEvents(s, 'prevention.new', [tc40('v1', 'pre_1', '2025-04-03T10:00:00Z')]);
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-04', '2025-05']);
    await insertEvents(s, 'prevention.match', [tc40('v1', 'pre_1', '2025-03-30T10:00:00Z')]);
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-03', '2025-04', '2025-05']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });

    // A month withdrawn: its rows go, and the month after no longer has a previous month.
    await s.run("DELETE FROM mid_stats WHERE window_start = DATE '2025-03-01'");
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-03', '2025-04']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    expect((await s.all("SELECT * FROM ratio_month_inputs WHERE month = '2025-03'"))).toEqual([]);

    // The check itself sees a kept row that is wrong.
    await s.run("UPDATE ratio_month_inputs SET fraud_count = fraud_count + 1 WHERE mid = 'm1' AND month = '2025-01'");
    expect(await drift(s)).toMatchObject({ kept: 1, missing: 1 });
    expect((await drift(s)).rows).toBeGreaterThan(0);
  });

  it('keeps the TC40 fingerprints while their events are the same, and sees any of them added, changed or removed', async () => {
    const s = t.store;
    for (const m of ['2025-01', '2025-02', '2025-03']) await insertStats(s, stats(m));
    await insertEvents(s, 'prevention.new', [tc40('v1', 'pre_1', '2025-01-05T10:00:00Z'), tc40('v1', 'pre_2', '2025-02-05T10:00:00Z')]);
    await insertEvents(s, 'chargeback.new', [{ mid: 'v1', case_number: 'c1' }]);
    await refreshRatioInputs(s);
    // The marks read while the events' digest is the one kept are those the events give.
    const computed = async () => {
      await s.run('UPDATE ratio_input_logic SET tc40_events = NULL');
      const r = await sourceMarksOf(s);
      await s.run('UPDATE ratio_input_logic SET tc40_events = $d', { d: r.tc40Events });
      return r.marks;
    };
    const byKey = (ms: SourceMark[]) => [...ms].sort((a, b) => `${a.source}${a.month}`.localeCompare(`${b.source}${b.month}`));
    const read = vi.spyOn(s, 'all');
    const kept = await sourceMarksOf(s);
    expect(read.mock.calls.some(([sql]) => sql.includes('int_tc40__reports'))).toBe(false);
    read.mockRestore();
    expect(byKey(kept.marks)).toEqual(byKey(await computed()));
    // (Marks come in no particular order: DuckDB keeps no insertion order in this store.)
    expect(kept.marks.filter((m) => m.source === 'tc40').map((m) => m.month).sort()).toEqual(['2025-01', '2025-02']);
    // Another kind of event leaves them be; a TC40's amount revised, a report added or removed is seen.
    await insertEvents(s, 'chargeback.new', [{ mid: 'v1', case_number: 'c2' }]);
    expect(await refreshRatioInputs(s)).toMatchObject({ months: [] });
    await s.run(`UPDATE events_raw SET payload = json_object('prevention_guid', 'pre_2', 'prevention_type', 'tc40', 'mid', 'v1',
                   'prevention_timestamp', '2025-02-05T10:00:00Z', 'amount', 250) WHERE payload->>'prevention_guid' = 'pre_2'`);
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-02', '2025-03']);
    await insertEvents(s, 'prevention.match', [tc40('v1', 'pre_3', '2025-03-09T10:00:00Z')]);
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-03', '2025-04']);
    await s.run("DELETE FROM events_raw WHERE payload->>'prevention_guid' = 'pre_1'");
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-01', '2025-02']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    expect(byKey((await sourceMarksOf(s)).marks)).toEqual(byKey(await computed()));
    // A store whose digest was never kept (refreshed by an older cbp) records it on the next refresh that touches nothing.
    await s.run('UPDATE ratio_input_logic SET tc40_events = NULL');
    expect(await refreshRatioInputs(s)).toMatchObject({ months: [] });
    expect((await s.all<{ d: string | null }>('SELECT tc40_events AS d FROM ratio_input_logic'))[0].d).toBe((await sourceMarksOf(s)).tc40Events);
  });

  it('computes again a month whose kept rows are gone, and every month when asked (cbp alerts evaluate --full)', async () => {
    const s = t.store;
    for (const m of ['2025-01', '2025-02', '2025-03']) await insertStats(s, stats(m));
    await refreshRatioInputs(s);
    await s.run("DELETE FROM ratio_month_inputs WHERE month = '2025-02'");
    expect(await refreshRatioInputs(s)).toMatchObject({ full: false, months: ['2025-02'] });
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    await s.run('DELETE FROM ratio_month_inputs');
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-01', '2025-02', '2025-03']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    expect(await refreshRatioInputs(s, { all: true })).toMatchObject({ full: true, months: ['2025-01', '2025-02', '2025-03'] });
  });

  it('computes every month again when the SQL that computes them changed (another cbp)', async () => {
    const s = t.store;
    for (const m of ['2025-01', '2025-02']) await insertStats(s, stats(m));
    await refreshRatioInputs(s);
    expect(await refreshRatioInputs(s)).toMatchObject({ full: false, months: [] });
    // A cbp whose chargeback numerators are computed otherwise (here: every chargeback counts as fraud).
    await insertChargebacks(s, [{ mid: 'm1', network: 'mastercard', received: '2025-02-03', n: 4 }]);
    await refreshRatioInputs(s);
    const macro = (await s.all<{ d: string }>("SELECT macro_definition AS d FROM duckdb_functions() WHERE function_name = 'ratio_chargebacks_between'"))[0].d;
    expect(macro).toContain('is_fraud');
    await s.run(`CREATE OR REPLACE MACRO ratio_chargebacks_between(first_day, last_day) AS TABLE
      SELECT c.mid, c.card_type AS network, strftime(c.date_received, '%Y-%m') AS month, count(*) AS chargeback_count, sum(c.amount) AS chargeback_amount,
             count(*) AS fraud_count, sum(c.amount) AS fraud_amount, count(*) AS vamp_dispute_count, sum(c.amount) AS vamp_dispute_amount, 0 AS rdr_resolved_count
        FROM chargebacks c WHERE c.date_received >= first_day::TIMESTAMP AND c.date_received < (last_day + INTERVAL 1 MONTH)::TIMESTAMP GROUP BY ALL`);
    expect(await refreshRatioInputs(s)).toMatchObject({ full: true, months: ['2025-01', '2025-02'] });
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
    expect((await s.all<{ n: string }>("SELECT fraud_count::VARCHAR AS n FROM ratio_month_inputs WHERE mid = 'm1' AND month = '2025-02'"))[0].n).toBe('4');
  });

  it('keeps the last refresh whole when one fails half way, and the next one catches up', async () => {
    const s = t.store;
    for (const m of ['2025-01', '2025-02']) await insertStats(s, stats(m));
    await refreshRatioInputs(s);
    const before = await s.all('SELECT * FROM ratio_month_inputs ORDER BY ALL');
    const marks = await s.all('SELECT * FROM ratio_input_marks ORDER BY ALL');
    await insertStats(s, stats('2025-03'));
    await s.run("UPDATE mid_stats SET chargeback_count = 999 WHERE window_start = DATE '2025-01-01'");
    // The statement computing the months fails (a full disk, a bug) after the touched months were deleted: nothing
    // of this refresh is kept.
    const run = s.run.bind(s);
    const spy = vi.spyOn(s, 'run').mockImplementation(async (sql, params) => {
      if (sql.includes('INSERT INTO ratio_month_inputs')) throw new Error('disk full');
      return run(sql, params);
    });
    await expect(refreshRatioInputs(s)).rejects.toThrow('disk full');
    spy.mockRestore();
    expect(await s.all('SELECT * FROM ratio_month_inputs ORDER BY ALL')).toEqual(before);
    expect(await s.all('SELECT * FROM ratio_input_marks ORDER BY ALL')).toEqual(marks);
    expect((await refreshRatioInputs(s)).months).toEqual(['2025-01', '2025-02', '2025-03', '2025-04']);
    expect(await drift(s)).toEqual({ kept: 0, missing: 0, rows: 0 });
  });
});
