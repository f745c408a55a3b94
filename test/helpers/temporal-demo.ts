// `cbp demo --temporal` as a child process, for the tests of it: its output, signals sent to it, what it leaves running.
import fs from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { findTemporalCli } from '../../lib/temporal-cli.ts';
import { addDays, utcDay } from '../../lib/utc.ts';
import { cbpEntry, cleanEnv } from './cbp-cli.ts';

export const cli = findTemporalCli();
export const required = process.env.CBP_REQUIRE_TEMPORAL === '1';
export const title = cli
  ? `cbp demo --temporal on a real Temporal dev server (${cli})`
  : required
    ? 'cbp demo --temporal (CBP_REQUIRE_TEMPORAL=1, and no temporal CLI was found)'
    : 'cbp demo --temporal (skipped: no temporal CLI on PATH or in .tools/; npm run temporal:install)';

/** `setpriv --pdeathsig` (util-linux): through it the dev server dies with a demo killed by SIGKILL. */
export const pdeathsig = process.platform === 'linux' && spawnSync('setpriv', ['--pdeathsig', 'TERM', '--', 'true'], { stdio: 'ignore' }).status === 0;

export interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** cbp demo ... as a child in dir; `onStdout` may act on the output so far (send it a signal). */
export function demo(dir: string, args: string[], onStdout?: (stdout: string, pid: number) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The kill timer only stops a hung child from hanging the suite; no assertion depends on time.
    const child = spawn(process.execPath, [cbpEntry(), 'demo', ...args], { cwd: dir, env: cleanEnv(), timeout: 590_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      onStdout?.(stdout, child.pid!);
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** `cbp demo --temporal` over a week, sent `signal` once its server and worker run and a workflow is under way. */
export async function demoSignalled(dir: string, dataDir: string, signal: NodeJS.Signals): ReturnType<typeof demo> {
  let sent = false;
  const r = await demo(dir, ['--temporal', '--start', addDays(utcDay(new Date().toISOString()), -7), '--data-dir', dataDir], (stdout, pid) => {
    if (!sent && /^\[4\/10\] /m.test(stdout)) {
      sent = true;
      process.kill(pid, signal);
    }
  });
  expect(sent).toBe(true);
  return r;
}

/** Pids of the processes whose command line names `needle` (the demo's folder: its dev server's --db-filename). */
export function processesNaming(needle: string): number[] {
  const out: number[] = [];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').includes(needle)) out.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
