// The analyst's report in a real browser: how long Debian's headless Chromium (playwright-core, JavaScript off,
// offline) takes to load `cbp report`'s file and to paint all of it (a full-page screenshot), beside the same
// for a one-line HTML file, in the same run. The report is built from the demo's data (`cbp demo` in a temp
// folder, about a minute), or BENCH_REPORT_HTML names one already written. Median and fastest of
// BENCH_RENDER_RUNS (default 7) runs each, in turn; nothing here is a pass/fail limit.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { browserMissing, isolatedPage, launchBrowser, CHROMIUM } from '../test/helpers/browser.ts';
import { removeTempDirs } from '../test/helpers/tmp.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.BENCH_RENDER_RUNS ?? 7);

const missing = browserMissing();
if (missing) {
  console.log(`report-render bench skipped: ${missing}`);
  process.exit(0);
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-render-'));
try {
  let report = process.env.BENCH_REPORT_HTML;
  if (!report) {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CBP_|TEMPORAL_)/.test(k)));
    const data = path.join(work, 'demo');
    const cli = path.join(ROOT, 'bin', 'cbp-dev.js');
    console.log('building the demo data and its report (cbp demo, cbp report)...');
    const demo = spawnSync(process.execPath, [cli, 'demo', '--data-dir', data], { cwd: ROOT, env, encoding: 'utf8' });
    if (demo.status !== 0) throw new Error(`cbp demo failed: ${demo.stderr}`);
    report = path.join(work, 'report.html');
    const r = spawnSync(process.execPath, [cli, 'report', '--snapshot', path.join(data, 'published', 'cbp.duckdb'), '--out', report], { cwd: ROOT, env: { ...env, CBP_DATA_DIR: data, CBP_THRESHOLDS_FILE: path.join(data, 'thresholds.json') }, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`cbp report failed: ${r.stderr}`);
  }
  const blank = path.join(work, 'blank.html');
  fs.writeFileSync(blank, '<!DOCTYPE html><html><head><meta charset="utf-8"><title>blank</title></head><body><p>blank</p></body></html>');

  const browser = await launchBrowser();
  const cases = [
    { name: 'one-line HTML file', file: blank },
    { name: `cbp report (${(fs.statSync(report).size / 1024).toFixed(0)} KiB)`, file: report },
  ];
  const load = cases.map(() => [] as number[]);
  const paint = cases.map(() => [] as number[]);
  try {
    for (let i = 0; i < RUNS + 1; i++) {
      for (const [k, c] of cases.entries()) {
        const url = pathToFileURL(c.file).href;
        const p = await isolatedPage(browser, url, { javaScript: false, width: 1400, height: 1000 });
        try {
          const t0 = performance.now();
          await p.page.goto(url, { waitUntil: 'load' });
          const t1 = performance.now();
          await p.page.screenshot({ fullPage: true });
          const t2 = performance.now();
          if (p.requests.refused.length) throw new Error(`${c.name} asked for ${p.requests.refused.join(', ')}`);
          if (i > 0) { load[k].push(t1 - t0); paint[k].push(t2 - t1); } // the first round warms the browser
        } finally {
          await p.context.close();
        }
      }
    }
  } finally {
    await browser.close();
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const ms = (v: number) => `${v.toFixed(0).padStart(6)} ms`;
  console.log(`Chromium ${CHROMIUM}, JavaScript off, ${RUNS} runs each (median / fastest)`);
  console.log(`${'page'.padEnd(30)} ${'load'.padStart(20)} ${'full-page paint'.padStart(20)}`);
  for (const [k, c] of cases.entries()) {
    console.log(`${c.name.padEnd(30)} ${ms(median(load[k]))} / ${ms(Math.min(...load[k]))} ${ms(median(paint[k]))} / ${ms(Math.min(...paint[k]))}`);
  }
  console.log(`report ÷ blank: load ×${(median(load[1]) / median(load[0])).toFixed(1)}, paint ×${(median(paint[1]) / median(paint[0])).toFixed(1)}`);
  console.log(`peak RSS of this process (not the browser's): ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`);
} finally {
  removeTempDirs();
  fs.rmSync(work, { recursive: true, force: true });
}
