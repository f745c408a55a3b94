// Alerts with nowhere to go: a nightly whose alerts fire with no notifier configured says that nobody will be
// told, and what to set, in its result (printed by the run summary) and in a warn log line.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { evaluateAfterLoad } from '../alerts/engine.ts';
import { createActivities } from '../activities/index.ts';
import type { ServiceClients } from '../client/index.ts';
import { humanNightly } from '../cli/pipeline.ts';
import { loadConfig } from '../lib/config.ts';
import { createLogger } from '../lib/log.ts';
import { loadRules } from '../rules/thresholds.ts';
import type { NightlyResult } from '../workflows/nightly.ts';
import { cleanup, insertStats, tempStore } from './ratios-fixtures.ts';

let store: Store;
let dir = '';
const now = new Date('2026-02-10T06:00:00Z');
const SETTINGS = ['CBP_ALERT_WEBHOOK_URL', 'CBP_SLACK_WEBHOOK_URL', 'CBP_SMTP_URL', 'CBP_ALERT_EMAIL_TO'];

beforeAll(async () => {
  ({ store, dir } = await tempStore());
});
afterAll(() => cleanup(store, dir));

function activities() {
  const lines: string[] = [];
  const destination = new Writable({ write(chunk, _enc, cb) { lines.push(String(chunk)); cb(); } });
  const config = loadConfig({ env: { CBP_LOG_LEVEL: 'silent' } });
  const acts = createActivities({ config, store, clients: {} as ServiceClients, logger: createLogger({ level: 'info', destination }), now: () => now });
  return { acts, lines };
}

describe('alerts with no notifier configured', () => {
  it('says nothing while no notice is due', async () => {
    const { acts, lines } = activities();
    expect(await acts.deliverNotices()).toEqual({ sent: 0, failed: 0, notifiers: [], untold: 0 });
    expect(lines).toEqual([]);
  });

  it('says, in the result and a warn line, that nobody will be told and what to set', async () => {
    await insertStats(store, [
      { mid: 'm1', network: 'mastercard', month: '2025-12', cb: 10, tx: 10_000 },
      { mid: 'm1', network: 'mastercard', month: '2026-01', cb: 200, tx: 10_000 },
    ]);
    const { acts, lines } = activities();
    const ratios = await acts.computeRatios({ asOf: '2026-02-10', notify: true });
    expect(ratios.noticesQueued).toBe(1);
    const notices = await acts.deliverNotices();
    expect(notices).toMatchObject({ sent: 0, failed: 0, notifiers: [], untold: 1 });
    expect(notices.warning).toMatch(/^1 alert notice reached nobody: no alert notifier is configured, so nobody will be told/);
    for (const s of SETTINGS) expect(notices.warning).toContain(s);
    const warn = lines.map((l) => JSON.parse(l) as { level: number; msg: string; untold?: number }).find((l) => l.level === 40);
    expect(warn).toMatchObject({ untold: 1, msg: notices.warning });

    // The summary `cbp run nightly` prints.
    const summary = humanNightly({
      runId: 'nightly-test', asOf: '2026-02-10T06:00:00Z', windows: [], serviceTime: null,
      events: { segments: 0, events: 0, duplicates: 0, quarantined: 0, failed: 0 }, enrich: { lookups: 0, failed: 0 },
      ratios, notices, snapshot: { path: '/tmp/snap.duckdb' },
    } as unknown as NightlyResult);
    expect(summary).toMatch(/notices\s*\|\s*1 new, none sent: no notifier is configured/);
    expect(summary).toContain(`WARNING: ${notices.warning}`);
  });

  it('counts as told a notice a notifier sent before it was removed, and not one recorded as history', async () => {
    await store.run(
      `INSERT INTO alert_outbox (notice_id, notifier, status, attempts, last_error, next_attempt_at, sent_at, created_at)
       SELECT notice_id, 'webhook', 'sent', 1, NULL, $t::TIMESTAMP, $t::TIMESTAMP, $t::TIMESTAMP FROM alerts`,
      { t: '2026-02-10 06:00:00' },
    );
    await insertStats(store, [{ mid: 'old', network: 'discover', month: '2025-01', cb: 1, tx: 5_000 }, { mid: 'old', network: 'discover', month: '2025-02', cb: 150, tx: 5_000 }]);
    await evaluateAfterLoad(store, { asOf: '2026-02-10', rules: loadRules(), notify: false, now });
    const { acts, lines } = activities();
    expect(await acts.deliverNotices()).toEqual({ sent: 0, failed: 0, notifiers: [], untold: 0 });
    expect(lines).toEqual([]);
  });
});
