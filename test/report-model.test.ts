// The report's choices of what to show, in process over a real store: at most 20 trends, the MIDs at a level
// first, and the page saying how many were left out; the heat map capped the same way; clear rows capped in
// the at-risk table; and --mid's MIDs charted whatever their state. The store's ratio rows are explained by the
// oracle (test/oracle/explain.ts); the section read from the kept table (cli/report-source.ts) must be the same.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { explainRows } from './oracle/explain.ts';
import { generateRatioData } from '../bench/ratios-data.ts';
import { keptSection } from '../cli/report-source.ts';
import { RatioSectionBuilder, type RatioSection } from '../report/model.ts';
import { renderReport } from '../report/html.ts';
import { loadRules, parseThresholds, type RuleSet } from '../rules/thresholds.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { computeRatios, forEachRatioBatch, type RatioQuery } from '../store/ratios.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import type { ExplainedRatioRow } from '../contract/ratios.ts';
import { REPORT_STATUSES } from '../store/report.ts';
import { tempDir } from './helpers/tmp.ts';
import { insertStats, type StatFixture } from './ratios-fixtures.ts';

let store: Store;
const rules = loadRules();

beforeAll(async () => {
  store = await openTestStore({ dbPath: path.join(tempDir(), 'cbp.duckdb') });
  const stats: StatFixture[] = [];
  for (const month of ['2026-01', '2026-02', '2026-03']) {
    // 25 Mastercard MIDs over ECM (2 % of M-1, 200 chargebacks), hot00 the hottest; 40 clear ones.
    for (let i = 0; i < 25; i++) stats.push({ mid: `hot${String(i).padStart(2, '0')}`, month, network: 'mastercard', cb: 200 + (24 - i), tx: 10_000 });
    for (let i = 0; i < 40; i++) stats.push({ mid: `calm${String(i).padStart(2, '0')}`, month, network: 'mastercard', cb: 10, tx: 10_000 });
  }
  await insertStats(store, stats);
});
afterAll(() => store?.close());

/** The store's ratio rows (q's MID, months up to q.asOf's) in batches of batchMids MIDs, each explained by the oracle. */
async function forEachExplainedBatch(s: Store, q: RatioQuery, set: RuleSet, fn: (rows: ExplainedRatioRow[]) => void, batchMids: number): Promise<void> {
  await forEachRatioBatch(s, q, (rows) => fn(explainRows(rows, set)), batchMids);
}

async function section(opts: { picked?: string[]; heatCap?: number } = {}): Promise<RatioSection> {
  const b = new RatioSectionBuilder({ month: '2026-03', rules, ...opts });
  for (const mid of opts.picked?.length ? opts.picked : [undefined]) {
    await forEachExplainedBatch(store, { mid, asOf: '2026-03-01T00:00:00Z' }, rules, (rows) => b.add(rows), 10);
  }
  return b.finish();
}

const empty = { reasonCodes: [], winRates: [], statuses: [], statusNames: REPORT_STATUSES, orderAge: [] };
const meta = (mids: string[] = []) => ({ generatedAt: '2026-03-20T00:00:00Z', snapshot: 's.duckdb', snapshotModifiedAt: null, mids, thresholds: 'defaults' });

describe('the report chooses what to show, and says what it left out', () => {
  it('charts the 20 closest MID x programs at a level, and the page says 5 more were left out', async () => {
    const s = await section({ heatCap: 30 });
    expect(s.mids).toBe(65);
    expect(s.trends).toHaveLength(20);
    expect(s.trendsLeftOut).toBe(5);
    expect(s.trends[0].mid).toBe('hot00');
    expect(s.trends.every((t) => t.mid.startsWith('hot') && t.program === 'ecp')).toBe(true);
    // Every level row shown, clear rows capped at 30 (ECP and EFM of each calm MID are clear).
    expect(s.atRisk.filter((r) => r.state === 'level')).toHaveLength(25);
    expect(s.atRisk.filter((r) => r.state === 'clear')).toHaveLength(30);
    expect(s.atRiskLeftOut).toBe(s.atRiskTotal - s.atRisk.length);
    expect(s.heat).toHaveLength(30);
    expect(s.heatLeftOut).toBe(35);
    expect(s.heat[0].mid).toBe('hot00');
    const html = renderReport({ meta: meta(), ratios: s, disputes: empty, quality: { matchRates: [], quarantine: [], freshness: [] } });
    expect(html).toContain('5 more MID × programs at a level or on watch left out (the first 20 shown)');
    expect(html).toContain('35 more MIDs left out');
    expect(html).toContain('No chargebacks were received in these months.');
    expect(html.match(/<figure class="chart" data-chart="trend"/g)).toHaveLength(20);
    // The table's closeness and the heat map's cells are of two thresholds: each named for its own.
    expect(html).toContain("<th>of next level's threshold</th>");
    expect(html).toContain('ratio ÷ entry threshold of the tightest program');
  });

  it('charts every program in force of the MIDs asked for, clear ones too', async () => {
    const s = await section({ picked: ['calm03', 'hot07'] });
    expect(s.trends.map((t) => `${t.mid} ${t.program}`).sort()).toEqual(['calm03 ecp', 'calm03 efm', 'hot07 ecp', 'hot07 efm']);
    expect(s.trendsLeftOut).toBe(0);
    expect(new Set(s.atRisk.map((r) => r.mid))).toEqual(new Set(['calm03', 'hot07']));
  });
});

describe('the report reads only what it shows', () => {
  it('builds the same section from the rows it reads (the kept table: counted and picked in SQL, rows some rule reads) as from every row', async () => {
    const t = await openTestStore({ dbPath: path.join(tempDir(), 'cbp.duckdb') });
    try {
      await generateRatioData(t, { mids: 150, months: 30 });
      const set = parseThresholds(JSON.stringify({ watch: { fraction: 0.75, notify: false }, groups: { acme: { mids: ['mid000004', 'mid000090'], programs: ['vamp'] } } }), 't.json');
      // Every row, explained by the oracle in one go (the group's members together).
      const b = new RatioSectionBuilder({ month: '2026-05', rules: set, picked: [] });
      b.add(explainRows(await computeRatios(t, { asOf: '2026-05-01T00:00:00Z' }), set));
      const every = b.finish();
      // The rows read: the kept table judged under the same rules, only what the section shows read from it.
      await refreshRatios(t, set);
      const read = await keptSection(t, { month: '2026-05', rules: set, picked: [] });
      expect(read).toEqual(every);
      expect(every.trends.length).toBeGreaterThan(0);
      expect(every.atRisk.some((r) => r.state === 'level')).toBe(true);
    } finally {
      t.close();
    }
  }, 60_000);
});

describe('the at-risk table\'s headroom and fee column', () => {
  it('says in words how many fewer events would have left the level, how many more reach the next, and the fee', async () => {
    const t = await openTestStore({ dbPath: path.join(tempDir(), 'cbp.duckdb') });
    try {
      await insertStats(t, [
        // m1: ECM in 2026-03, 224 chargebacks over 2026-02's 10,000 transactions (2.24 %).
        { mid: 'm1', month: '2026-02', network: 'mastercard', cb: 10, tx: 10_000 },
        { mid: 'm1', month: '2026-03', network: 'mastercard', cb: 224, tx: 10_000 },
        // d1: Discover Excessive in 2026-03, 130 chargebacks over 2026-02's 10,000 sales (1.3 % > 1 %).
        { mid: 'd1', month: '2026-02', network: 'discover', cb: 5, tx: 10_000 },
        { mid: 'd1', month: '2026-03', network: 'discover', cb: 130, tx: 9_000 },
      ]);
      const b = new RatioSectionBuilder({ month: '2026-03', rules, picked: [] });
      await forEachExplainedBatch(t, { asOf: '2026-04-01T00:00:00Z' }, rules, (rows) => b.add(rows), 10);
      const s = b.finish();
      const html = renderReport({ meta: meta(), ratios: s, disputes: empty, quality: { matchRates: [], quarantine: [], freshness: [] } });
      /** The headroom and fee cell (the one before last) of a MID's row in the at-risk table. */
      const cell = (mid: string, program: string) => {
        const tr = new RegExp(`<tr class="state-\\w+" data-mid="${mid}" data-program="${program}" data-month="2026-03">([\\s\\S]*?)</tr>`).exec(html)?.[1] ?? '';
        const tds = [...tr.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((m) => m[1]);
        return tds[tds.length - 2];
      };
      // ECM's 1.5 % is 150 and its minimum 100: over by ⌊224 − 150⌋ + 1 = 75 (the minimum: 125); HECM's 3 % and 300: 76 more.
      expect(cell('m1', 'ecp')).toBe('75 fewer Mastercard chargebacks in 2026-03 would have left ECM; 76 more Mastercard chargebacks in 2026-03 would have reached HECM');
      // Discover's > 1 % of 10,000: over by 130 − 100 = 30; fee USD 25 × (130 − 100) = 750.
      expect(cell('d1', 'discover_excessive')).toBe('30 fewer Discover chargebacks in 2026-03 would have left Discover Excessive; estimated fee USD 750 (events above the threshold; an estimate, not an invoice)');
    } finally {
      t.close();
    }
  }, 60_000);
});
