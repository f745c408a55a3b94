// cbp report from the kept ratio table (cli/report-source.ts): after an evaluation, the section read from mart_ratios
// (counted and picked in SQL, only the rows shown read) equals the one report/model.ts builds from the oracle's
// explanation of every row (test/oracle/explain.ts), at the default caps and at small ones (ties, the cap's edge), for
// --month and --mid, with a MID of its own rules and a group, and with a month to date; data changed since, or other
// rules, make the read say the table is behind and why, until the table is refreshed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { entryThresholds, keptSection, readRatioSection, type SectionQuery } from '../cli/report-source.ts';
import { ruleTables } from '../rules/rule-table.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { computeRatios } from '../store/ratios.ts';
import { keptHeat } from '../store/report-ratios.ts';
import { watchOf } from '../rules/thresholds.ts';
import { RatioSectionBuilder, type RatioSection } from '../report/model.ts';
import type { ExplainedRatioRow } from '../contract/ratios.ts';
import { explainRows } from './oracle/explain.ts';
import { loadRules, parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore, type StatFixture } from './ratios-fixtures.ts';

let store: Store;
let dir: string;
const MIDS = 300;
const LATEST = '2025-02'; // 14 months from 2024-01
const rules: RuleSet = parseThresholds(JSON.stringify({
  mids: {
    // A tighter line of its own (another rules class, region EU): hot where the common rules are not.
    mid000007: { region: 'EU', rules: [{ id: 'tight.ecp', network: 'mastercard', program: 'ecp', level: 'internal', rank: 0, comparison: '>=', ratio_threshold: 0.004 }] },
  },
  // A hot MID (every 50th runs hot) and a calm one judged on their sums.
  groups: { acme: { mids: ['mid000050', 'mid000051'], programs: ['vamp'] } },
}), 't.json');

/** Every rule-read row (what the kept section reads) as the oracle explains it, judged on every row of the store's data. */
let explained: ExplainedRatioRow[] = [];

async function oracleRows(): Promise<void> {
  const targets = new Set(ruleTables(rules).rules.map((r) => `${r.network}|${r.program}|${r.metric}`));
  explained = explainRows(await computeRatios(store), rules).filter((r) => targets.has(`${r.network}|${r.program}|${r.metric}`));
  // The oracle judges levels; an open month's chance is the store's own (test/forecast-store.test.ts checks it).
  const k = (r: { mid: string; network: string; program: string; metric: string; month: string }) => [r.mid, r.network, r.program, r.metric, r.month].join('|');
  const chances = new Map((await store.all<ExplainedRatioRow>(`SELECT mid, network, program, metric, month, chance, chance_level, expected_count,
    expected_low80, expected_high80, pace_day FROM mart_ratios WHERE chance IS NOT NULL AND NOT is_projection`)).map((c) => [k(c), c]));
  for (const r of explained) {
    const c = chances.get(k(r));
    if (c && !r.is_projection) Object.assign(r, { chance: c.chance, chance_level: c.chance_level, expected_count: c.expected_count, expected_low80: c.expected_low80, expected_high80: c.expected_high80, pace_day: c.pace_day });
  }
}

async function evaluate(): Promise<void> {
  const asOf = `${LATEST}-20T06:00:00Z`;
  await evaluateAlerts(store, { asOf, rules, now: new Date(asOf) });
  await oracleRows();
}

/** The section report/model.ts builds from the oracle's rows: up to q.month, of the MIDs picked when some are. */
function oracleSection(q: SectionQuery): RatioSection {
  const builder = new RatioSectionBuilder(q);
  const picked = new Set(q.picked ?? []);
  builder.add(explained.filter((r) => r.month <= q.month && (picked.size === 0 || picked.has(r.mid))));
  return builder.finish();
}

/** Both ways, compared part by part (a failure names the part), then whole. */
async function same(q: Omit<SectionQuery, 'rules'>): Promise<RatioSection> {
  const query: SectionQuery = { rules, batchRows: 60, ...q };
  const judged = oracleSection(query);
  const kept = await keptSection(store, query);
  expect(kept.shown).toEqual(judged.shown);
  expect({ mids: kept.mids, total: kept.atRiskTotal, left: kept.atRiskLeftOut }).toEqual({ mids: judged.mids, total: judged.atRiskTotal, left: judged.atRiskLeftOut });
  expect(kept.atRisk).toEqual(judged.atRisk);
  expect(kept.trends).toEqual(judged.trends);
  expect(kept.trendsLeftOut).toBe(judged.trendsLeftOut);
  expect(kept.heat).toEqual(judged.heat);
  expect(kept.heatLeftOut).toBe(judged.heatLeftOut);
  expect(kept).toEqual(judged);
  return kept;
}

beforeAll(async () => {
  ({ store, dir } = await tempStore());
  await generateRatioData(store, { mids: MIDS, months: 14 });
  // zz1: Mastercard ECP over ECM (2 %, 200: v 1.33) beside a Visa VDMP ratio far over with too few disputes (5 %, 50):
  // its heat cell is the level met, not the higher ratio.
  const zz: StatFixture[] = [];
  for (let k = 0; k < 14; k++) {
    const month = `${2024 + Math.floor(k / 12)}-${String((k % 12) + 1).padStart(2, '0')}`;
    zz.push({ mid: 'zz1', month, network: 'visa', cb: 50, tx: 1_000 }, { mid: 'zz1', month, network: 'mastercard', cb: 200, tx: 10_000, prevTx: 10_000 });
  }
  await insertStats(store, zz);
  await evaluate();
}, 120_000);
afterAll(() => cleanup(store, dir));

describe('cbp report from the kept ratio table', () => {
  it('reads the kept table, which holds, and gives the section the oracle\'s explanation of every row gives', async () => {
    const read = await readRatioSection(store, { month: LATEST, scope: 'latest', rules });
    expect(read.check).toEqual({ holds: true, behind: null });
    const s = await same({ month: LATEST, scope: 'latest' });
    expect(read.section).toEqual(s);
    // Something to compare: levels, unknown rows, clear ones left out, trends and heat rows past their caps.
    expect(s.atRisk.some((r) => r.state === 'level')).toBe(true);
    expect(s.atRisk.some((r) => r.state === 'unknown')).toBe(true);
    expect(s.atRiskLeftOut).toBeGreaterThan(0);
    expect(s.trendsLeftOut).toBeGreaterThan(0);
    expect(s.heatLeftOut).toBeGreaterThan(0);
    expect(s.mids).toBe(MIDS + 1);
    const zz1 = s.heat.find((h) => h.mid === 'zz1')!;
    expect(zz1.kinds.at(-1)).toBe('over');
  }, 60_000);

  it('the same at small caps (the edge of each cap, ties included), for an earlier --month, and for --mid', async () => {
    await same({ month: LATEST, scope: 'latest', clearCap: 3, trendCap: 2, heatCap: 4 });
    await same({ month: LATEST, scope: 'latest', clearCap: 0, trendCap: 0, heatCap: 0 });
    await same({ month: LATEST, scope: 'latest', clearCap: 2, trendCap: 6, heatCap: 0 });
    await same({ month: LATEST, scope: 'latest', clearCap: 1, trendCap: 3, heatCap: 1 });
    await same({ month: '2024-09', scope: 'month', clearCap: 7, trendCap: 5, heatCap: 9 });
    const picked = await same({ month: LATEST, scope: 'latest', picked: ['mid000007', 'mid000050', 'mid000123'] });
    expect(new Set(picked.atRisk.map((r) => r.mid))).toEqual(new Set(['mid000007', 'mid000050', 'mid000123']));
  }, 60_000);

  it("orders every MID's heat-map row in SQL as report/model.ts does (each cell's kind and value)", async () => {
    const judged = oracleSection({ month: LATEST, scope: 'latest', rules, heatCap: 10_000 });
    const sql = await keptHeat(store, { first: judged.months[0], month: LATEST, watchFraction: watchOf(rules).fraction, cap: 10_000, entries: entryThresholds(rules, judged.months) });
    expect(sql.total).toBe(judged.heat.length);
    const js = judged.heat.map((h) => ({ mid: h.mid, last: h.cells.at(-1) ?? -1, peak: Math.max(-1, ...h.cells.map((c) => c ?? -1)) }));
    expect([...sql.top].sort((a, b) => a.mid.localeCompare(b.mid))).toEqual(js.sort((a, b) => a.mid.localeCompare(b.mid)));
  }, 60_000);

  it('the same with a month to date (the month before it shown too, its projections)', async () => {
    await store.run(`UPDATE mid_stats SET window_end = window_start + INTERVAL 9 DAY WHERE window_start = DATE '${LATEST}-01'`);
    await evaluate();
    const read = await readRatioSection(store, { month: LATEST, scope: 'latest', rules });
    expect(read.check.holds).toBe(true);
    const s = await same({ month: LATEST, scope: 'latest' });
    expect(read.section).toEqual(s);
    expect(s.shown.map((m) => `${m.month} ${m.kind}`)).toEqual(['2025-01 complete', `${LATEST} month_to_date`]);
    expect(s.atRisk.some((r) => r.projected_ratio !== null)).toBe(true);
    await same({ month: LATEST, scope: 'latest', clearCap: 4, trendCap: 3, heatCap: 5 });
  }, 60_000);

  it('says the table is behind, and why, when data changed since it was judged or the rules are others, until it is refreshed', async () => {
    const other = await readRatioSection(store, { month: LATEST, scope: 'latest', rules: loadRules() });
    expect(other.check.holds).toBe(false);
    expect(other.check.behind).toMatch(/other rules.*cbp alerts evaluate/);
    await store.run(`UPDATE mid_stats SET chargeback_count = chargeback_count + 1 WHERE mid = 'mid000001' AND window_start = DATE '2024-11-01'`);
    const changed = await readRatioSection(store, { month: LATEST, scope: 'latest', rules });
    expect(changed.check.holds).toBe(false);
    expect(changed.check.behind).toMatch(/data of 2024-11 changed since the ratios were judged: run `cbp alerts evaluate`/);
    // Refreshed (what cbp report does first when it can open the store), the section is the one the data gives now.
    expect((await refreshRatios(store, rules)).fromMonth).toBe('2024-11');
    await oracleRows();
    const now = await readRatioSection(store, { month: LATEST, scope: 'latest', rules });
    expect(now.check).toEqual({ holds: true, behind: null });
    expect(now.section).toEqual(oracleSection({ month: LATEST, scope: 'latest', rules }));
  }, 60_000);
});
