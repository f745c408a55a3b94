// The report as a person sees it: the demo's data, `cbp report`, and the file opened in a real headless Chromium
// (Debian's chromium driven by playwright-core) with JavaScript off, offline, every request routed. It takes a
// screenshot of each section (test-artifacts/report/, git-ignored), counts the charts and MIDs it shows against
// the demo's own figures and `cbp report --json`, checks the threshold lines are drawn and nothing is cut off,
// and that the page asks for nothing but its own file. The render time is printed, never asserted.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cbp, tempDir } from './activities-fixtures.ts';
import { browserMissing, browserRequired, isolatedPage, launchBrowser, CHROMIUM, type RequestLog } from './helpers/browser.ts';
import { COLOURS } from '../report/svg.ts';
import { copyDemo } from './helpers/shared-demo.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ARTIFACTS = path.join(ROOT, 'test-artifacts', 'report');
const SECTIONS = ['at-risk', 'trends', 'heatmap', 'disputes', 'quality', 'due', 'prevention', 'vintage'] as const;
/** The demo's scenario: one MID over a program of each network (test/demo.test.ts asserts the same in its output). */
const DEMO_BREACHES = [
  ['860100000101', 'mastercard', 'ecp'],
  ['860100000102', 'visa', 'vamp'],
  ['860100000107', 'american_express', 'amex_excessive'],
  ['860100000108', 'discover', 'discover_excessive'],
] as const;

interface Summary { out: string; bytes: number; month: string; shown: Array<{ month: string; kind: string }>; scope: string; months: string[]; mids: number; trends: number; charts: number; at_level: number }

const missing = browserMissing();

describe.skipIf(missing !== null && !browserRequired())(`the report in a real browser${missing ? ` (skipped: ${missing})` : ''}`, { timeout: 300_000 }, () => {
  let dir = '';
  let snapshot = '';
  let file = '';
  let url = '';
  let summary: Summary;
  let settings: Record<string, string> = {};
  let browser: Browser | undefined;
  let page: Page;
  let requests: RequestLog;
  let closePage: () => Promise<void> = async () => {};
  const sql = async <T,>(q: string): Promise<T[]> => {
    const r = await cbp(['sql', '--snapshot', snapshot, '--format', 'json', q]);
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as T[];
  };

  beforeAll(async () => {
    if (missing) throw new Error(`CBP_REQUIRE_BROWSER=1 and ${missing}`);
    dir = tempDir();
    // Laid out as a user's checkout is (data/demo), and the report made from that folder with relative paths,
    // so its header (and the README's picture) names data/demo, not this test's temp folder.
    const data = path.join(dir, 'data', 'demo');
    const demo = await copyDemo(data); // the run's demo (test/helpers/shared-demo.ts)
    expect(demo.stderr).not.toMatch(/\n\s+at /);
    expect(demo.code).toBe(0);
    snapshot = path.join(data, 'published', 'cbp.duckdb');
    file = path.join(dir, 'report.html');
    // The demo's own thresholds file (its MIDs' Visa regions), as the demo's commands read it.
    settings = { CBP_DATA_DIR: data, CBP_THRESHOLDS_FILE: path.join(data, 'thresholds.json'), CBP_LOG_LEVEL: 'error' };
    const relative = { CBP_DATA_DIR: 'data/demo', CBP_THRESHOLDS_FILE: 'data/demo/thresholds.json', CBP_LOG_LEVEL: 'error' };
    const r = await cbp(['report', '--snapshot', 'data/demo/published/cbp.duckdb', '--out', 'report.html', '--json'], relative, dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    summary = JSON.parse(r.stdout) as Summary;
    url = pathToFileURL(file).href;
    fs.rmSync(ARTIFACTS, { recursive: true, force: true });
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    browser = await launchBrowser();
    const p = await isolatedPage(browser, url, { javaScript: false, width: 1400, height: 1000 });
    page = p.page;
    requests = p.requests;
    closePage = () => p.context.close();
    const t0 = performance.now();
    await page.goto(url, { waitUntil: 'load' });
    const loaded = performance.now() - t0;
    const t1 = performance.now();
    await page.screenshot({ path: path.join(ARTIFACTS, 'full-page.png'), fullPage: true });
    const painted = performance.now() - t1;
    // Printed for a person to read; no test asserts a time (bench/report-render.bench.ts measures it).
    console.log(`report in Chromium ${CHROMIUM}: ${(summary.bytes / 1024).toFixed(0)} KiB, ${summary.charts} charts; load ${loaded.toFixed(0)} ms, full-page screenshot ${painted.toFixed(0)} ms`);
  }, 300_000); // waits for the run's demo (a kill timer for a hang, not a time budget)

  afterAll(async () => {
    await closePage();
    await browser?.close();
  });

  it('makes no network request at all: the only request is the file itself', () => {
    expect(requests.refused).toEqual([]);
    expect(requests.all).toEqual([url]);
  });

  it('shows the eight sections, each saved as a screenshot', async () => {
    for (const id of SECTIONS) {
      const s = page.locator(`section#${id}`);
      expect(await s.isVisible(), id).toBe(true);
      const box = await s.boundingBox();
      expect(box!.height, id).toBeGreaterThan(60);
      // The sticky navigation bar would sit over a tall section's middle in a scrolled screenshot: not in these.
      await s.screenshot({ path: path.join(ARTIFACTS, `${id}.png`), style: 'nav, th { position: static !important; }' });
      expect(fs.statSync(path.join(ARTIFACTS, `${id}.png`)).size, id).toBeGreaterThan(5_000);
    }
  });

  it('draws every chart without JavaScript, none cut off, as many as cbp report said', async () => {
    const charts = page.locator('figure.chart');
    expect(await charts.count()).toBe(summary.charts);
    // Nothing wider than the window: no horizontal scroll bar (expressions: the tests compile without the DOM's types).
    const width = (await page.evaluate('document.documentElement.clientWidth')) as number;
    expect((await page.evaluate('document.documentElement.scrollWidth')) as number).toBeLessThanOrEqual(width);
    for (let i = 0; i < summary.charts; i++) {
      const fig = charts.nth(i);
      const svg = fig.locator('svg').first();
      const box = await svg.boundingBox();
      const kind = await fig.getAttribute('data-chart');
      expect(box, `chart ${i} (${kind})`).not.toBeNull();
      expect(box!.width, `chart ${i} (${kind})`).toBeGreaterThan(200);
      expect(box!.height, `chart ${i} (${kind})`).toBeGreaterThan(100);
      expect(box!.x + box!.width, `chart ${i} (${kind}) cut off at the right`).toBeLessThanOrEqual(width);
      // Drawn marks and a title, not an empty frame; and a caption saying what it shows.
      expect(await svg.locator('path').count(), `chart ${i} (${kind})`).toBeGreaterThan(3);
      expect((await svg.locator('text').allTextContents()).join(' ').trim().length, `chart ${i} (${kind})`).toBeGreaterThan(10);
      expect((await fig.locator('figcaption').textContent())?.trim().length ?? 0, `chart ${i} (${kind})`).toBeGreaterThan(20);
    }
  });

  it("counts the demo's MIDs: the header, the at-risk table and the heat map against the snapshot", async () => {
    const [{ n }] = await sql<{ n: number }>(
      `SELECT count(DISTINCT mid)::INT AS n FROM mart_ratios WHERE month BETWEEN '${summary.months[0]}' AND '${summary.month}'`,
    );
    expect(n).toBe(8); // the demo's eight MIDs
    expect(summary.mids).toBe(n);
    expect(await page.locator("header").textContent()).toContain(`${n} MIDs`);
    const tableMids = new Set(await page.locator('table.at-risk tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-mid'))));
    expect(tableMids.size).toBe(n);
    // The months and every row's state (its colour and badge) are the ones `cbp ratios` with no flags gives the same
    // MID, program, metric and month: the report shows its months (the latest complete one and the month to date).
    const r = await cbp(['ratios', '--snapshot', snapshot, '--json'], settings);
    expect(r.code).toBe(0);
    const ratios = (JSON.parse(r.stdout) as Array<{ mid: string; network: string; program: string; metric: string; month: string; is_projection: boolean; state: string | null }>)
      .filter((x) => !x.is_projection && x.state !== null);
    expect(summary.shown.map((m) => m.month)).toEqual([...new Set(ratios.map((x) => x.month))].sort());
    expect(await page.locator('header p.scope').textContent()).toContain(summary.scope);
    const rows = await page.locator('table.at-risk tbody tr').evaluateAll((trs) => trs.map((tr) => ({
      mid: tr.getAttribute('data-mid'), program: tr.getAttribute('data-program'), month: tr.getAttribute('data-month'), cls: tr.getAttribute('class'),
      metric: tr.querySelectorAll('td')[3]?.textContent?.trim(), badge: tr.querySelector('.badge')?.textContent?.trim(),
    })));
    const badge = { level: 'level reached', watch: 'watch', clear: 'clear', unknown: 'unknown' } as Record<string, string>;
    for (const row of rows) {
      const same = ratios.find((x) => x.mid === row.mid && x.program === row.program && x.metric === row.metric && x.month === row.month);
      expect(same, `${row.mid} ${row.program} ${row.metric} ${row.month} in cbp ratios`).toBeDefined();
      expect({ row: `${row.mid} ${row.program} ${row.month}`, cls: row.cls, badge: row.badge }).toEqual({ row: `${row.mid} ${row.program} ${row.month}`, cls: `state-${same!.state}`, badge: badge[same!.state!] });
    }
    // The demo's breaching MIDs are at risk in the latest complete month: a level reached, or watched.
    for (const [mid, , program] of DEMO_BREACHES) {
      const row = rows.find((x) => x.mid === mid && x.program === program && x.month === summary.shown[0].month);
      expect(row?.cls, `${mid} ${program}`).toMatch(/^state-(level|watch)$/);
    }
  });

  it("draws a trend per MID × program at risk, with the thresholds in force as lines, and the demo's breaches among them", async () => {
    const trends = page.locator('figure.chart[data-chart="trend"]');
    expect(await trends.count()).toBe(summary.trends);
    for (const [mid, network, program] of DEMO_BREACHES) {
      expect(await page.locator(`figure[data-chart="trend"][data-mid="${mid}"][data-network="${network}"][data-program="${program}"]`).count(), `${mid} ${program}`).toBe(1);
    }
    const thresholdColours = new Set<string>(COLOURS.thresholds);
    for (let i = 0; i < summary.trends; i++) {
      const fig = trends.nth(i);
      const levels = Number(await fig.getAttribute('data-threshold-lines'));
      const label = `${await fig.getAttribute('data-mid')} ${await fig.getAttribute('data-program')}`;
      expect(levels, label).toBeGreaterThan(0);
      // The threshold lines as drawn: dashed, unfilled, in a threshold colour, spanning more than a point.
      const lines = await fig.locator('svg path[fill="none"][stroke-dasharray]').evaluateAll((ps) =>
        ps.map((p) => ({ stroke: p.getAttribute('stroke') ?? '', width: (p as unknown as { getBoundingClientRect(): { width: number } }).getBoundingClientRect().width })));
      const drawn = lines.filter((l) => thresholdColours.has(l.stroke) && l.width > 40);
      expect(new Set(drawn.map((l) => l.stroke)).size, label).toBe(Math.min(levels, COLOURS.thresholds.length));
    }
  });

  it("takes the README's picture: the header, the first at-risk rows of each month and the first two trends", async () => {
    // A style sheet put in through the browser's protocol (the page's own scripts stay off): these rules only
    // (four rows of each month's table, the latest complete month and the month to date; two trends: within the size kept).
    const style = `nav, th { position: static !important; }
      section#at-risk tbody tr:nth-child(n+5), section#at-risk .note { display: none; }
      section#trends figure.chart:nth-of-type(n+3) { display: none; }`;
    await page.setViewportSize({ width: 1640, height: 1200 });
    try {
      await page.evaluate(`{ const s = document.createElement('style'); s.id = 'readme-shot'; s.textContent = ${JSON.stringify(style)}; document.head.append(s); }`);
      // The second trend's bottom on the page (a locator's box is relative to the scrolled window).
      const bottom = (await page.evaluate("(() => { const f = document.querySelectorAll('section#trends figure.chart')[1]; return f ? f.getBoundingClientRect().bottom + window.scrollY : 0; })()")) as number;
      expect(bottom).toBeGreaterThan(500);
      const shot = path.join(ARTIFACTS, 'readme.png');
      await page.screenshot({ path: shot, fullPage: true, clip: { x: 0, y: 0, width: 1640, height: bottom + 10 } });
      // Kept small enough for the repository (the committed one is checked too): 400 KiB, room for the at-risk table's
      // column of headroom and fee words (issue #28).
      expect(fs.statSync(shot).size).toBeLessThan(400 * 1024);
      if (process.env.CBP_UPDATE_DOCS_SHOT === '1') fs.copyFileSync(shot, DOCS_SHOT);
      expect(fs.statSync(DOCS_SHOT).size).toBeLessThan(400 * 1024);
    } finally {
      await page.evaluate("document.getElementById('readme-shot')?.remove()");
      await page.setViewportSize({ width: 1400, height: 1000 });
    }
  });
});

/** Where the README's picture of the report is (CBP_UPDATE_DOCS_SHOT=1 writes it from this test's report). */
const DOCS_SHOT = path.join(ROOT, 'docs', 'report.png');

if (missing !== null && !browserRequired()) {
  // Said where a person reading the run sees it, beside the skipped suite's name.
  console.warn(`test/report-browser.test.ts skipped: ${missing}`);
}
