// The cbp command for the tests, its output and exit code: in the test process (cbpHere), or as a child process (the
// build when it is current, else the sources through tsx) for servers and the tests of the process itself.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildStamp, readStamp } from '../../scripts/build-stamp.mjs';

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

/** Runs `cbp ARGS` in cwd with this process's environment plus env: in this process (cbpHere) unless `spawn` or a server command. */
export function runCbp(args: string[], o: { cwd: string; env?: Record<string, string>; spawn?: boolean }): Promise<CbpRun> {
  const env = { ...process.env, ...o.env } as Record<string, string>;
  if (!o.spawn && runsHere(args)) return cbpHere(args, o.cwd, env);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [cbpEntry(), ...args], { cwd: o.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Commands that serve, run a worker or a demo, or start Temporal's runtime: always a process of their own (TEST_CBP_SPAWN=1: every command). */
const OWN_PROCESS = new Set(['demo', 'worker', 'webhook', 'sandbox', 'metrics', 'schedule']);
export const runsHere = (args: string[]) => process.env.TEST_CBP_SPAWN !== '1' && !OWN_PROCESS.has(args.find((a) => !a.startsWith('-')) ?? '') && !args.includes('--help') && !args.some((a) => a === '-V' || a === '--version');

let turn: Promise<unknown> = Promise.resolve();

/**
 * `cbp ARGS` in this process, one at a time: cwd, the environment (exactly `env`), stdout, stderr, the log's
 * destination and the exit code are the command's while it runs, then restored. It saves a cbp start per call; the
 * tests of the process itself (start-up, signals, --help's modules) spawn it.
 */
export function cbpHere(args: string[], cwd: string, env: Record<string, string>): Promise<CbpRun> {
  const run = turn.then(() => hereOnce(args, cwd, env));
  turn = run.catch(() => undefined);
  return run;
}

async function hereOnce(args: string[], cwd: string, env: Record<string, string>): Promise<CbpRun> {
  const [{ main }, { default: pino }, log, threads] = await Promise.all([import('../../cli/index.ts'), import('pino'), import('../../lib/log.ts'), import('../../store/threads.ts')]);
  const saved = {
    env: { ...process.env }, cwd: process.cwd(), exitCode: process.exitCode, out: process.stdout.write, err: process.stderr.write, dest: pino.destination,
    logger: log.log(), secrets: log.secretsKept(), threads: threads.storeThreads(),
  };
  let stdout = '';
  let stderr = '';
  const text = (c: unknown) => (typeof c === 'string' ? c : Buffer.from(c as Uint8Array).toString());
  const capture = (add: (t: string) => void) => ((c: unknown, enc?: unknown, cb?: unknown) => {
    add(text(c));
    const done = typeof enc === 'function' ? enc : cb;
    if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
    return true;
  }) as typeof process.stdout.write;
  const setEnv = (to: Record<string, string | undefined>) => {
    for (const k of Object.keys(process.env)) if (!(k in to)) delete process.env[k];
    for (const [k, v] of Object.entries(to)) if (v !== undefined && process.env[k] !== v) process.env[k] = v;
  };
  try {
    setEnv(env);
    process.chdir(cwd);
    process.exitCode = undefined;
    process.stdout.write = capture((t) => (stdout += t));
    process.stderr.write = capture((t) => (stderr += t));
    (pino as { destination: unknown }).destination = () => ({ write: (t: string) => { stderr += t; return true; } });
    log.setLogger(undefined);
    await main(['node', 'cbp', ...args], { exitAfterFailure: false });
    return { code: Number(process.exitCode ?? 0), stdout, stderr };
  } finally {
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    (pino as { destination: unknown }).destination = saved.dest;
    log.setLogger(saved.logger);
    saved.secrets();
    threads.setStoreThreads(saved.threads);
    process.exitCode = saved.exitCode;
    process.chdir(saved.cwd);
    setEnv(saved.env);
  }
}

/**
 * The CLI's entry the tests spawn: the built one (bin/cbp.js, dist/) while it is current (its stamp is the sources'
 * now: scripts/build-stamp.mjs; npm ci builds it), else the sources through tsx (bin/cbp-dev.js), so no test runs code
 * older than the tree.
 */
export function cbpEntry(): string {
  return (entry ??= currentEntry());
}
let entry: string | undefined;

function currentEntry(): string {
  return readStamp(path.join(ROOT, 'dist')) === buildStamp(ROOT) ? path.join(ROOT, 'bin', 'cbp.js') : path.join(ROOT, 'bin', 'cbp-dev.js');
}
