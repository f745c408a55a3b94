// `cbp run <step>`, `cbp worker` and `cbp schedule` through their real boundary (a child process): argument
// handling, configuration errors naming every missing setting, a clear failure when no Temporal server
// answers, and the local runner's steps end to end against a sandbox.
import fs from 'node:fs';
import path from 'node:path';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import { CommanderError, type Command } from 'commander';
import { buildProgram, exitCodeFor } from '../cli/index.ts';
import { describeError } from '../lib/errors.ts';
import { cbp, rmrf, sandbox, tempDir } from './activities-fixtures.ts';

const NO_TEMPORAL = { TEMPORAL_ADDRESS: '127.0.0.1:1' };

/** The cbp program in this process: exit code as the CLI maps it, and what it wrote. */
async function inProcess(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const program = await buildProgram(['node', 'cbp', ...args]);
  let out = '';
  let err = '';
  const walk = (c: Command) => {
    c.configureOutput({ writeOut: (t) => (out += t), writeErr: (t) => (err += t) });
    c.commands.forEach(walk);
  };
  walk(program);
  try {
    await program.parseAsync(['node', 'cbp', ...args]);
    return { code: 0, out, err };
  } catch (e) {
    return { code: exitCodeFor(e), out, err: e instanceof CommanderError ? err : `${err}${describeError(e)}` };
  }
}

describe('cbp run / worker / schedule: arguments and configuration', { timeout: 60_000 }, () => {
  it('run nightly without settings exits 2 and names every missing one', async () => {
    const r = await cbp(['run', 'nightly']);
    expect(r.code).toBe(2);
    for (const env of ['CBP_REPORTING_BASE_URL', 'CBP_REPORTING_KEY', 'CBP_COMPANY_TOKEN', 'CBP_EVENTS_BASE_URL', 'CBP_AUTH_BASE_URL', 'CBP_API_SECRET']) {
      expect(r.stderr).toContain(env);
    }
  });

  it('worker fails with exit 1 naming TEMPORAL_ADDRESS when no server answers, and the process ends', async () => {
    const r = await cbp(['worker', '--connect-timeout', '1500'], NO_TEMPORAL);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('TEMPORAL_ADDRESS');
    expect(r.stderr).toContain('127.0.0.1:1');
    expect(r.stderr).toContain('CBP_ERR_TEMPORAL_UNAVAILABLE');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('run subscriptions without settings names the webhook credentials, url and e-mail too', async () => {
    const saved = snapshotEnv();
    try {
      const r = await inProcess(['run', 'subscriptions']);
      expect(r.code).toBe(2);
      for (const env of ['CBP_WEBHOOK_USERNAME', 'CBP_WEBHOOK_PASSWORD', 'CBP_WEBHOOK_PUBLIC_URL', 'CBP_SUBSCRIPTION_EMAIL', 'CBP_API_SECRET']) expect(r.err).toContain(env);
    } finally {
      restoreEnv(saved);
    }
  });

  it('run subscriptions with --webhook-url and --email does not ask for the settings they stand in for', async () => {
    const saved = snapshotEnv();
    try {
      const r = await inProcess(['run', 'subscriptions', '--webhook-url', 'https://hooks.example.com/events', '--email', 'ops@example.com']);
      expect(r.code).toBe(2);
      for (const env of ['CBP_WEBHOOK_USERNAME', 'CBP_WEBHOOK_PASSWORD', 'CBP_API_SECRET']) expect(r.err).toContain(env);
      for (const env of ['CBP_WEBHOOK_PUBLIC_URL', 'CBP_SUBSCRIPTION_EMAIL']) expect(r.err).not.toContain(env);
    } finally {
      restoreEnv(saved);
    }
  });

  it('refuses bad arguments with exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['run', 'backfill', '--to', '2026-01-01'], /--from/],
      [['run', 'backfill', '--from', '2026-02-01', '--to', '2026-01-01'], /after/],
      [['run', 'backfill', '--from', '2026-01-01', '--to', '2026-01-31', '--kinds', 'chargebacks,refunds'], /refunds/],
      [['run', 'nightly', '--window-days', 'zero'], /--window-days/],
      [['run', 'nightly', '--as-of', 'yesterday-ish'], /--as-of/],
      [['run', 'orders'], /--source/],
      [['schedule', 'backfill', '--from', '2026-01-01', '--to', '2026-01-31', '--kinds', 'chargebacks'], /--workflow/],
      [['schedule', 'backfill', '--from', '01/01/2026', '--to', '2026-01-31'], /YYYY-MM-DD/],
    ];
    for (const [args, msg] of cases) {
      const r = await inProcess(args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.err).toMatch(msg);
    }
  });

  it('refuses impossible dates and trailing text in date options with exit 2, before any setting is needed', async () => {
    const saved = snapshotEnv();
    try {
      const cases: Array<[string[], RegExp]> = [
        [['run', 'backfill', '--from', '2026-02-30', '--to', '2026-03-01'], /--from must be a date YYYY-MM-DD \(UTC\), got "2026-02-30"/],
        [['run', 'backfill', '--from', '2026-01-01x', '--to', '2026-01-02'], /--from must be a date YYYY-MM-DD/],
        [['run', 'nightly', '--as-of', '2026-13-01'], /--as-of must be an ISO 8601 date or date-time in UTC/],
        [['schedule', 'backfill', '--from', '2026-01-01', '--to', '2026-02-29'], /--to must be a date YYYY-MM-DD/],
        [['status', '--as-of', '2026-04-31'], /--as-of must be an ISO 8601 date/],
        [['sandbox', '--start', 'soon'], /--start must be an ISO 8601 date/],
        [['demo', '--start', '2025-12-32'], /--start must be an ISO 8601 date/],
      ];
      for (const [args, msg] of cases) {
        const r = await inProcess(args);
        expect({ args, code: r.code }).toEqual({ args, code: 2 });
        expect(r.err).toMatch(msg);
      }
    } finally {
      restoreEnv(saved);
    }
  });

  it('run orders names a missing --source file (exit 1) without creating the store', async () => {
    const saved = snapshotEnv();
    const dir = tempDir();
    try {
      Object.assign(process.env, { CBP_DATA_BASE_URL: 'http://127.0.0.1:9/stage', CBP_DATA_USERNAME: 'u', CBP_DATA_PASSWORD: 'pw-1234', CBP_DB_PATH: path.join(dir, 'cbp.duckdb') });
      const r = await inProcess(['run', 'orders', '--source', path.join(dir, 'no-such-orders.ndjson')]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/order file .*no-such-orders\.ndjson does not exist: give the NDJSON or CSV file of orders with --source/);
      expect(fs.existsSync(path.join(dir, 'cbp.duckdb'))).toBe(false);
    } finally {
      restoreEnv(saved);
      rmrf(dir);
    }
  });

  it('every new command has --help', async () => {
    for (const c of [['run', 'nightly'], ['run', 'backfill'], ['run', 'subscriptions'], ['run', 'orders'], ['worker'], ['schedule', 'apply'], ['schedule', 'backfill'], ['status'], ['demo']]) {
      const r = await inProcess([...c, '--help']);
      expect(r.code).toBe(0);
      expect(r.out).toContain('Usage: cbp');
    }
  });

  it('schedule apply and schedule backfill (schedule or workflow) fail with exit 1 naming TEMPORAL_ADDRESS', async () => {
    const saved = snapshotEnv();
    process.env.TEMPORAL_ADDRESS = NO_TEMPORAL.TEMPORAL_ADDRESS;
    try {
      for (const args of [
        ['schedule', 'apply', '--connect-timeout', '1000'],
        ['schedule', 'backfill', '--from', '2026-01-01', '--to', '2026-01-31', '--connect-timeout', '1000'],
        ['schedule', 'backfill', '--workflow', '--from', '2026-01-01', '--to', '2026-01-31', '--connect-timeout', '1000'],
      ]) {
        const r = await inProcess(args);
        expect(r.code).toBe(1);
        expect(r.err).toContain('TEMPORAL_ADDRESS');
        expect(r.err).toContain('127.0.0.1:1');
      }
    } finally {
      restoreEnv(saved);
    }
  });
});

/** The in-process runs read process.env: only cbp's own settings are cleared, and put back after. */
function snapshotEnv(): Record<string, string | undefined> {
  const saved: Record<string, string | undefined> = {};
  for (const k of Object.keys(process.env)) if (/^(CBP_|TEMPORAL_)/.test(k)) {
    saved[k] = process.env[k];
    delete process.env[k];
  }
  return saved;
}

function restoreEnv(saved: Record<string, string | undefined>): void {
  for (const k of Object.keys(process.env)) if (/^(CBP_|TEMPORAL_)/.test(k)) delete process.env[k];
  for (const [k, v] of Object.entries(saved)) if (v !== undefined) process.env[k] = v;
}

describe('cbp run against the sandbox', { timeout: 180_000 }, () => {
  let sb: RunningSandbox;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sb = await sandbox();
    dir = tempDir();
    env = {
      ...sandboxEnv(sb, dir),
      CBP_LOG_LEVEL: 'error',
    };
  });
  afterAll(async () => {
    await sb?.close();
    rmrf(dir);
  });

  it('runs backfill, nightly and orders in-process and prints their summaries', async () => {
    const bf = await cbp(['run', 'backfill', '--from', '2025-11-01', '--to', '2025-12-31', '--window-days', '31', '--json'], env);
    expect(bf.code).toBe(0);
    const b = JSON.parse(bf.stdout) as { status: string; loaded: number; planned: number; records: number };
    expect(b).toMatchObject({ status: 'done' });
    expect(b.loaded).toBe(b.planned);
    expect(b.records).toBeGreaterThan(0);

    const n = await cbp(['run', 'nightly', '--as-of', '2026-01-01T00:00:00Z', '--lookback-days', '14'], env);
    expect(n.code).toBe(0);
    expect(n.stdout).toMatch(/nightly .*: ok/);
    expect(n.stdout).toMatch(/report windows\s+\|\s+\d+/);

    const orders = path.join(dir, 'orders.ndjson');
    fs.writeFileSync(orders, `${JSON.stringify({ order_id: 'CLI-1', order_date: '2025-12-01T00:00:00Z', order_total: '5.00' })}\n`);
    const o = await cbp(['run', 'orders', '--source', orders, '--json'], env);
    expect(o.code).toBe(0);
    expect(JSON.parse(o.stdout)).toMatchObject({ status: 'done', new: 1 });

    const st = await cbp(['status', '--json'], env);
    expect(st.code).toBe(0);
    const s = JSON.parse(st.stdout) as { source: string; runs: Array<{ workflow: string; status: string }> };
    expect(s.source).toBe('store');
    expect(s.runs.map((r) => r.workflow).sort()).toEqual(['backfill', 'nightly', 'pushOrders']);
    expect(s.runs.every((r) => r.status === 'ok')).toBe(true);
  });
});
