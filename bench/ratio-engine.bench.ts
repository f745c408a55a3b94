// The ratio engine's goals (issue #35), printed side by side in one run: the first judgement of every month against a
// plain copy of the table it writes, a nightly with a new month to date, a refresh after one month loaded, and the size
// of the ratio and alert path. BENCH_MIDS (default 10,000) x BENCH_MONTHS (36) x 4 networks; BENCH_MIDS=100000 for the
// large figure (long). Reads after loads (cbp ratios --json, --all --json, cbp report): bench/report.bench.ts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore, statementWatch } from '../store/db.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { loadRules } from '../rules/thresholds.ts';
import { generateRatioData, loadMonthToDate, writeMidReport } from './ratios-data.ts';
import { loadReport } from '../store/load.ts';
import { PACKAGE_ROOT } from '../lib/package-root.ts';

const MIDS = Number(process.env.BENCH_MIDS ?? 10_000);
const MONTHS = Number(process.env.BENCH_MONTHS ?? 36);
const rssMiB = () => (process.resourceUsage().maxRSS / 1024).toFixed(0);
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const timed = async <T>(fn: () => Promise<T>): Promise<[T, number]> => { const s = performance.now(); const v = await fn(); return [v, performance.now() - s]; };
const lines: Array<[string, string, string]> = [];
const row = (label: string, measured: string, goal: string) => { lines.push([label, measured, goal]); console.log(`  ${label}: ${measured} | goal ${goal}`); };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
const store = await openStore({ dbPath: path.join(dir, 'bench.duckdb'), memoryLimit: process.env.BENCH_MEMORY_LIMIT });
try {
  console.log(`${MIDS} MIDs x ${MONTHS} months x 4 networks`);
  await generateRatioData(store, { mids: MIDS, months: MONTHS });
  const rules = loadRules();
  // The first judgement: inputs of every month, every month judged, the table written; each with the checkpoint a
  // process pays at the latest when it closes the store, so that no later step pays it.
  // Its parts, by the statements' time: what the goal leaves for the inputs, the runs and the explanation beside the write.
  const parts = new Map<string, number>();
  const part = (sql: string) => (/^\s*CHECKPOINT\s*$/.test(sql) ? 'checkpoints'
    : /ratio_month_inputs_between|(INSERT INTO|DELETE FROM) ratio_month_inputs\b|_cbp_tc40_monthly|int_tc40__events|FROM mid_stats/.test(sql) ? 'inputs'
    : /ratio_level_runs/.test(sql) ? 'runs'
    : /INSERT INTO ratio_mart\b|_ratio_levels|_ratio_class_levels|_ratio_rule_figures|_ratio_fees/.test(sql) ? 'ratio rows explained and written'
    : /forecast/.test(sql) ? 'forecasts' : 'the rest');
  statementWatch.begin = (sql) => { const s = performance.now(); return () => parts.set(part(sql), (parts.get(part(sql)) ?? 0) + performance.now() - s); };
  const [first, firstMs] = await timed(async () => { const r = await refreshRatios(store, rules); await store.run('CHECKPOINT'); return r; });
  statementWatch.begin = undefined;
  const [, copyMs] = await timed(() => store.run('CREATE TABLE bench_copy AS SELECT * FROM ratio_mart; CHECKPOINT'));
  await store.run('DROP TABLE bench_copy');
  console.log(`first judgement: ${first.rows} rows in ${secs(firstMs)}; a plain copy of the table ${secs(copyMs)}; peak RSS ${rssMiB()} MiB`);
  row(`first judgement / plain copy, ${MIDS} MIDs`, `${(firstMs / copyMs).toFixed(2)}x (${secs(firstMs)} vs ${secs(copyMs)})`, '≤ 2x');
  parts.set('outside statements', firstMs - [...parts.values()].reduce((a, b) => a + b, 0));
  console.log(`  its parts: ${[...parts].map(([k, ms]) => `${k} ${secs(ms)} (${(ms / copyMs).toFixed(2)}x the copy)`).join(', ')}`);
  // Other rules (ECM at 1.51 %): every month judged again, the kept inputs read.
  const other = { ...rules, rules: rules.rules.map((r) => (r.level === 'ecm' ? { ...r, ratio_threshold: 0.0151 } : r)) };
  const [, otherMs] = await timed(async () => { await refreshRatios(store, other); await store.run('CHECKPOINT'); });
  row('every month judged again under other rules', secs(otherMs), '(no goal; the first minus the inputs)');
  // A nightly: the next month to date for every MID, then the evaluation (refresh and notices). What DuckDB cached for
  // the judgements above goes back first, as the worker gives it back after each evaluation (activities/alerts.ts).
  await store.releaseMemory();
  const asOf = await loadMonthToDate(store, { mids: MIDS, months: MONTHS });
  await store.run('CHECKPOINT'); // the load's, which its own commits pay in a nightly: not the evaluation's
  const [night, nightMs] = await timed(() => evaluateAlerts(store, { asOf, rules: other, now: asOf }));
  row(`nightly with a new month to date, ${MIDS} MIDs`, `${secs(nightMs)} (from ${night.fromMonth}, ${night.rows} rows, ${night.newNotices.length} notices)`, '≤ 10 s at 100,000 MIDs');
  const [, againMs] = await timed(() => evaluateAlerts(store, { asOf, rules: other, now: asOf }));
  row('the same evaluation again, nothing changed', secs(againMs), '(no goal)');
  // One month's MID report file loaded as `cbp load mid_report` loads it, then the refresh it triggers, against the load alone.
  const file = writeMidReport(dir, MIDS, MONTHS + 1);
  const month = new Date(Date.UTC(2024, MONTHS + 1, 1)).toISOString().slice(0, 7);
  const window = { from: `${month}-01`, to: new Date(Date.UTC(2024, MONTHS + 2, 0)).toISOString().slice(0, 10) };
  // Each with its checkpoint, which a `cbp load` process pays when it closes the store: the load's own is not the refresh's.
  const [, loadMs] = await timed(async () => { await loadReport(store, file, { kind: 'mid_report', window }); await store.run('CHECKPOINT'); });
  const [, refreshMs] = await timed(() => refreshRatios(store, other));
  row(`load of one month's MID report, refresh included / the load alone (each checkpointed), ${MIDS} MIDs`, `${((loadMs + refreshMs) / loadMs).toFixed(2)}x (${secs(loadMs)} + ${secs(refreshMs)})`, '≤ 1.5x');
  const [, countMs] = await timed(() => store.all('SELECT count(*) FROM mart_ratios'));
  row('SELECT count(*) FROM mart_ratios', secs(countMs), '≤ 0.3 s');
  // The ratio and alert path's size: its files (docs/ratios.md "Where it lives").
  const files = [
    ...['40_ratios', '41_ratio_quality', '42_ratio_mart', '43_ratio_judge', '44_ratio_explain', '45_ratio_notices'].map((f) => `sql/views/${f}.sql`),
    'sql/migrations/021_ratio_rules.sql', 'sql/migrations/022_ratio_judge.sql',
    ...['thresholds', 'rule-set', 'rule-table', 'headroom', 'fees', 'regions'].map((f) => `rules/${f}.ts`),
    ...['engine', 'notices', 'judged-month', 'notice-text', 'refresh'].map((f) => `alerts/${f}.ts`),
    ...['ratio-refresh', 'ratio-inputs', 'ratio-rules', 'ratio-mart', 'judged-months', 'source-marks', 'alert-record', 'alert-states'].map((f) => `store/${f}.ts`),
    'contract/rule-tables.ts', 'cli/kept-table.ts', 'cli/after-write.ts',
  ];
  const counts = files.map((f) => [f, fs.readFileSync(path.join(PACKAGE_ROOT, f), 'utf8').replace(/\n$/, '').split('\n').length] as const);
  const total = counts.reduce((a, [, n]) => a + n, 0);
  const biggest = counts.reduce((a, b) => (b[1] > a[1] ? b : a));
  row(`the ratio and alert path, ${files.length} files`, `${total} lines, largest ${biggest[0]} ${biggest[1]}`, '≤ 3,000 lines, no file over 400');
  console.log(`\nside by side, measured | goal (peak RSS ${rssMiB()} MiB):`);
  for (const [l, m, g] of lines) console.log(`  ${l.padEnd(62)} ${m} | ${g}`);
} finally {
  store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
