// cbp ratios / cbp alerts as a user runs them: a store on disk, read read-only, JSON out.
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

let dir = '';
let env: NodeJS.ProcessEnv;

function cbp(...args: string[]) {
  const r = spawnSync(process.execPath, [path.resolve('bin/cbp-dev.js'), ...args], { env, encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

beforeAll(async () => {
  const t = await tempStore();
  dir = t.dir;
  await insertStats(t.store, [
    { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 20_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 400, tx: 25_000 },
    { mid: 'm2', network: 'mastercard', month: '2026-01', cb: 400, tx: 25_000 },
  ]);
  await evaluateAlerts(t.store, { asOf: '2026-02-05T00:00:00Z', rules: loadRules() });
  t.store.close();
  env = { PATH: process.env.PATH, HOME: process.env.HOME, CBP_DB_PATH: t.dbPath, CBP_SNAPSHOT_PATH: path.join(dir, 'none.duckdb'), CBP_LOG_LEVEL: 'silent' };
}, 60_000);
afterAll(() => cleanup(undefined, dir));

describe('cbp ratios', () => {
  it('prints rows with mid, network, program, month, numerator, denominator, denominator_month, unrounded ratio and level', () => {
    const r = cbp('ratios', '--month', '2026-01', '--mid', 'm1', '--json');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    const ecp = rows.find((x) => x.program === 'ecp' && x.metric === 'count');
    expect(ecp).toMatchObject({ mid: 'm1', network: 'mastercard', month: '2026-01', numerator: 400, denominator: 20_000, denominator_month: '2025-12', ratio: 0.02, level: 'ecm' });
    const m2 = JSON.parse(cbp('ratios', '--mid', 'm2', '--json').stdout) as Array<Record<string, unknown>>;
    expect(m2.find((x) => x.program === 'ecp' && x.metric === 'count')).toMatchObject({ ratio: null, no_ratio_reason: 'no_previous_month', level: null });
  });

  it('prints a table for people and rejects a bad month with exit code 2', () => {
    const t = cbp('ratios', '--mid', 'm1');
    expect(t.code).toBe(0);
    expect(t.stdout).toContain('ecm');
    const bad = cbp('ratios', '--month', '2026-13');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--month must be YYYY-MM/);
  });
});

describe('cbp alerts', () => {
  it('lists the alert history as JSON', () => {
    const r = cbp('alerts', '--json');
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
    expect(rows.map((x) => [x.mid, x.kind, x.level, x.month])).toEqual([['m1', 'reached', 'ecm', '2026-01']]);
  });
});

describe('cbp ratios / alerts: bad arguments', () => {
  it('refuses an unknown --program, a --limit that is not a whole number and an impossible --as-of with exit 2', () => {
    const cases: Array<[string[], RegExp]> = [
      [['ratios', '--program', 'vampire'], /--program: unknown program "vampire"; expected one of .*vamp/],
      [['alerts', '--limit', 'lots'], /--limit must be a whole number/],
      [['alerts', '--limit', '0'], /--limit must be a whole number of at least 1/],
      [['alerts', 'evaluate', '--as-of', '2026-02-30'], /--as-of must be an ISO 8601 date/],
      [['alerts', 'requeue', '--notifier', 'pager'], /--notifier: unknown notifier "pager"; expected one of webhook, slack, email/],
    ];
    for (const [args, msg] of cases) {
      const r = cbp(...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  it('alerts requeue says how many given-up deliveries it put back, as text or JSON', () => {
    const human = cbp('alerts', 'requeue');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^0 given-up deliveries put back in the queue; send them with cbp alerts deliver/);
    const json = cbp('alerts', 'requeue', '--notifier', 'webhook', '--json');
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ requeued: 0, notifier: 'webhook' });
  });
});

describe('cbp alerts deliver', () => {
  it('evaluates, then sends the pending notice to the configured webhook once', async () => {
    const bodies: string[] = [];
    const srv = http.createServer((req, res) => {
      let b = '';
      req.on('data', (c) => (b += c));
      req.on('end', () => { bodies.push(b); res.end('ok'); });
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}/hook`;
    // The server runs in this process, so the CLI must run without blocking the event loop.
    const run = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const p = spawn(process.execPath, [path.resolve('bin/cbp-dev.js'), ...args], { env: { ...env, CBP_ALERT_WEBHOOK_URL: url, CBP_ALERT_WEBHOOK_SECRET: 'cli-secret-123' } });
        let out = '';
        p.stdout.on('data', (c) => (out += c));
        p.on('close', (code) => resolve({ code, stdout: out }));
      });
    try {
      const ev = await run('alerts', 'evaluate', '--as-of', '2026-02-05T00:00:00Z', '--json');
      expect(ev.code).toBe(0);
      expect(JSON.parse(ev.stdout)).toMatchObject({ alerts: 0, noticesQueued: 0 });
      const d1 = await run('alerts', 'deliver', '--json');
      expect(JSON.parse(d1.stdout)).toMatchObject({ sent: 1, retrying: 0, failed: 0 });
      const d2 = await run('alerts', 'deliver', '--json');
      expect(JSON.parse(d2.stdout)).toMatchObject({ sent: 0 });
      expect(bodies).toHaveLength(1);
      expect(JSON.parse(bodies[0])).toMatchObject({ mid: 'm1', kind: 'reached', level: 'ecm', month: '2026-01' });
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });
});
