// One `cbp demo` for the whole run (a globalSetup of vitest.config.ts), started in the background as the run
// starts: the files that read a demo's output wait for it and copy its folder (copyDemo) in place
// of running a demo each. Where it did not start one (a run whose file filters seem to name none of those files, or
// another config), copyDemo runs one for the test file itself.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEMO_MARKER } from '../../cli/demo-dir.ts';
import { cbpEntry, cleanEnv } from './cbp-cli.ts';
import { tempDir } from './tmp.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const VAR = 'TEST_SHARED_DEMO_DIR';
/** Left in the demo's folder before it runs: the demo must wipe a folder an earlier demo made (test/demo.test.ts). */
export const STALE_FILE = 'stale-from-an-earlier-run.txt';
/** A hang guard on the wait, not a time budget. */
const WAIT_MS = 540_000;

export interface SharedDemo {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The demo's --data-dir: read it, never write to it (copyDemo gives a folder of one's own). */
  dataDir: string;
}

/** Starts `cbp demo` in data/demo under base; result.json there holds its exit and output once it has ended. */
function startDemo(base: string): { stop: () => Promise<void> } {
  const dataDir = path.join(base, 'data', 'demo');
  fs.mkdirSync(dataDir, { recursive: true });
  fs.writeFileSync(path.join(dataDir, DEMO_MARKER), 'earlier demo');
  fs.writeFileSync(path.join(dataDir, STALE_FILE), 'x');
  const env = cleanEnv();
  const child = spawn(process.execPath, [cbpEntry(), 'demo', '--data-dir', dataDir], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const ended = new Promise<void>((resolve) => {
    const write = (code: number | null) => {
      const result: SharedDemo = { code, stdout, stderr, dataDir };
      fs.writeFileSync(path.join(base, 'result.json.tmp'), JSON.stringify(result));
      fs.renameSync(path.join(base, 'result.json.tmp'), path.join(base, 'result.json'));
      resolve();
    };
    child.on('error', (e) => { stderr += `could not start the demo: ${e.message}`; write(null); });
    child.on('close', (code) => write(code));
  });
  return {
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await ended;
    },
  };
}

/** Whether the run may hold a file that reads the demo: no file filters, or one of them names one (a guess: else each reads its own). */
function runReadsDemo(): boolean {
  const filters = process.argv.slice(3).filter((a) => !a.startsWith('-')).map((a) => path.relative(ROOT, path.resolve(ROOT, a.replace(/:\d+$/, ''))).toLowerCase());
  return filters.length === 0 || READERS.some((f) => filters.some((x) => f.includes(x)));
}
/** The files that copy the run's demo (copyDemo). */
export const READERS = ['test/demo.test.ts', 'test/report-browser.test.ts', 'test/lake.test.ts', 'test/lake-import.test.ts'];

export default function setup(): () => Promise<void> {
  if (!runReadsDemo()) return async () => {};
  const base = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-shared-demo-'));
  process.env[VAR] = base;
  const demo = startDemo(base);
  return async () => {
    await demo.stop();
    fs.rmSync(base, { recursive: true, force: true });
    delete process.env[VAR];
  };
}

let own: string | undefined;

/** The run's demo once it has ended; without the globalSetup, one of this test file's own (a temp folder of the file's). */
async function sharedDemo(): Promise<SharedDemo> {
  let base = process.env[VAR];
  if (!base) {
    if (!own) startDemo((own = tempDir('cbp-own-demo-')));
    base = own;
  }
  const file = path.join(base, 'result.json');
  for (const until = Date.now() + WAIT_MS; !fs.existsSync(file); ) {
    if (Date.now() > until) throw new Error(`the run's demo (${base}) has not ended after ${WAIT_MS / 1000} s`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return JSON.parse(fs.readFileSync(file, 'utf8')) as SharedDemo;
}

/** A copy of the demo's folder at `to` (its store, snapshot, journal, landing files and settings); a failed demo throws. */
export async function copyDemo(to: string): Promise<SharedDemo> {
  const demo = await sharedDemo();
  if (demo.code !== 0) throw new Error(`the run's demo failed (exit ${demo.code}):\n${demo.stderr.slice(-4000)}`);
  fs.cpSync(demo.dataDir, to, { recursive: true });
  return demo;
}
