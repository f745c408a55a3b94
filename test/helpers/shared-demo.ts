// One `cbp demo` for the whole run (a globalSetup of vitest.config.ts), started in the background as the run
// starts: the files that read a demo's output wait for it and copy its folder (sharedDemo, copyDemo) in place
// of running a demo each. Not started when the run's file filters name none of them.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_MARKER } from '../../cli/demo-dir.ts';
import { cbpEntry } from './cbp-cli.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const READERS = ['test/demo.test.ts', 'test/report-browser.test.ts', 'test/lake.test.ts'];
const VAR = 'TEST_SHARED_DEMO_DIR';
/** Left in the demo's folder before it runs: the demo must wipe a folder an earlier demo made (test/demo.test.ts). */
export const STALE_FILE = 'stale-from-an-earlier-run.txt';

export interface SharedDemo {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The demo's --data-dir: read it, never write to it (copyDemo gives a folder of one's own). */
  dataDir: string;
}

export default function setup(): () => Promise<void> {
  const filters = process.argv.slice(3).filter((a) => !a.startsWith('-'));
  if (filters.length > 0 && !READERS.some((f) => filters.some((x) => f.includes(x)))) return async () => {};
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-shared-demo-'));
  const dataDir = path.join(base, 'data', 'demo');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, DEMO_MARKER), 'earlier demo');
  fs.writeFileSync(path.join(dataDir, STALE_FILE), 'x');
  process.env[VAR] = base;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CBP_|TEMPORAL_)/.test(k)));
  const child: ChildProcess = spawn(process.execPath, [cbpEntry(), 'demo', '--data-dir', dataDir], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.on('close', (code) => {
    const result: SharedDemo = { code, stdout, stderr, dataDir };
    fs.writeFileSync(path.join(base, 'result.json.tmp'), JSON.stringify(result));
    fs.renameSync(path.join(base, 'result.json.tmp'), path.join(base, 'result.json'));
    resolve();
  }));
  return async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    fs.rmSync(base, { recursive: true, force: true });
    delete process.env[VAR];
  };
}

/** The run's demo once it has ended (the caller's own timeout bounds the wait). */
export async function sharedDemo(): Promise<SharedDemo> {
  const base = process.env[VAR];
  if (!base) throw new Error(`no shared demo: run the tests through vitest.config.ts (globalSetup ${path.relative(ROOT, fileURLToPath(import.meta.url))})`);
  const file = path.join(base, 'result.json');
  while (!fs.existsSync(file)) await new Promise((r) => setTimeout(r, 200));
  return JSON.parse(fs.readFileSync(file, 'utf8')) as SharedDemo;
}

/** A copy of the demo's folder at `to` (its store, snapshot, journal, landing files and settings); a failed demo throws. */
export async function copyDemo(to: string): Promise<SharedDemo> {
  const demo = await sharedDemo();
  if (demo.code !== 0) throw new Error(`the run's demo failed (exit ${demo.code}):\n${demo.stderr.slice(-4000)}`);
  fs.cpSync(demo.dataDir, to, { recursive: true });
  return demo;
}
