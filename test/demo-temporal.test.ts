// `cbp demo --temporal` as a user runs it: a child process that starts a Temporal dev server and a worker, runs
// the story through schedules, prints the same ratio and alert tables as the local demo for the same data, and
// leaves no process behind, on success and on Ctrl-C. Without a `temporal` CLI it says how to get one (exit 2).
// The end-to-end part is skipped, with the reason in its title, on a machine without a `temporal` CLI unless
// CBP_REQUIRE_TEMPORAL=1 (then a missing server fails).
import fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { HOW_TO_GET_TEMPORAL, findTemporalCli } from '../lib/temporal-cli.ts';
import { addDays, utcDay } from '../lib/utc.ts';
import { temporalDemoDays } from '../cli/commands/demo-command.ts';
import { cbp, rmrf, tempDir } from './activities-fixtures.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const cli = findTemporalCli();
const required = process.env.CBP_REQUIRE_TEMPORAL === '1';
const title = cli
  ? `cbp demo --temporal on a real Temporal dev server (${cli})`
  : required
    ? 'cbp demo --temporal (CBP_REQUIRE_TEMPORAL=1, and no temporal CLI was found)'
    : 'cbp demo --temporal (skipped: no temporal CLI on PATH or in .tools/; npm run temporal:install)';

/** `setpriv --pdeathsig` (util-linux): through it the dev server dies with a demo killed by SIGKILL. */
const pdeathsig = process.platform === 'linux' && spawnSync('setpriv', ['--pdeathsig', 'TERM', '--', 'true'], { stdio: 'ignore' }).status === 0;

const dir = tempDir();
afterAll(() => rmrf(dir));


interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** cbp demo ... as a child; `onStdout` may act on the output so far (send it a signal). */
function demo(args: string[], onStdout?: (stdout: string, pid: number) => void): Promise<Run> {
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

/**
 * The ratio and alert tables and the alert webhook's messages. Signatures differ (the secret is new each run).
 * A projection's notice is sent the first night it fires, with that night's figures: under Temporal that is a
 * backfilled night before today, so its figures (days so far, counts) are left out; the rest of it is kept.
 */
function tables(stdout: string): string {
  const from = stdout.indexOf('Chargeback ratios, ');
  const to = stdout.indexOf('Query the published snapshot');
  expect(from).toBeGreaterThan(-1);
  expect(to).toBeGreaterThan(from);
  const lines = stdout.slice(from, to).trim().split('\n');
  const hooks = lines
    .filter((l) => l.startsWith('Alert webhook received'))
    .map((l) => l.replace(/\(signed sha256=[0-9a-f]+…\)/, '(signed)').replace(/(PROJECTION .*: projected to month end from ).*$/, '$1…'))
    .sort();
  return [...lines.filter((l) => !l.startsWith('Alert webhook received')), ...hooks].join('\n');
}

/** `cbp demo --temporal` over a week, sent `signal` once its server and worker run and a workflow is under way. */
async function demoSignalled(dataDir: string, signal: NodeJS.Signals): ReturnType<typeof demo> {
  let sent = false;
  const r = await demo(['--temporal', '--start', addDays(utcDay(new Date().toISOString()), -7), '--data-dir', dataDir], (stdout, pid) => {
    if (!sent && /^\[4\/10\] /m.test(stdout)) {
      sent = true;
      process.kill(pid, signal);
    }
  });
  expect(sent).toBe(true);
  return r;
}

/** Pids of the processes whose command line names `needle` (the demo's folder: its dev server's --db-filename). */
function processesNaming(needle: string): number[] {
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe("cbp demo --temporal's days", () => {
  it('run from the first day of last month to today by default, from --start otherwise', () => {
    expect(temporalDemoDays(undefined, new Date('2026-11-24T08:00:00Z'))).toEqual({ start: '2026-10-01', days: 54 });
    expect(temporalDemoDays(undefined, new Date('2026-01-01T23:59:00Z'))).toEqual({ start: '2025-12-01', days: 31 });
    expect(temporalDemoDays('2026-11-10', new Date('2026-11-24T08:00:00Z'))).toEqual({ start: '2026-11-10', days: 14 });
  });

  it('refuse a start of today or later, more than 366 days back, or a time of day', () => {
    const now = new Date('2026-11-24T08:00:00Z');
    expect(() => temporalDemoDays('2026-11-24', now)).toThrow(/from 1 to 366 days/);
    expect(() => temporalDemoDays('2026-12-01', now)).toThrow(/from 1 to 366 days/);
    expect(() => temporalDemoDays('2025-11-01', now)).toThrow(/from 1 to 366 days/);
    expect(() => temporalDemoDays('2026-11-10T05:00:00Z', now)).toThrow(/--start must be a date YYYY-MM-DD/);
  });
});

describe('cbp demo --temporal without a working temporal CLI', () => {
  it('exits 2 and says how to get one, touching no folder', async () => {
    const dataDir = path.join(dir, 'no-cli');
    // CBP_TEMPORAL_CLI names the binary and nothing else is searched: a path that is not there hides PATH and .tools/.
    const r = await cbp(['demo', '--temporal', '--data-dir', dataDir], { CBP_TEMPORAL_CLI: path.join(dir, 'no-such-temporal') }, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(HOW_TO_GET_TEMPORAL);
    expect(r.stderr).toMatch(/npm run temporal:install.*brew install temporal/s);
    expect(r.stderr).toMatch(/CBP_TEMPORAL_CLI=".*no-such-temporal" is not an executable file/);
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('fails (exit 1) with the server\'s own words when its dev server does not start, and stops what it started', async () => {
    const fake = path.join(dir, 'temporal-that-fails');
    fs.writeFileSync(fake, '#!/bin/sh\necho "listen tcp: address already in use (a stand-in failure)" >&2\nexit 3\n', { mode: 0o755 });
    const dataDir = path.join(dir, 'server-fails');
    const r = await cbp(['demo', '--temporal', '--data-dir', dataDir], { CBP_TEMPORAL_CLI: fake }, dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the Temporal dev server \(.*temporal-that-fails server start-dev .*\) did not start: it exited with 3\n.*a stand-in failure/s);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(processesNaming(dataDir)).toEqual([]);
  });

  it('refuses --days with --temporal (the service lives until today), exit 2', async () => {
    const r = await cbp(['demo', '--temporal', '--days', '10', '--data-dir', path.join(dir, 'days')], {}, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--days does not go with --temporal/);
  });
});

describe.skipIf(!cli && !required)(title, { timeout: 600_000 }, () => {
  it('runs the story through schedules, prints the local demo\'s tables for the same data, and leaves no process behind', async () => {
    if (!cli) throw new Error(`CBP_REQUIRE_TEMPORAL=1 but there is no temporal CLI. ${HOW_TO_GET_TEMPORAL}`);
    // Two weeks of service time up to today (a shorter demo than the default; the same story).
    const today = utcDay(new Date().toISOString());
    const start = addDays(today, -14);
    const dataDir = path.join(dir, 'temporal');
    // The web UI answers at the address the demo prints, while it runs.
    let ui: Promise<number> | undefined;
    // The local runner over the same data (same start, same days) runs beside it: its tables are compared below.
    const [t, local] = await Promise.all([
      demo(['--temporal', '--start', start, '--data-dir', dataDir], (stdout) => {
        const url = /web UI (http:\/\/127\.0\.0\.1:\d+) /.exec(stdout)?.[1];
        if (url && !ui) ui = fetch(url).then((r) => r.status, () => 0);
      }),
      demo(['--start', start, '--days', '14', '--data-dir', path.join(dir, 'local')]),
    ]);
    expect({ code: t.code, stderr: t.stderr.slice(-3000) }).toMatchObject({ code: 0 });
    expect(await ui).toBe(200);
    expect(t.stderr).not.toMatch(/MaxListenersExceeded|\n\s+at /);
    for (let n = 1; n <= 10; n++) expect(t.stdout).toMatch(new RegExp(`^\\[${n}/10\\] `, 'm'));
    expect(t.stdout).toMatch(/\[3\/10\] temporal .* web UI http:\/\/127\.0\.0\.1:\d+ /);
    expect(t.stdout).toMatch(/\[4\/10\] subscriptions .* 8\/8 active · workflow cbp-demo-[0-9a-f]+-subscriptions/);
    // Events as a triggered run of the ingest schedule; history as a schedule backfill, one run per night;
    // the nightly as a triggered run whose asOf is the trigger's time.
    expect(t.stdout).toMatch(/\[7\/10\] ingest +triggered run cbp-demo-[0-9a-f]+-ingest-\S+ of cbp-demo-[0-9a-f]+-ingest: [1-9]\d* events/);
    expect(t.stdout).toMatch(
      new RegExp(`\\[8/10\\] backfill +schedule backfill of cbp-demo-[0-9a-f]+-nightly over the nights ${addDays(today, -2)}..${addDays(today, -1)}: 2 runs, one per night \\(cbp-demo-[0-9a-f]+-nightly-${addDays(today, -2)}T02:30:00Z, cbp-demo-[0-9a-f]+-nightly-${addDays(today, -1)}T02:30:00Z\\)`),
    );
    expect(t.stdout).toMatch(new RegExp(`\\[9/10\\] nightly +triggered run cbp-demo-[0-9a-f]+-nightly-\\S+ as of ${today}T`));
    expect(t.stdout).not.toMatch(/WARNING/);
    expect(t.stdout).toMatch(/The worker and the dev server \(pid \d+\) are stopped, the schedules deleted/);
    // It says it replaced nothing here (a new folder), and which days the service lived, other than the local demo's.
    expect(t.stdout).toContain(`Data folder temporal: new · service time ${start}..${today} (with --temporal it ends today`);
    expect(t.stdout).toContain("the local demo's is 2025-12-01..2026-01-15");
    // The notices the backfilled nights raised and delivered count too: as many queued and sent as the webhook received.
    const received = t.stdout.match(/^Alert webhook received /gm)?.length ?? 0;
    expect(received).toBeGreaterThan(0);
    const queued = new RegExp(`(\\d+) notice\\(s\\) queued, ${received} delivered to the alert webhook \\(over the 3 nightly runs\\)`).exec(t.stdout);
    expect(queued, 'the nightly line names the notices queued and delivered').not.toBeNull();
    // Every delivery was of a notice queued by one of those runs (the count once said 0 after four deliveries).
    expect(Number(queued![1])).toBeGreaterThanOrEqual(received);
    // The closing hint names the Temporal CLI the demo ran (not a bare \`temporal\`, which may not be on PATH).
    const hint = /`(\S+) server start-dev --db-filename (\S+)`/.exec(t.stdout);
    expect(hint && path.resolve(dir, hint[1]!)).toBe(path.resolve(cli!));
    // Nothing left running: the server it named, and any process naming the demo's folder.
    const pid = Number(/dev server .* \(pid (\d+)\)/.exec(t.stdout)![1]);
    expect(alive(pid)).toBe(false);
    expect(processesNaming(dataDir)).toEqual([]);
    // The finished runs stay in the demo folder's temporal.db.
    expect(fs.existsSync(path.join(dataDir, 'temporal.db'))).toBe(true);

    // The local runner over the same data prints the same tables.
    expect({ code: local.code, stderr: local.stderr.slice(-3000) }).toMatchObject({ code: 0 });
    expect(local.stdout).toMatch(new RegExp(`as of ${today}T00:00:00Z \\(the sandbox clock\\)`));
    expect(tables(t.stdout)).toEqual(tables(local.stdout));
    expect(tables(t.stdout)).toMatch(/\(40 rows\)/);
  });

  it('stops the worker and the dev server on Ctrl-C (SIGINT to the demo alone), exit 130', async () => {
    const dataDir = path.join(dir, 'interrupted');
    const r = await demoSignalled(dataDir, 'SIGINT');
    expect({ code: r.code, stderr: r.stderr.slice(-3000) }).toMatchObject({ code: 130 });
    expect(r.stderr).toMatch(/cbp demo: interrupted; everything it started is stopped/);
    const pid = Number(/dev server .* \(pid (\d+)\)/.exec(r.stdout)![1]);
    expect(alive(pid)).toBe(false);
    expect(processesNaming(dataDir)).toEqual([]);
  });

  it.skipIf(!pdeathsig)('takes the dev server with it when killed by SIGKILL (setpriv --pdeathsig; skipped where there is none)', async () => {
    const dataDir = path.join(dir, 'killed');
    const r = await demoSignalled(dataDir, 'SIGKILL');
    expect(r.signal).toBe('SIGKILL');
    const pid = Number(/dev server .* \(pid (\d+)\)/.exec(r.stdout)![1]);
    // The kernel's SIGTERM reaches the server at once; it takes a moment to stop (a hang guard, not a limit).
    for (let i = 0; i < 600 && alive(pid); i++) await new Promise((res) => setTimeout(res, 100));
    expect(alive(pid)).toBe(false);
    expect(processesNaming(dataDir)).toEqual([]);
  });
});
