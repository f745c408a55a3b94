// `cbp demo --temporal` as a user runs it: a child process that starts a Temporal dev server and a worker, runs
// the story through schedules, prints the same ratio and alert tables as the local demo for the same data, and
// leaves no process behind (signals and failures: demo-temporal-signals.test.ts). Where a lake can run it is
// `cbp demo --lake`: the same Temporal story on a lake of its own PostgreSQL, with two workers as on two hosts. The
// end-to-end part is skipped, with the reason in its title, on a machine without a `temporal` CLI unless
// CBP_REQUIRE_TEMPORAL=1.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOW_TO_GET_TEMPORAL } from '../lib/temporal-cli.ts';
import { addDays, utcDay } from '../lib/utc.ts';
import { temporalDemoDays } from '../cli/commands/demo-command.ts';
import { rmrf, tempDir } from './activities-fixtures.ts';
import { skipLake } from './helpers/postgres.ts';
import { alive, cli, demo as demoIn, processesNaming, required, title } from './helpers/temporal-demo.ts';

const dir = tempDir();
afterAll(() => rmrf(dir));
const demo = (args: string[], onStdout?: Parameters<typeof demoIn>[2]) => demoIn(dir, args, onStdout);

/**
 * The ratio and alert tables and the alert webhook's messages. Signatures differ (the secret is new each run).
 * A projection's notice is sent the first night it fires, with that night's figures: under Temporal that is a
 * backfilled night before today, so its figures (days so far, counts) are left out; the rest of it is kept.
 */
function tables(stdout: string): string[] {
  const from = stdout.indexOf('Chargeback ratios, ');
  // What follows the tables: the file's snapshot, or the lake's own lines.
  const to = stdout.search(/^(Query the published snapshot|The store is the lake)/m);
  expect(from).toBeGreaterThan(-1);
  expect(to).toBeGreaterThan(from);
  const lines = stdout.slice(from, to).trim().split('\n');
  const hooks = lines
    .filter((l) => l.startsWith('Alert webhook received'))
    .map((l) => l.replace(/\(signed sha256=[0-9a-f]+…\)/, '(signed)').replace(/(PROJECTION .*: projected to month end from ).*$/, '$1…'))
    .sort();
  return [...lines.filter((l) => !l.startsWith('Alert webhook received')), ...hooks];
}

/**
 * Temporal's lines without the projections of the open month that only a backfilled night raised: early in a month
 * one night's few days can project a level that today's days no longer do, and the local run evaluates today alone.
 */
function withoutEarlierProjections(temporal: string[], local: string[], month: string): string[] {
  return temporal.filter((l) => local.includes(l) || !l.includes(`: PROJECTION — at the current run rate ${month} would end`));
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

/** On a lake where one can run (CBP_REQUIRE_LAKE=1 makes a missing one a failure), else on a DuckDB file. */
const lake = !skipLake;

describe.skipIf(!cli && !required)(`${title}${lake ? ', with --lake' : ''}`, { timeout: 600_000 }, () => {
  it(`runs the story through schedules${lake ? ' on a lake with two workers as on two hosts' : ''}, prints the local demo's tables for the same data, and leaves no process behind`, async () => {
    if (!cli) throw new Error(`CBP_REQUIRE_TEMPORAL=1 but there is no temporal CLI. ${HOW_TO_GET_TEMPORAL}`);
    // A week of service time up to today (a shorter demo than the default; the same story).
    const today = utcDay(new Date().toISOString());
    const start = addDays(today, -7);
    const dataDir = path.join(dir, 'temporal');
    // The web UI answers at the address the demo prints, while it runs.
    let ui: Promise<number> | undefined;
    // The local runner over the same data (same start, same days) runs beside it: its tables are compared below.
    const [t, local] = await Promise.all([
      demo([lake ? '--lake' : '--temporal', '--start', start, '--data-dir', dataDir], (stdout) => {
        const url = /web UI (http:\/\/127\.0\.0\.1:\d+) /.exec(stdout)?.[1];
        if (url && !ui) ui = fetch(url).then((r) => r.status, () => 0);
      }),
      demo(['--start', start, '--days', '7', '--data-dir', path.join(dir, 'local')]),
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
    if (lake) {
      expect(t.stdout).toMatch(/two workers in this process as on two hosts of the lake/);
      // Both hosts fetched report windows (each lands what it fetches in its own folder).
      const landed = (d: string) => (fs.existsSync(d) ? fs.readdirSync(d, { recursive: true }).filter((f) => String(f).endsWith('.json') && !String(f).endsWith('.meta.json')).length : 0);
      expect(landed(path.join(dataDir, 'landing'))).toBeGreaterThan(0);
      expect(landed(path.join(dataDir, 'host-b', 'landing'))).toBeGreaterThan(0);
      // Its PostgreSQL is stopped too.
      const port = Number(/\[lake\] PostgreSQL (\d+) \(catalog\)/.exec(t.stdout)?.[1]);
      expect(port).toBeGreaterThan(0);
      const refused = await new Promise<boolean>((resolve) => {
        const sock = net.connect(port, '127.0.0.1', () => { sock.destroy(); resolve(false); });
        sock.once('error', () => resolve(true));
      });
      expect(refused).toBe(true);
    }

    // The local runner over the same data prints the same tables.
    expect({ code: local.code, stderr: local.stderr.slice(-3000) }).toMatchObject({ code: 0 });
    expect(local.stdout).toMatch(new RegExp(`as of ${today}T00:00:00Z \\(the sandbox clock\\)`));
    const [seen, once] = [tables(t.stdout), tables(local.stdout)];
    expect(withoutEarlierProjections(seen, once, today.slice(0, 7))).toEqual(once);
    expect(seen.join('\n')).toMatch(/\(40 rows\)/);
  });
});
