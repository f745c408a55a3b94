// cbp report's figures are the store's: a snapshot with pinned figures (a Visa MID over VAMP's threshold, a
// Mastercard MID on watch for ECP, a clear one, an open month), the report written by the CLI, and its data
// island (<script type="application/json" id="cbp-report-data">) compared with `cbp ratios --json` (the same
// ratios, levels and month) and with SQL of our own on the snapshot (reason codes, win rates, statuses, order
// age, quarantine). Also: the file is self-contained, is written only over a previous report (or with --force),
// and an empty store gets a message instead of a report.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { cbp } from './activities-fixtures.ts';
import { tempDir } from './helpers/tmp.ts';
import { insertChargebacks, insertStats, type StatFixture } from './ratios-fixtures.ts';

interface Island {
  meta: { mids: string[] };
  ratios: {
    month: string;
    months: string[];
    mids: number;
    atRisk: Array<Record<string, unknown> & { mid: string; network: string; program: string; metric: string; month: string; state: string }>;
    trends: Array<{ mid: string; network: string; program: string; metric: string; months: Array<{ month: string; ratio: number | null; count: number | null; partial: boolean; projectedRatio?: number | null; thresholds: Array<{ level: string; ratio: number; minCount: number | null }> }> }>;
    heat: Array<{ mid: string; cells: Array<number | null> }>;
  };
  disputes: {
    reasonCodes: Array<{ network: string; reason_code: string; cases: number; amount: number }>;
    winRates: Array<{ network: string; month: string; cases: number; won: number; lost: number; win_rate: number | null }>;
    statuses: Array<{ month: string; status: string; cases: number }>;
    orderAge: Array<{ order_age: string; cases: number; amount: number }>;
  };
  quality: { quarantine: Array<{ kind: string; reason: string; rows: number }>; matchRates: Array<{ entity: string; report_rows: number }>; freshness: Array<{ source: string; rows: number }> };
}

const MONTHS = Array.from({ length: 12 }, (_, i) => `${i < 7 ? 2025 : 2026}-${String(((i + 5) % 12) + 1).padStart(2, '0')}`); // 2025-06 .. 2026-05

let dir = '';
let env: Record<string, string> = {};
let snapshot = '';
let file = '';
let html = '';
let island: Island;

function islandOf(text: string): Island {
  const m = /<script type="application\/json" id="cbp-report-data">([\s\S]*?)<\/script>/.exec(text);
  expect(m).not.toBeNull();
  return JSON.parse(m![1]) as Island;
}

async function sql<T>(q: string): Promise<T[]> {
  const r = await cbp(['sql', '--snapshot', snapshot, '--format', 'json', q], env);
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout) as T[];
}

async function seed(store: Store): Promise<void> {
  const stats: StatFixture[] = [];
  for (const month of MONTHS) {
    const open = month === '2026-05';
    // V1 (Visa): 1.6 % VAMP in 2026-04, over the 1.5 % in force from then (2.2 % before), 1,600 disputes.
    stats.push({ mid: 'V1', month, network: 'visa', cb: 0, tx: 100_000, endDay: open ? 10 : undefined });
    // M1 (Mastercard): 130 chargebacks (the MID report's count, ECP's numerator) over 10,000 transactions of M-1:
    // 1.3 %, 87 % of ECM's 1.5 %.
    stats.push({ mid: 'M1', month, network: 'mastercard', cb: open ? 40 : 130, tx: 10_000, endDay: open ? 10 : undefined });
    // C1 (Visa): clear.
    stats.push({ mid: 'C1', month, network: 'visa', cb: 0, tx: 50_000, endDay: open ? 10 : undefined });
  }
  await insertStats(store, stats);
  for (const month of MONTHS.slice(0, -1)) {
    await insertChargebacks(store, [
      { mid: 'V1', network: 'visa', received: `${month}-05`, n: month === '2026-04' ? 1600 : 900, amount: 25, reasonCode: month < '2026-01' ? '10.4' : '13.1' },
      { mid: 'M1', network: 'mastercard', received: `${month}-07`, n: 130, amount: 40, reasonCode: '4853' },
      { mid: 'C1', network: 'visa', received: `${month}-09`, n: 20, amount: 15, reasonCode: '13.2' },
    ]);
  }
  await insertChargebacks(store, [{ mid: 'V1', network: 'visa', received: '2026-05-03', n: 600, amount: 25, reasonCode: '13.1' }]);
  // Some decided, some not fought; order ages from the transaction dates.
  await store.run(`UPDATE chargebacks SET status = 'Won' WHERE mid = 'M1' AND hash(case_number) % 3 = 0`);
  await store.run(`UPDATE chargebacks SET status = 'Lost' WHERE mid = 'M1' AND hash(case_number) % 3 = 1`);
  await store.run(`UPDATE chargebacks SET status = 'Did Not Fight' WHERE mid = 'C1'`);
  await store.run(`UPDATE chargebacks SET transaction_date = date_received - INTERVAL (hash(case_number) % 150) DAY WHERE mid <> 'V1'`);
  await store.run(
    `INSERT INTO quarantine VALUES ('chargebacks', '{"amount":"x"}', 'amount: expected a number, got "x"', 'f.json', 'abc', now()::TIMESTAMP),
                                   ('chargebacks', '{"amount":"y"}', 'amount: expected a number, got "y"', 'f.json', 'abc', now()::TIMESTAMP),
                                   ('mid_report', '{}', 'mid: expected a value, got ""', 'g.json', 'def', now()::TIMESTAMP)`,
  );
}

beforeAll(async () => {
  dir = tempDir();
  env = { CBP_DATA_DIR: dir, CBP_LOG_LEVEL: 'error' };
  const dbPath = path.join(dir, 'cbp.duckdb');
  const store = await openTestStore({ dbPath });
  try {
    await seed(store);
    await store.run('CHECKPOINT');
  } finally {
    store.close();
  }
  // The published snapshot: a copy of the store where cbp looks for it (<CBP_DATA_DIR>/published/cbp.duckdb).
  snapshot = path.join(dir, 'published', 'cbp.duckdb');
  fs.mkdirSync(path.dirname(snapshot), { recursive: true });
  fs.copyFileSync(dbPath, snapshot);
  file = path.join(dir, 'report.html');
  const r = await cbp(['report', '--month', '2026-04', '--json'], env);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout).out).toBe(file);
  html = fs.readFileSync(file, 'utf8');
  island = islandOf(html);
}, 240_000);

describe('cbp report: the figures', () => {
  it('at risk now: the same ratios and levels as cbp ratios --json, levels first, then by closeness', async () => {
    const r = await cbp(['ratios', '--month', '2026-04', '--json'], env);
    expect(r.code).toBe(0);
    const ratios = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    const at = island.ratios.atRisk;
    // C1's VAMP would read clear, but no TC40 event was ever captured: unknown, after the watched rows and before the clear.
    expect(at.map((x) => `${x.mid} ${x.program} ${x.state}`)).toEqual(['V1 vamp level', 'M1 ecp watch', 'C1 vamp unknown', 'M1 efm clear']);
    for (const row of at) {
      const same = ratios.find((x) => x.mid === row.mid && x.network === row.network && x.program === row.program && x.metric === row.metric && x.month === row.month && x.is_projection === false);
      expect(same, `${row.mid} ${row.program}`).toBeDefined();
      expect(row.ratio).toBe(same!.ratio);
      expect(row.numerator).toBe(same!.numerator);
      expect(row.denominator).toBe(same!.denominator);
      expect(row.level ?? null).toBe(same!.level ?? null);
      expect(row.state).toBe(same!.state);
    }
    const v1 = at[0];
    expect(v1.ratio).toBe(1600 / 100_000);
    expect(v1.closeness).toBeCloseTo(0.016 / 0.015, 12);
    const m1 = at[1];
    expect(m1.ratio).toBe(130 / 10_000);
    expect(m1.next_level).toBe('ecm');
    expect(m1.reason).toBe('ratio 1.30 % < 1.50 %');
    expect(island.ratios.mids).toBe(3);
  });

  it('trends: the thresholds in force each month (VAMP 2.2 % to 1.5 % in 2026-04), counts and minimums, for the MIDs at risk', () => {
    expect(island.ratios.months).toEqual(['2025-04', '2025-05', ...MONTHS.slice(0, 11)]);
    expect(island.ratios.trends.map((t) => `${t.mid} ${t.program}`)).toEqual(['V1 vamp', 'M1 ecp']);
    const v1 = island.ratios.trends[0];
    const th = Object.fromEntries(v1.months.map((m) => [m.month, m.thresholds.map((t) => `${t.level} ${t.ratio} ${t.minCount}`)]));
    expect(th['2026-03']).toEqual(['excessive 0.022 1500']);
    expect(th['2026-04']).toEqual(['excessive 0.015 1500']);
    const apr = v1.months.find((m) => m.month === '2026-04')!;
    expect(apr.ratio).toBe(0.016);
    expect(apr.count).toBe(1600);
    // The chart starts at the first month with figures (2025-06), not with the empty months before it.
    expect(v1.months[0].month).toBe('2025-06');
    expect(v1.months.find((m) => m.month === '2025-04')).toBeUndefined();
    const m1 = island.ratios.trends[1];
    expect(m1.months.find((m) => m.month === '2026-04')!.thresholds.map((t) => t.level)).toEqual(['ecm', 'hecm']);
    // The heat map: ratio ÷ entry threshold of the tightest program.
    const heatV1 = island.ratios.heat.find((h) => h.mid === 'V1')!;
    expect(heatV1.cells[heatV1.cells.length - 1]).toBeCloseTo(0.016 / 0.015, 12);
    expect(island.ratios.heat[0].mid).toBe('V1');
  });

  it('no --month: the months `cbp ratios` shows with no flags (the latest complete month and the month to date), named in the header', async () => {
    const r = await cbp(['report', '--out', path.join(dir, 'default.html'), '--json'], env);
    expect(r.code).toBe(0);
    const text = fs.readFileSync(path.join(dir, 'default.html'), 'utf8');
    const d = islandOf(text) as Island & { ratios: { shown: Array<{ month: string; kind: string; days_covered: number | null; days_in_month: number | null }> } };
    const ratios = await cbp(['ratios', '--json'], env);
    expect(ratios.code).toBe(0);
    const rows = JSON.parse(ratios.stdout) as Array<{ mid: string; program: string; metric: string; month: string; state: string | null; is_projection: boolean }>;
    expect(d.ratios.shown.map((m) => m.month)).toEqual([...new Set(rows.map((x) => x.month))].sort());
    expect(d.ratios.shown).toEqual([
      { month: '2026-04', kind: 'complete', days_covered: null, days_in_month: null },
      { month: '2026-05', kind: 'month_to_date', days_covered: 10, days_in_month: 31 },
    ]);
    expect(JSON.parse(r.stdout).scope).toBe('Latest complete month 2026-04, and 2026-05 month to date (10 of 31 days)');
    expect(text).toContain('<p class="scope">Latest complete month 2026-04, and 2026-05 month to date (10 of 31 days)');
    // Each at-risk row has the state `cbp ratios` gives it in its month.
    for (const a of d.ratios.atRisk) {
      const same = rows.find((x) => x.mid === a.mid && x.program === a.program && x.metric === a.metric && x.month === a.month && !x.is_projection);
      expect(same?.state, `${a.mid} ${a.program} ${a.month}`).toBe(a.state);
    }
    expect(d.ratios.atRisk.filter((a) => a.month === '2026-05').length).toBeGreaterThan(0);
    expect(d.ratios.atRisk.filter((a) => a.month === '2026-04').length).toBeGreaterThan(0);
  });

  it('an open month: the month to date and its run-rate projection, dashed, in the trend', async () => {
    const r = await cbp(['report', '--mid', 'V1', '--out', path.join(dir, 'v1.html'), '--json'], env);
    expect(r.code).toBe(0);
    const v = islandOf(fs.readFileSync(path.join(dir, 'v1.html'), 'utf8'));
    expect(v.ratios.month).toBe('2026-05');
    expect(v.meta.mids).toEqual(['V1']);
    expect(v.ratios.atRisk.every((x) => x.mid === 'V1')).toBe(true);
    const may = v.ratios.trends[0].months.find((m) => m.month === '2026-05')!;
    expect(may.partial).toBe(true);
    expect(may.count).toBe(600);
    // The projection `cbp ratios` gives (the snapshot's mart_ratios holds what an evaluation wrote: none ran here).
    const ratios = await cbp(['ratios', '--mid', 'V1', '--json'], env);
    expect(ratios.code).toBe(0);
    const proj = (JSON.parse(ratios.stdout) as Array<{ program: string; metric: string; month: string; is_projection: boolean; ratio: number }>)
      .find((x) => x.program === 'vamp' && x.metric === 'count' && x.month === '2026-05' && x.is_projection)!;
    expect(may.projectedRatio).toBe(proj.ratio);
    expect(v.disputes.reasonCodes.every((x) => x.network === 'visa')).toBe(true);
  });

  it('disputes: reason codes, win rates, statuses and order age equal SQL of our own on the snapshot', async () => {
    const where = `date_received >= '2025-04-01' AND date_received < '2026-05-01'`;
    const codes = await sql<{ network: string; reason_code: string; cases: number; amount: number }>(
      `SELECT card_type::VARCHAR AS network, reason_code, count(*)::INT AS cases, sum(amount)::DOUBLE AS amount FROM chargebacks WHERE ${where} GROUP BY ALL ORDER BY ALL`,
    );
    const mine = island.disputes.reasonCodes.map((x) => ({ network: x.network, reason_code: x.reason_code, cases: x.cases, amount: x.amount }))
      .sort((a, b) => a.network.localeCompare(b.network) || a.reason_code.localeCompare(b.reason_code));
    expect(mine).toEqual(codes);
    const wins = await sql<{ network: string; month: string; won: number; lost: number }>(
      `SELECT card_type::VARCHAR AS network, strftime(date_received, '%Y-%m') AS month, count(*) FILTER (WHERE status = 'Won')::INT AS won,
              count(*) FILTER (WHERE status = 'Lost')::INT AS lost FROM chargebacks WHERE ${where} GROUP BY ALL ORDER BY ALL`,
    );
    expect(island.disputes.winRates.map(({ network, month, won, lost }) => ({ network, month, won, lost }))).toEqual(wins);
    for (const w of island.disputes.winRates) expect(w.win_rate).toBe(w.won + w.lost ? w.won / (w.won + w.lost) : null);
    const statuses = await sql<{ status: string; cases: number }>(
      `SELECT status::VARCHAR AS status, count(*)::INT AS cases FROM chargebacks WHERE ${where} GROUP BY ALL ORDER BY ALL`,
    );
    const byStatus = new Map<string, number>();
    for (const s of island.disputes.statuses) byStatus.set(s.status, (byStatus.get(s.status) ?? 0) + s.cases);
    expect([...byStatus].map(([status, cases]) => ({ status, cases })).sort((a, b) => a.status.localeCompare(b.status))).toEqual(statuses);
    const [age] = await sql<{ known: number; unknown: number }>(
      `SELECT count(transaction_date)::INT AS known, count(*) FILTER (WHERE transaction_date IS NULL)::INT AS unknown FROM chargebacks WHERE ${where}`,
    );
    expect(island.disputes.orderAge.find((a) => a.order_age === '(unknown)')!.cases).toBe(age.unknown);
    expect(island.disputes.orderAge.filter((a) => a.order_age !== '(unknown)').reduce((s, a) => s + a.cases, 0)).toBe(age.known);
  });

  it('no rule evaluation ran on this store: the report judges the ratio table first, so nothing is behind (stderr stays empty)', () => {
    expect(html).not.toContain('class="behind"');
    expect(island.ratios.atRisk.length).toBeGreaterThan(0);
  });

  it('data quality: quarantine by reason without the values, match rates and freshness of each source', async () => {
    expect(island.quality.quarantine).toEqual([
      { kind: 'chargebacks', reason: 'amount: expected a number', rows: 2 },
      { kind: 'mid_report', reason: 'mid: expected a value', rows: 1 },
    ]);
    const [{ n }] = await sql<{ n: number }>('SELECT count(*)::INT AS n FROM chargebacks');
    expect(island.quality.matchRates.find((m) => m.entity === 'chargebacks')!.report_rows).toBe(n);
    expect(island.quality.freshness.find((f) => f.source === 'chargebacks')!.rows).toBe(n);
  });
});

describe('cbp report: the file', () => {
  it('is one self-contained page: charts as inline SVG with titles and captions, no script to run, nothing fetched', () => {
    expect(html).toContain('<meta name="generator" content="cbp report">');
    for (const id of ['at-risk', 'trends', 'heatmap', 'disputes', 'quality', 'due', 'prevention', 'vintage']) expect(html).toContain(`<section id="${id}">`);
    const figures = html.match(/<figure class="chart"[\s\S]*?<\/figure>/g) ?? [];
    // 2 trends, the heat map, 2 networks x 2 Pareto, win rate, statuses, order age, match rates, quarantine, freshness, vintage
    expect(figures.length).toBe(2 + 1 + 4 + 3 + 3 + 1);
    expect(html.match(/<figure class="chart" data-chart="trend"/g)).toHaveLength(2);
    for (const f of figures) {
      expect(f).toMatch(/<svg[^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect(f).toMatch(/<figcaption>[^<]{20,}<\/figcaption>/);
    }
    // The only script is the JSON data island; no src, no href or url() to anything outside the page.
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script type="application/json" id="cbp-report-data">']);
    expect(html).not.toMatch(/\ssrc=|<link\b|@import|url\((?!#)|href="(?!#)/i);
    expect(html).toContain('ratio (%)');
    expect(html).toContain('chargebacks (count)');
    expect(html).toContain('amount (reporting currency)');
  });

  it('replaces a previous report, refuses any other file (exit 2) unless --force, and leaves no temp file', async () => {
    // What a killed run left (its process is gone): removed by the next report to that file.
    const leftover = path.join(dir, '.report.html.cbp-report-2147483646-1.tmp');
    fs.writeFileSync(leftover, '<half a report');
    const again = await cbp(['report', '--month', '2026-04'], env);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain(`wrote ${file}`);
    const other = path.join(dir, 'notes.html');
    fs.writeFileSync(other, '<html>my notes</html>');
    const refused = await cbp(['report', '--out', other], env);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not a report cbp wrote.*--force/);
    expect(fs.readFileSync(other, 'utf8')).toBe('<html>my notes</html>');
    const forced = await cbp(['report', '--out', other, '--force'], env);
    expect(forced.code).toBe(0);
    expect(fs.readFileSync(other, 'utf8')).toContain('content="cbp report"');
    expect(fs.readdirSync(dir).filter((f) => f.includes('.cbp-report-'))).toEqual([]);
    const unknown = await cbp(['report', '--mid', 'NOPE', '--out', path.join(dir, 'x.html')], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('"NOPE"');
    expect(fs.existsSync(path.join(dir, 'x.html'))).toBe(false);
  });

  it('an empty store: a message saying what to load, exit 1, no file', async () => {
    const empty = tempDir();
    fs.mkdirSync(path.join(empty, 'published'));
    const store = await openTestStore({ dbPath: path.join(empty, 'published', 'cbp.duckdb') });
    store.close();
    const r = await cbp(['report'], { CBP_DATA_DIR: empty, CBP_LOG_LEVEL: 'error' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/Nothing to report: .*holds no MID report figures and no chargebacks yet.*Load reports first/);
    expect(fs.existsSync(path.join(empty, 'report.html'))).toBe(false);
  });
});
