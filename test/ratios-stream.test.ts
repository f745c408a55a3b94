// `cbp ratios --json` streamed from the kept ratio table (store/ratios-stream.ts): the same rows, fields and order as
// ratiosView gives (the stored explanations for the latest months and one month; every month judged in JS for --all),
// and the CLI takes that path when the table is current under the rules configured now.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { limitView, ratiosView, renderRatios, type RatioOutRow, type RatiosQuery } from '../cli/commands/ratios.ts';
import { sameVersionReopen, shownRatios, streamRatiosJson, type StreamQuery } from '../store/ratios-stream.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { cbp } from './activities-fixtures.ts';
import { openReadingSession } from '../store/analyst.ts';
import { cleanup, tempStore } from './ratios-fixtures.ts';

let t: { store: Store; dir: string; dbPath: string };
const rules = loadRules();

beforeAll(async () => {
  t = await tempStore();
  await generateRatioData(t.store, { mids: 40, months: 14 });
  // The last month to date: 2025-02 up to its 12th.
  await t.store.run("UPDATE mid_stats SET window_end = DATE '2025-02-12' WHERE window_start = DATE '2025-02-01'");
  await t.store.run("UPDATE chargebacks SET currency = CASE WHEN mid < 'mid000020' THEN 'USD' ELSE 'EUR' END WHERE mid <> 'mid000005'");
  await evaluateAlerts(t.store, { asOf: '2025-02-13T06:00:00Z', rules, now: new Date('2025-02-13T06:00:00Z') });
}, 120_000);
afterAll(() => cleanup(t?.store, t?.dir));

async function streamed(q: StreamQuery, sliceRows?: number): Promise<unknown[]> {
  let text = '';
  const n = await streamRatiosJson(t.store, q, (s) => { text += s; }, { sliceRows });
  const rows = JSON.parse(text) as unknown[];
  expect(rows).toHaveLength(n);
  return rows;
}

const viewed = async (q: RatiosQuery) => JSON.parse(JSON.stringify((await ratiosView(t.store, rules, q)).rows)) as unknown[];

describe('cbp ratios --json from the kept table', () => {
  it.each<[string, RatiosQuery, StreamQuery]>([
    ['no flags: the latest complete month and the month to date', {}, { scope: 'latest' }],
    ['one month', { month: '2024-11' }, { scope: 'month', month: '2024-11' }],
    ['every month', { all: true }, { scope: 'all' }],
    ['one MID, no projections', { mid: 'mid000003', projection: false }, { scope: 'latest', mid: 'mid000003', projection: false }],
    ['one network', { network: 'visa', all: true }, { scope: 'all', network: 'visa' }],
  ])('%s: the rows ratiosView gives, in its order', async (_, q, s) => {
    const want = await viewed(q);
    expect(want.length).toBeGreaterThan(0);
    expect(await streamed(s)).toEqual(want);
    // In slices of 30 rows (8 a month), a month's series of one closeness (up to about 40) split between slices, the same.
    expect(await streamed(s, 30)).toEqual(want);
  }, 60_000);

  it.each<[string, RatiosQuery, StreamQuery]>([
    ['no flags', {}, { scope: 'latest' }],
    ['one month', { month: '2024-11' }, { scope: 'month', month: '2024-11' }],
    ['one network, no projections', { network: 'mastercard', projection: false }, { scope: 'latest', network: 'mastercard', projection: false }],
  ])('the table of %s: each month\'s rows most at risk and its counts, from SQL as from every row judged in JS', async (_, q, s) => {
    const full = await ratiosView(t.store, rules, q);
    const cut = limitView(full, 7);
    const shown = await shownRatios(t.store, s, 7);
    expect(JSON.parse(JSON.stringify(shown.rows))).toEqual(JSON.parse(JSON.stringify(cut.rows)));
    expect(shown.months.map((m) => [m.month, m.kind, m.days_covered, m.rows, m.levels, m.watch])).toEqual(
      full.months.map((m) => {
        const rows = full.rows.filter((r) => r.month === m.month);
        const observed = rows.filter((r) => !r.is_projection);
        return [m.month, m.kind, m.days_covered, rows.length, observed.filter((r) => r.state === 'level').length, observed.filter((r) => r.state === 'watch').length];
      }),
    );
    // The printed table says how many rows are left out, and the title counts them all.
    const text = renderRatios({ ...cut, rows: shown.rows as RatioOutRow[], months: cut.months });
    expect(text).toContain(`… ${full.rows.filter((r) => r.month === full.months[0].month).length - 7} more rows of ${full.months[0].month}`);
    expect(text).toContain(`${full.months[0].month}, `);
    expect(limitView(full, 0)).toBe(full);
  }, 60_000);

  it('is what the CLI prints when the table is current, and says nothing on stderr', async () => {
    // The CLI opens the store read-only: this process lets go of it meanwhile.
    t.store.close();
    const env = { CBP_DB_PATH: t.dbPath, CBP_SNAPSHOT_PATH: path.join(t.dir, 'none.duckdb'), CBP_LOG_LEVEL: 'silent' };
    const r = await cbp(['ratios', '--all', '--json'], env);
    t.store = await openTestStore({ dbPath: t.dbPath });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    // One row a line inside one array.
    expect(r.stdout.split('\n')[1]).toMatch(/^\{"mid":/);
    expect(JSON.parse(r.stdout)).toEqual(await viewed({ all: true }));
  }, 60_000);

  it("gives back DuckDB's cache after each month in a session of cbp's own statements, opened again for each month (reopenRows 1); an analyst's session stays locked", async () => {
    const want = await viewed({ all: true });
    t.store.close();
    try {
      const paths = { snapshotPath: path.join(t.dir, 'none.duckdb'), dbPath: t.dbPath };
      let released = 0;
      let opened = 0;
      const open = async () => {
        const s = await openReadingSession({ ...paths, ownStatementsOnly: true });
        opened++;
        const release = s.releaseMemory.bind(s);
        s.releaseMemory = async (what) => ((await release(what)) ? (released++, true) : false);
        return s;
      };
      const held = { store: await open() };
      let text = '';
      try {
        await streamRatiosJson(held.store, { scope: 'all' }, (s) => { text += s; }, { ownSession: true, reopen: await sameVersionReopen(held, open), reopenRows: 1 });
      } finally {
        held.store.close();
      }
      const rows = JSON.parse(text) as Array<{ month: string }>;
      expect(rows).toEqual(want);
      const months = new Set(rows.map((r) => r.month)).size;
      expect(months).toBeGreaterThan(6);
      // One release as each session starts, one after each month's slice.
      expect(opened).toBe(months);
      expect(released).toBe(months + opened);
      const locked = await openReadingSession(paths);
      try {
        expect(await locked.releaseMemory()).toBe(false);
        await expect(locked.run("SET memory_limit = '1GB'")).rejects.toThrow(/lock/i);
      } finally {
        locked.close();
      }
    } finally {
      t.store = await openTestStore({ dbPath: t.dbPath });
    }
  }, 60_000);
  it('refuses to go on when the store changed between two of its sessions: the rows before were read from the other version', async () => {
    t.store.close();
    try {
      const paths = { snapshotPath: path.join(t.dir, 'none.duckdb'), dbPath: t.dbPath, ownStatementsOnly: true };
      const held = { store: await openReadingSession(paths) };
      let text = '';
      try {
        // A write comes in while the reading session is closed (the generation rises), then the next session opens.
        const open = async () => {
          const w = await openTestStore({ dbPath: t.dbPath });
          await w.transaction((s) => s.run("UPDATE mids SET alias = alias WHERE mid = 'mid000001'"));
          w.close();
          return openReadingSession(paths);
        };
        await expect(streamRatiosJson(held.store, { scope: 'all' }, (s) => { text += s; }, { ownSession: true, reopen: await sameVersionReopen(held, open), reopenRows: 1 }))
          .rejects.toThrow(/The store changed while `cbp ratios --json` was writing its rows.*Run the command again/);
      } finally {
        held.store.close();
      }
      // The first months were written, the array never closed: no reader takes it as whole.
      expect(text.startsWith('[\n{"mid":')).toBe(true);
      expect(() => JSON.parse(text)).toThrow();
    } finally {
      t.store = await openTestStore({ dbPath: t.dbPath });
    }
  }, 60_000);
});
