// A payment facilitator's portfolio (issue #26): 100,000 MIDs x 36 months (x 4 networks; BENCH_MIDS, BENCH_MONTHS
// change it). The first evaluation of the store (not a goal: it computes every month once), then one nightly — the
// next month to date for every MID, its chargebacks and TC40 events, and the evaluation after it — and `cbp ratios
// --json` (its default months) and the table as a user runs them, a process of its own, on the published store. Goals: the nightly
// ≤ 10 s, cbp ratios ≤ 3 s, the peak RSS of each ≤ 1 GiB, printed beside what was measured.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { generateRatioData, loadMonthToDate } from './ratios-data.ts';
import { buildCli, runCli } from './cli-run.ts';

const MIDS = Number(process.env.BENCH_MIDS ?? 100_000);
const MONTHS = Number(process.env.BENCH_MONTHS ?? 36);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-portfolio-'));
const rssMiB = () => process.resourceUsage().maxRSS / 1024;
const monthAt = (k: number) => new Date(Date.UTC(2024, k, 1)).toISOString().slice(0, 7);
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const rules = loadRules();

try {
  console.log(`${MIDS} MIDs x ${MONTHS} months x 4 networks`);
  const dbPath = path.join(dir, 'cbp.duckdb');
  const store = await openStore({ dbPath });
  let nightlyMs = 0;
  let nightlyRss = 0;
  try {
    let s = performance.now();
    await generateRatioData(store, { mids: MIDS, months: MONTHS });
    console.log(`generated in ${secs(performance.now() - s)}`);
    const before = new Date(`${monthAt(MONTHS - 1)}-28T06:00:00Z`);
    s = performance.now();
    const first = await evaluateAlerts(store, { asOf: before, rules, now: before });
    console.log(`first evaluation ${secs(performance.now() - s)} (${first.rows} ratio rows written)   peak RSS ${rssMiB().toFixed(0)} MiB`);
    // The nightly's load: the next month to date (1st .. 20th).
    const asOf = await loadMonthToDate(store, { mids: MIDS, months: MONTHS });
    s = performance.now();
    const r = await evaluateAlerts(store, { asOf, rules, now: asOf });
    nightlyMs = performance.now() - s;
    nightlyRss = rssMiB();
    console.log(`nightly evaluation ${secs(nightlyMs)} (months from ${r.fromMonth}, ${r.rows} ratio rows written)   peak RSS ${nightlyRss.toFixed(0)} MiB`);
    await store.run('CHECKPOINT');
  } finally {
    store.close();
  }
  fs.mkdirSync(path.join(dir, 'published'));
  fs.copyFileSync(dbPath, path.join(dir, 'published', 'cbp.duckdb'));
  // `cbp ratios` as a user runs it (npx cbp), a process of its own: the table (each month's 100 rows most at risk, and the
  // months' counts), then --json (every row of its default months, streamed to a file as a user's redirect takes it).
  buildCli();
  const runRatios = (label: string, args: string[]) => {
    const r = runCli(dir, label, ['ratios', ...args]);
    const rss = r.rssKiB / 1024;
    // A failure is a figure too (printed beside its goal), not the end of the run.
    console.log(`cbp ratios ${args.join(' ')} ${secs(r.ms)}, ${(r.stdoutBytes / 1e6).toFixed(1)} MB   peak RSS ${rss.toFixed(0)} MiB${r.failed ? `   ${r.failed}` : ''}`);
    return { ms: r.ms, rss, failed: r.failed };
  };
  const table = runRatios('ratios', []);
  const json = runRatios('ratios-json', ['--json']);
  const ratiosMs = table.ms;
  const ratiosRss = table.rss;
  const failed = table.failed;
  console.log('side by side, measured | goal:');
  console.log(`  nightly evaluation        ${secs(nightlyMs).padStart(9)} | ≤ 10 s`);
  console.log(`  cbp ratios                ${(failed ? 'FAILED' : secs(ratiosMs)).padStart(9)} | ≤ 3 s`);
  console.log(`  cbp ratios --json         ${(json.failed ? 'FAILED' : secs(json.ms)).padStart(9)} | (every row of the default months; no goal of its own)`);
  console.log(`  peak RSS, nightly         ${`${nightlyRss.toFixed(0)} MiB`.padStart(9)} | ≤ 1024 MiB`);
  console.log(`  peak RSS, cbp ratios      ${`${ratiosRss.toFixed(0)} MiB`.padStart(9)} | ≤ 1024 MiB`);
  console.log(`  peak RSS, --json          ${`${json.rss.toFixed(0)} MiB`.padStart(9)} | ≤ 1024 MiB`);
} finally {
  // BENCH_KEEP=1 keeps the store (and the published copy) to look into.
  if (process.env.BENCH_KEEP === '1') console.log(`kept: ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
}
