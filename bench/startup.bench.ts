// Start-up of the cbp command: `cbp --version` and `cbp --help` from the build (bin/cbp.js, dist/) beside a bare
// `node -e 0`, the same commands from the sources through tsx (bin/cbp-dev.js), and a start
// that loads the heavy packages the commands load only in their actions (DuckDB, Temporal, fastify, undici,
// nodemailer): what every start would cost without those lazy imports. Builds first (scripts/build.mjs), so it
// measures the sources as they are. Median and fastest of BENCH_STARTUP_RUNS (default 15) runs each, run in
// turn so a busy moment of the machine spreads over all of them; nothing here is a pass/fail limit (the last line
// says whether `cbp --version` is within its goal, twice `node -e 0`).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 15);
const DIST = path.join(ROOT, 'dist');

const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
if (build.status !== 0) {
  console.error('startup bench: the build failed');
  process.exit(1);
}

const heavy = ['store/db.js', 'store/analyst.js', 'activities/index.js', 'worker/worker.js', 'webhook/server.js', 'sandbox/server.js', 'alerts/notifiers/index.js']
  .map((f) => JSON.stringify(pathToFileURL(path.join(DIST, f)).href));

const cases: Array<{ name: string; args: string[] }> = [
  { name: 'node -e 0', args: ['-e', '0'] },
  { name: 'cbp --version (built)', args: [path.join(ROOT, 'bin', 'cbp.js'), '--version'] },
  { name: 'cbp --help (built)', args: [path.join(ROOT, 'bin', 'cbp.js'), '--help'] },
  { name: 'cbp --version (sources, tsx)', args: [path.join(ROOT, 'bin', 'cbp-dev.js'), '--version'] },
  { name: 'cbp --help (sources, tsx)', args: [path.join(ROOT, 'bin', 'cbp-dev.js'), '--help'] },
  {
    name: 'built CLI + every heavy module',
    args: ['--input-type=module', '-e', `await import(${JSON.stringify(pathToFileURL(path.join(DIST, 'cli', 'index.js')).href)}); for (const m of [${heavy.join(', ')}]) await import(m);`],
  },
];

// An empty environment for cbp's settings and an empty working folder: a developer's .env changes nothing.
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CBP_|TEMPORAL_)/.test(k)));
const times = cases.map(() => [] as number[]);
for (const c of cases) spawnSync(process.execPath, c.args, { cwd: DIST, env, stdio: 'ignore' }); // warm the file cache
for (let i = 0; i < RUNS; i++) {
  cases.forEach((c, j) => {
    const t0 = process.hrtime.bigint();
    const r = spawnSync(process.execPath, c.args, { cwd: DIST, env, stdio: ['ignore', 'ignore', 'pipe'] });
    times[j].push(Number(process.hrtime.bigint() - t0) / 1e6);
    if (r.status !== 0) {
      console.error(`${c.name}: exit ${r.status}\n${r.stderr}`);
      process.exit(1);
    }
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const base = median(times[0]);
const width = Math.max(...cases.map((c) => c.name.length));
console.log(`start-up, ${RUNS} runs each (node ${process.version}):`);
console.log(`  ${'command'.padEnd(width)}  median ms  fastest ms  over node -e 0  × node -e 0`);
cases.forEach((c, j) => {
  const m = median(times[j]);
  console.log(
    `  ${c.name.padEnd(width)}  ${m.toFixed(0).padStart(9)}  ${Math.min(...times[j]).toFixed(0).padStart(10)}  ${(j ? `+${(m - base).toFixed(0)}` : '').padStart(14)}  ${(m / base).toFixed(2).padStart(11)}`,
  );
});
const builtVersion = median(times[1]);
console.log(`cbp --version: built ${builtVersion.toFixed(0)} ms, from the sources through tsx ${median(times[3]).toFixed(0)} ms (${(median(times[3]) / builtVersion).toFixed(2)}×)`);
// The goal (issue #29): the built `cbp --version` within twice a bare `node -e 0` (it loads commander and package.json only).
const ratio = builtVersion / base;
console.log(`cbp --version (built) ÷ node -e 0: ${ratio.toFixed(2)}× (goal ≤ 2.00×: ${ratio <= 2 ? 'met' : 'NOT met'})`);
