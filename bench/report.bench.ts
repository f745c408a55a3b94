// cbp report for 1,000 MIDs x 36 months (x 4 networks), side by side with `cbp ratios --json` on the same
// snapshot: each run as a user runs it (the built CLI, `npx cbp`, a process of its own), its wall time and its
// peak RSS. Goal (issue #14): the report costs no more than 3x the query. Figures are generated inside DuckDB
// as bench/ratios-data.ts does (2 % of MIDs run hot), with chargebacks of every status and order age.
// BENCH_MIDS / BENCH_MONTHS change the size; BENCH_PROF=DIR writes each run's CPU profile there; BENCH_KEEP=DIR builds
// the store there and keeps it (to try commands on it afterwards: CBP_DATA_DIR=DIR).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../store/db.ts';
import { generateMidStats, generateTc40Events } from './ratios-data.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { buildCli, runCli, type CliRun } from './cli-run.ts';

const MIDS = Number(process.env.BENCH_MIDS ?? 1_000);
const MONTHS = Number(process.env.BENCH_MONTHS ?? 36);
const KEEP = process.env.BENCH_KEEP;
const dir = KEEP ? (fs.mkdirSync(KEEP, { recursive: true }), path.resolve(KEEP)) : fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-bench-report-'));
const rssMiB = (kib: number) => (kib / 1024).toFixed(0);

/** cbp as a user runs it; a failure ends the bench (every figure below needs its run). */
function cbp(label: string, args: string[]): CliRun {
  const r = runCli(dir, label, args);
  if (r.failed) throw new Error(`cbp ${args.join(' ')}: ${r.failed}`);
  return r;
}

/** DuckDB's own COPY of the rows `cbp ratios --all --json` streams (its time is measured against it). */
let copyMs = 0;

try {
  console.log(`${MIDS} MIDs x ${MONTHS} months x 4 networks`);
  const t0 = performance.now();
  // The set-up's own limit: DuckDB's COPY of every ratio row, sorted, needs more than the store's 192MB (cbp's commands run at it).
  const store = await openStore({ dbPath: path.join(dir, 'cbp.duckdb'), memoryLimit: '2GB' });
  try {
    await generateMidStats(store, { mids: MIDS, months: MONTHS });
    // Chargebacks: a few per MID-month and network, every status, reason codes and order ages spread.
    await store.run(`
      INSERT INTO chargebacks (mid, case_number, status, card_type, amount, reason_code, transaction_date, date_received, first_seen_at, last_seen_at, landing_file)
      SELECT 'mid' || lpad(m::VARCHAR, 6, '0'), 'c' || m || '-' || k || '-' || net || '-' || i,
             (['New', 'Pending', 'Won', 'Lost', 'Did Not Fight', 'Pre-Arbitration'])[(1 + hash(m, k, i) % 6)::BIGINT]::chargeback_status, net,
             10 + hash(m, k, i, 2) % 200, rc || (hash(m, i) % 4)::VARCHAR,
             (DATE '2024-01-01' + to_months(k) + INTERVAL 3 DAY - to_days((hash(m, k, i, 3) % 150)::INTEGER))::DATE,
             (DATE '2024-01-01' + to_months(k) + INTERVAL 3 DAY)::TIMESTAMP, now()::TIMESTAMP, now()::TIMESTAMP, 'bench'
      FROM range(${MIDS}) a(m), range(${MONTHS}) b(k), range(2) c(i), (VALUES ('visa', '10.'), ('mastercard', '483')) n(net, rc)`);
    await generateTc40Events(store, { mids: MIDS, months: MONTHS });
    // The nightly's evaluation writes the kept ratio table both commands read.
    const asOf = new Date(Date.UTC(2024, MONTHS - 1, 20));
    await evaluateAlerts(store, { asOf, rules: loadRules(), now: asOf });
    await store.run('CHECKPOINT');
    // DuckDB's own JSON writer over the same rows `cbp ratios --all --json` streams: what its time is measured against.
    const s = performance.now();
    await store.run(`COPY (SELECT * FROM mart_ratios WHERE state IS NOT NULL ORDER BY month, mid, network, program, metric, is_projection) TO '${path.join(dir, 'copy.json')}' (FORMAT json)`);
    copyMs = performance.now() - s;
    fs.rmSync(path.join(dir, 'copy.json'));
  } finally {
    store.close();
  }
  // The published snapshot, where both commands read it.
  fs.mkdirSync(path.join(dir, 'published'));
  fs.copyFileSync(path.join(dir, 'cbp.duckdb'), path.join(dir, 'published', 'cbp.duckdb'));
  console.log(`generated and published in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  buildCli();
  const version = cbp('version', ['--version']);
  const ratios = cbp('ratios', ['ratios', '--json']);
  const all = cbp('ratios-all', ['ratios', '--all', '--json']);
  const out = path.join(dir, 'report.html');
  const report = cbp('report', ['report', '--out', out, '--json']);
  const summary = JSON.parse(fs.readFileSync(out, 'utf8').match(/<script type="application\/json" id="cbp-report-data">([\s\S]*?)<\/script>/)![1]) as { ratios: { mids: number; atRiskTotal: number; trends: unknown[] } };
  const line = (label: string, r: CliRun, extra: string) =>
    console.log(`${label.padEnd(40)} ${(r.ms / 1000).toFixed(2).padStart(7)} s   peak RSS ${rssMiB(r.rssKiB).padStart(5)} MiB   ${extra}`);
  line('cbp --version (start-up alone)', version, '');
  line('cbp ratios --json (its default months)', ratios, `${(ratios.stdoutBytes / 1e6).toFixed(1)} MB of JSON`);
  line('cbp ratios --all --json (every month, streamed)', all, `${(all.stdoutBytes / 1e6).toFixed(1)} MB of JSON; DuckDB's COPY of the rows ${(copyMs / 1000).toFixed(2)} s`);
  line('cbp report', report, `${(fs.statSync(out).size / 1024).toFixed(0)} KiB of HTML, ${summary.ratios.mids} MIDs, ${summary.ratios.atRiskTotal} MID x programs, ${summary.ratios.trends.length} trends`);
  const net = (r: CliRun) => Math.max(1, r.ms - version.ms);
  const goal = (label: string, v: string, g: string) => console.log(`  ${label.padEnd(44)} ${v.padStart(12)} | ${g}`);
  console.log('side by side, measured | goal:');
  goal('cbp ratios --json, time', `${(ratios.ms / 1000).toFixed(2)} s`, '≤ 3 s');
  goal('cbp ratios --json, peak RSS', `${rssMiB(ratios.rssKiB)} MiB`, '≤ 256 MiB');
  goal('cbp ratios --all --json, peak RSS', `${rssMiB(all.rssKiB)} MiB`, '≤ 256 MiB (flat in the rows)');
  goal('cbp ratios --all --json / DuckDB COPY', `${(all.ms / Math.max(1, copyMs)).toFixed(2)}x`, '≤ 3x');
  goal('cbp report, time', `${(report.ms / 1000).toFixed(2)} s`, '≤ 5 s');
  goal('cbp report, peak RSS', `${rssMiB(report.rssKiB)} MiB`, '≤ 512 MiB');
  console.log(
    `side by side: report / ratios = ${(report.ms / ratios.ms).toFixed(2)}x in time (goal <= 3x), ${(report.rssKiB / ratios.rssKiB).toFixed(2)}x in peak RSS; ` +
      `without the start-up both share: ${(net(report) / net(ratios)).toFixed(2)}x`,
  );
} finally {
  if (!KEEP) fs.rmSync(dir, { recursive: true, force: true });
}
