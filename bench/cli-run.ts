// The CLI run as a user runs it (`npx cbp`: bin/cbp.js over dist/, built from these sources first), a process of its
// own with its standard output going to a file as a redirect takes it: its wall time, peak RSS and output size.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { PACKAGE_ROOT as ROOT } from '../lib/package-root.ts';

export interface CliRun {
  ms: number;
  rssKiB: number;
  stdoutBytes: number;
  /** what failed (exit code and the first line of stderr); null on exit 0 */
  failed: string | null;
}

/** Builds dist/ (npm run build) from these sources, once a bench. */
export function buildCli(): void {
  const build = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  if (build.status !== 0) throw new Error(`npm run build failed: ${String(build.stderr).slice(0, 400)}`);
}

/** Runs `cbp args` on the data folder dir; BENCH_PROF=DIR writes its CPU profile there (label.cpuprofile). */
export function runCli(dir: string, label: string, args: string[], env: Record<string, string> = {}): CliRun {
  const hook = path.join(dir, 'peak-rss.mjs');
  if (!fs.existsSync(hook)) {
    fs.writeFileSync(hook, `import fs from 'node:fs';\nprocess.on('exit', () => { try { fs.writeFileSync(process.env.CBP_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS)); } catch {} });\n`);
  }
  const rssFile = path.join(dir, `${label}.rss`);
  const outFile = path.join(dir, `${label}.out`);
  const prof = process.env.BENCH_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF}`, `--cpu-prof-name=${label}.cpuprofile`] : [];
  const out = fs.openSync(outFile, 'w');
  const s = performance.now();
  let r: ReturnType<typeof spawnSync>;
  try {
    r = spawnSync(process.execPath, [...prof, '--import', hook, path.join(ROOT, 'bin', 'cbp.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, CBP_DATA_DIR: dir, CBP_LOG_LEVEL: 'error', CBP_BENCH_RSS_FILE: rssFile, ...env },
      stdio: ['ignore', out, 'pipe'],
    });
  } finally {
    fs.closeSync(out);
  }
  const ms = performance.now() - s;
  const stdoutBytes = fs.statSync(outFile).size;
  fs.rmSync(outFile);
  const failed = r.status !== 0 ? `FAILED (exit ${r.status ?? r.signal}): ${String(r.stderr).split('\n')[0].slice(0, 160)}` : null;
  return { ms, rssKiB: fs.existsSync(rssFile) ? Number(fs.readFileSync(rssFile, 'utf8')) : NaN, stdoutBytes, failed };
}
