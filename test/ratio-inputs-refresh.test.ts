// The ratio inputs refresh (store/ratio-inputs.ts): statements sized to the store's memory limit, sizes read as DuckDB
// writes them (lib/size.ts), the least limit, and a refresh cut short between its transactions.
import { describe, expect, it } from 'vitest';
import path from 'node:path';
import { openStore, type Store } from '../store/db.ts';
import { tempDir } from './helpers/tmp.ts';
import { monthRuns, refreshRatioInputs, rowsPerStatement } from '../store/ratio-inputs.ts';
import { sizeBytes } from '../lib/size.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { cleanup, insertEvents, keptInputsDrift, tc40, tempStore } from './ratios-fixtures.ts';

/** fn on a new store of this memory limit in a temp folder, both gone after. */
async function withStore(memoryLimit: string | undefined, fn: (store: Store) => Promise<void>): Promise<void> {
  const t = await tempStore({ memoryLimit });
  try {
    await fn(t.store);
  } finally {
    cleanup(t.store, t.dir);
  }
}

describe('sizes and the refresh statements', () => {
  it('reads sizes as DuckDB writes them', () => {
    expect(sizeBytes('192MB')).toBe(192e6);
    expect(sizeBytes('183.1 MiB')).toBeCloseTo(183.1 * 2 ** 20);
    expect(sizeBytes('2gb')).toBe(2e9);
    expect(sizeBytes('1 KiB')).toBe(1024);
    expect(sizeBytes('lots')).toBeNaN();
    expect(sizeBytes('12')).toBeNaN();
  });

  it('computes fewer rows a statement the less memory the store has, within bounds', () => {
    const sizes = ['32MB', '64MB', '128MB', '160MB', '192MB', '256MB', '1GB', '8GB'].map(rowsPerStatement);
    // Never more rows for less memory, and some fewer.
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]!).toBeGreaterThanOrEqual(sizes[i - 1]!);
    expect(sizes[0]!).toBeLessThan(sizes.at(-1)!);
    // A floor that still makes progress, and a ceiling that a size DuckDB cannot read (no limit given) takes too.
    expect(Math.min(...sizes)).toBeGreaterThan(0);
    expect(rowsPerStatement('a lot')).toBe(Math.max(...sizes));
  });

  it('cuts the months into runs of consecutive months within that many rows', () => {
    const rows = new Map([['2024-01', 40], ['2024-02', 40], ['2024-03', 40], ['2024-05', 40], ['2024-06', 200]]);
    expect(monthRuns([...rows.keys()], rows, 100)).toEqual([['2024-01', '2024-02'], ['2024-03', '2024-03'], ['2024-05', '2024-05'], ['2024-06', '2024-06']]);
    expect(monthRuns([...rows.keys()], rows, 1000)).toEqual([['2024-01', '2024-03'], ['2024-05', '2024-06']]);
  });
});

describe('the refresh at the least memory limit', () => {
  it('computes every month of 4,000 MIDs × 24 months in a store of 128MB, as the sources give them', async () => {
    await withStore('128MB', async (store) => {
      await generateRatioData(store, { mids: 4_000, months: 24 });
      // 16,000 MID report rows a month: runs of 4 months (64,000 rows), six statements, each in its own transaction.
      const r = await refreshRatioInputs(store);
      expect(r.full).toBe(true);
      expect(r.months.length).toBe(24);
      // Month by month (every month at once would not fit 128MB: the comparison, not the refresh).
      for (const month of r.months) expect(await keptInputsDrift(store, month), month).toBe(0);
      expect(await store.all('SELECT count(*)::INTEGER AS n, sum(tc40_count)::INTEGER AS tc40 FROM ratio_month_inputs')).toEqual([{ n: 384_000, tc40: 9_600 }]);
    });
  }, 120_000);
});

describe('a store opened again', () => {
  it('computes nothing again: the SQL it was computed with reads the same from the file as where it was made', async () => {
    // Made from nothing in this process (not a template's copy): its definitions are the ones DuckDB has just made.
    const dir = tempDir();
    const t = { dir, dbPath: path.join(dir, 'cbp.duckdb') };
    let store = await openStore({ dbPath: t.dbPath });
    try {
      await generateRatioData(store, { mids: 50, months: 3 });
      expect((await refreshRatioInputs(store)).full).toBe(true);
      store.close();
      store = await openStore({ dbPath: t.dbPath });
      const again = await refreshRatioInputs(store);
      expect(again.full).toBe(false);
      expect(again.months).toEqual([]);
    } finally {
      cleanup(store, t.dir);
    }
  }, 60_000);
});

describe('a refresh cut short', () => {
  it('keeps the fingerprints it started from, so that the next refresh computes again what it left', async () => {
    await withStore(undefined, async (store) => {
      await generateRatioData(store, { mids: 2_500, months: 3 });
      await refreshRatioInputs(store);
      expect(await keptInputsDrift(store)).toBe(0);
      const marks = await store.all('SELECT * FROM ratio_input_marks ORDER BY ALL');
      // Every month's figures revised; the refresh then fails in its second run of months (a store whose limit makes
      // runs of two months of 10,000 rows: 25,000 rows a statement at most).
      await store.run('UPDATE mid_stats SET chargeback_count = chargeback_count + 1');
      let transactions = 0;
      const failing = new Proxy(store, {
        get(target, key, receiver) {
          if (key === 'memoryLimit') return '64MB';
          if (key === 'transaction') {
            return (fn: never, o: never) => (++transactions === 3 ? Promise.reject(new Error('killed')) : target.transaction(fn, o));
          }
          return Reflect.get(target, key, receiver);
        },
      });
      await expect(refreshRatioInputs(failing)).rejects.toThrow('killed');
      // The first run's months were replaced, the last month still holds what the old figures gave.
      expect(await keptInputsDrift(store)).toBeGreaterThan(0);
      expect(await store.all('SELECT * FROM ratio_input_marks ORDER BY ALL')).toEqual(marks);
      expect(await store.all("SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE table_name = '_cbp_tc40_monthly'")).toEqual([{ n: 0 }]);
      const again = await refreshRatioInputs(store);
      // (and the month after the last, whose denominator it is: no figures of its own, nothing to compute)
      expect(again.months).toEqual(['2024-01', '2024-02', '2024-03', '2024-04']);
      expect(await keptInputsDrift(store)).toBe(0);
    });
  }, 120_000);
});

describe('int_tc40__reports', () => {
  it('reads each field of the payload as ->> does, in one pass', async () => {
    await withStore(undefined, async (store) => {
      await insertEvents(store, 'prevention.new', [
        tc40('m1', 'p1', '2026-01-05T10:00:00Z', 12.5),
        { ...tc40('m1', 'p1', '2026-01-04T10:00:00Z'), amount: '40.25' },
        { ...tc40('m2', 'p2', '2026-02-01T00:30:00+02:00'), prevention_type: 'TC40', mid: 1234 },
        { ...tc40('', 'p3', '2026-02-02T00:00:00Z'), amount: 'n/a' },
        { ...tc40('m4', '', '2026-02-02T00:00:00Z') },
        { ...tc40('m5', 'p5', '2026-02-02T00:00:00Z'), prevention_type: 'ethoca' },
        { prevention_guid: 'p6', prevention_type: 'tc40', mid: 'm6' },
        { ...tc40('m7', 'p7', 'not a time'), nested: { mid: 'x' } },
      ]);
      await insertEvents(store, 'prevention.match', [tc40('m1', 'p1', '2026-01-05T10:00:00Z', 30)]);
      const old = await store.all(`WITH e AS (
          SELECT payload->>'prevention_guid' AS prevention_guid, nullif(payload->>'mid', '') AS mid,
                 stg_utc_timestamp(payload->>'prevention_timestamp') AS prevention_timestamp,
                 try_cast(payload->>'amount' AS DECIMAL(18, 4)) AS amount
            FROM events_raw
           WHERE event_type IN ('prevention.new', 'prevention.match')
             AND lower(coalesce(payload->>'prevention_type', '')) = 'tc40' AND coalesce(payload->>'prevention_guid', '') <> '')
        SELECT prevention_guid, max(mid) AS mid, min(prevention_timestamp) AS prevention_timestamp, max(amount) AS amount
          FROM e GROUP BY prevention_guid ORDER BY prevention_guid`);
      const now = await store.all('SELECT * FROM int_tc40__reports ORDER BY prevention_guid');
      expect(now).toEqual(old);
      expect(now.map((r) => r.prevention_guid)).toEqual(['p1', 'p2', 'p3', 'p6', 'p7']);
      expect(now[0]).toMatchObject({ mid: 'm1', prevention_timestamp: '2026-01-04 10:00:00', amount: '40.2500' });
      expect(now[1]).toMatchObject({ mid: '1234', prevention_timestamp: '2026-01-31 22:30:00' });
    });
  });
});
