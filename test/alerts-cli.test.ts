// cbp alerts as an operator runs it: each notice's delivery state and last delivery error (secrets redacted),
// and `cbp alerts evaluate` republishing the snapshot the listing (and every analyst) reads.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateAlerts } from '../alerts/engine.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { loadRules } from '../rules/thresholds.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';
import { cbpHere } from './helpers/cbp-cli.ts';

const TOKEN = 'Zq81TokenOfTheHook0042';
const SLACK = `https://hooks.slack.example/services/T0AB12CD3/B0EF45GH6/${TOKEN}`;
let dir = '';
let base: NodeJS.ProcessEnv;
let snapshot = '';

/** cbp ARGS with exactly the environment env (test/helpers/cbp-cli.ts: in this process). */
function cbp(env: NodeJS.ProcessEnv, ...args: string[]) {
  return cbpHere(args, dir, env as Record<string, string>);
}

beforeAll(async () => {
  const t = await tempStore();
  dir = t.dir;
  snapshot = path.join(dir, 'published', 'cbp.duckdb');
  await insertStats(t.store, [
    { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
    { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 },
    { mid: 'm2', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
    { mid: 'm2', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 },
    // Only an evaluation as of April sees this one.
    { mid: 'm3', network: 'discover', month: '2026-02', cb: 1, tx: 5_000 },
    { mid: 'm3', network: 'discover', month: '2026-03', cb: 150, tx: 5_000 },
  ]);
  await evaluateAlerts(t.store, { asOf: '2026-02-05T00:00:00Z', rules: loadRules(), now: new Date('2026-02-05T00:00:00Z') });
  // m1's Slack delivery failed three times; its error was stored by a version that did not redact the echo.
  await t.store.run(
    `INSERT INTO alert_outbox (notice_id, notifier, status, attempts, last_error, next_attempt_at, sent_at, created_at)
     SELECT notice_id, 'slack', 'pending', 3, $err, '2026-02-05 01:00:00'::TIMESTAMP, NULL, '2026-02-05 00:00:00'::TIMESTAMP FROM alerts WHERE mid = 'm1'`,
    { err: `slack: hooks.slack.example answered 500: no_service: /services/T0AB12CD3/B0EF45GH6/${TOKEN} [CBP_ERR_NOTIFY_RETRYABLE]` },
  );
  await publishSnapshot(t.store, { snapshotPath: snapshot });
  t.store.close();
  base = { PATH: process.env.PATH, HOME: process.env.HOME, CBP_DB_PATH: t.dbPath, CBP_SNAPSHOT_PATH: snapshot, CBP_LOG_LEVEL: 'warn' };
}, 60_000);
afterAll(() => cleanup(undefined, dir));

describe('cbp alerts', () => {
  it("shows each notice's delivery state and its last delivery error, with the secrets redacted", async () => {
    const env = { ...base, CBP_SLACK_WEBHOOK_URL: SLACK };
    const json = await cbp(env, 'alerts', '--json');
    expect(json.code, json.stderr).toBe(0);
    const rows = JSON.parse(json.stdout) as Array<Record<string, any>>;
    const m1 = rows.find((r) => r.mid === 'm1')!;
    expect(m1).toMatchObject({ kind: 'reached', notify: true, delivery_state: 'retrying' });
    expect(m1.deliveries).toEqual([
      { notifier: 'slack', status: 'pending', attempts: 3, last_error: expect.stringContaining('answered 500: no_service: [REDACTED]'), next_attempt_at: '2026-02-05T01:00:00Z', sent_at: null },
    ]);
    expect(rows.find((r) => r.mid === 'm2')).toMatchObject({ delivery_state: 'unsent', deliveries: [] });
    const human = await cbp(env, 'alerts');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('[slack: retrying (3 attempts), next 2026-02-05T01:00:00Z]');
    expect(human.stdout).toContain('last error (slack): slack: hooks.slack.example answered 500: no_service: [REDACTED]');
    expect(human.stdout).toMatch(/m2 mastercard ecp ecm \[not sent to anyone\]/);
    for (const out of [json.stdout, human.stdout]) {
      expect(out).not.toContain(TOKEN);
      expect(out).not.toContain('T0AB12CD3');
    }
  });

  it('says a notice to deliver went nowhere when no notifier is configured', async () => {
    const human = await cbp(base, 'alerts', '--mid', 'm2');
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain('[not sent to anyone: no notifier is configured]');
  });
});

describe('cbp alerts evaluate', () => {
  it('republishes the snapshot, so the listing shows the new notices, and warns that nobody will be told', async () => {
    const before = JSON.parse((await cbp(base, 'alerts', '--json')).stdout) as Array<Record<string, unknown>>;
    expect(before.some((r) => r.mid === 'm3')).toBe(false);
    const ev = await cbp(base, 'alerts', 'evaluate', '--as-of', '2026-04-05T00:00:00Z', '--json');
    expect(ev.code, ev.stderr).toBe(0);
    const r = JSON.parse(ev.stdout) as Record<string, unknown>;
    expect(r).toMatchObject({ noticesQueued: 1, snapshot });
    expect(existsSync(snapshot)).toBe(true);
    expect(r.warning).toMatch(/no alert notifier is configured, so nobody will be told: set CBP_ALERT_WEBHOOK_URL, CBP_SLACK_WEBHOOK_URL, or CBP_SMTP_URL with CBP_ALERT_EMAIL_TO/);
    expect(ev.stderr).toContain('nobody will be told');
    const after = JSON.parse((await cbp(base, 'alerts', '--json')).stdout) as Array<Record<string, unknown>>;
    expect(after.find((x) => x.mid === 'm3')).toMatchObject({ kind: 'reached', month: '2026-03', notify: true, delivery_state: 'unsent' });
  });
});
