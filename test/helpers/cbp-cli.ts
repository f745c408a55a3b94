// The cbp command as a child process (the build when it is current, else the sources through tsx), its output and exit code.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CbpRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** DuckDB threads of the suite's stores (CBP_STORE_THREADS): two files run at once on two cores. */
export const TEST_STORE_THREADS = '1';

/** This process's environment without its cbp and Temporal settings but the suite's threads: what a spawned cbp starts from in most tests. */
export function cleanEnv(): Record<string, string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CBP_|TEMPORAL_)/.test(k))) as Record<string, string>;
  return { ...env, CBP_STORE_THREADS: TEST_STORE_THREADS };
}

/** Runs `cbp ARGS` in cwd with this process's environment plus env. */
export function runCbp(args: string[], o: { cwd: string; env?: Record<string, string> }): Promise<CbpRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cbpEntry(), ...args], { cwd: o.cwd, env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** What the build is made by, beside the sources. */
const BUILD_INPUTS = ['scripts/build.mjs', 'tsconfig.json', 'tsconfig.build.json', 'bin/cbp.js', 'package.json'];
const RUNTIME = ['activities', 'alerts', 'cli', 'client', 'contract', 'lib', 'report', 'rules', 'sandbox', 'store', 'webhook', 'worker', 'workflows', 'sql'];

/**
 * The CLI's entry the tests spawn: the built one (bin/cbp.js, dist/) when it is newer than every source it is built
 * from (npm ci builds it), else the sources through tsx (bin/cbp-dev.js), so no test runs code older than the tree.
 */
export function cbpEntry(): string {
  return (entry ??= currentEntry());
}
let entry: string | undefined;

function currentEntry(): string {
  const built = path.join(ROOT, 'dist', 'cli', 'index.js');
  if (!existsSync(built)) return path.join(ROOT, 'bin', 'cbp-dev.js');
  const at = statSync(built).mtimeMs;
  const newer = (dir: string): boolean => readdirSync(dir, { withFileTypes: true }).some((e) =>
    e.isDirectory() ? newer(path.join(dir, e.name)) : /\.(ts|sql|json)$/.test(e.name) && statSync(path.join(dir, e.name)).mtimeMs > at);
  const stale = RUNTIME.some((d) => existsSync(path.join(ROOT, d)) && newer(path.join(ROOT, d)))
    || BUILD_INPUTS.some((f) => statSync(path.join(ROOT, f)).mtimeMs > at);
  return stale ? path.join(ROOT, 'bin', 'cbp-dev.js') : path.join(ROOT, 'bin', 'cbp.js');
}
