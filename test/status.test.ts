// cbp status: runs, windows loaded and pending for the default lookback, freshest data per kind, journal
// backlog, quarantine per kind and alerts in force — from the store, or from the snapshot while a writer
// holds the store.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import { startReceiver } from '../webhook/index.ts';
import { loadReport } from '../store/load.ts';
import { collectStatus, humanStatus } from '../cli/commands/status.ts';
import { recordRun } from '../store/runs.ts';
import { recentRuns } from '../store/status.ts';
import { openTestStore } from './helpers/store-template.ts';
import type { Config } from '../lib/config.ts';
import { cbp, cbpProcess, configFor, pipelineFor, rmrf, sandbox, tempDir } from './activities-fixtures.ts';

let sb: RunningSandbox;
let dir: string;
let cfg: Config;
const AS_OF = new Date('2026-01-01T06:00:00Z');

beforeAll(async () => {
  sb = await sandbox();
  dir = tempDir();
  cfg = configFor(sb, dir);
  const p = await pipelineFor(cfg);
  try {
    // Six months of MID reports: the built-in scenario's 860100000101 is over Mastercard ECM from 2025-10.
    await p.runner.backfill({ from: '2025-07-01', to: '2025-12-31', kinds: ['mid_report'], windowDays: 7 });
    const bad = path.join(dir, 'bad-chargebacks.json');
    fs.writeFileSync(
      bad,
      JSON.stringify([
        { mid: 'M1', case_number: 'C1', status: 'New', amount: 'ten dollars', currency: 'USD', card_type: 'visa', date_received: '2025-12-01' },
      ]),
    );
    await loadReport(p.store, bad, { kind: 'chargebacks', format: 'json', window: { from: '2025-12-01', to: '2025-12-01' } });
  } finally {
    await p.close();
  }
  // One event through a real receiver; closing seals its segment, which now waits for ingest.
  const auth = { username: 'u-status', password: 'p-status-password-123' };
  const rec = await startReceiver({ ...auth, journalDir: cfg.journalDir, port: 0 });
  const res = await fetch(rec.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}` },
    body: JSON.stringify({ event_guid: 'evt_status_1', event_type: 'chargeback.new', event_timestamp: '2025-12-31T10:00:00Z' }),
  });
  expect(res.status).toBe(200);
  await rec.close();
});
afterAll(async () => {
  await sb?.close();
  rmrf(dir);
});

describe('cbp status', () => {
  it("judges windows by the service's clock as last seen, not this machine's: a sandbox's clock ends where it was", async () => {
    // An hour after the backfill by this machine's clock: the sandbox's clock (2026-01-01) moved on by that hour.
    const local = new Date(Date.now() + 3_600_000);
    const s = await collectStatus(cfg, { localNow: local });
    expect(s.clock.judgedBy).toBe('service');
    expect(s.asOf.slice(0, 10)).toBe('2026-01-01');
    expect(s.clock.offsetSeconds).toBeLessThan(-86_400);
    const byService = await collectStatus(cfg, { now: new Date(s.asOf) });
    expect(s.windows).toEqual(byService.windows);
    expect(humanStatus(s)).toMatch(/^cbp status as of 2026-01-01T\S+ \(the service's clock: [\d.]+ d behind this machine's /);
    // By this machine's clock every window of the last 60 days would be pending.
    const byLocal = await collectStatus(cfg, { now: local });
    expect(byLocal.windows.done).toBe(0);
    expect(s.windows.done).toBeGreaterThan(0);
  });

  it('shows runs, loaded and pending windows, freshest data, journal backlog, quarantine and alerts in force', async () => {
    const s = await collectStatus(cfg, { now: AS_OF });
    expect(s.source).toBe('store');
    expect(s.runs).toEqual([expect.objectContaining({ workflow: 'backfill', status: 'ok' })]);
    // Default lookback 60 days from 2026-01-01: MID months 2025-11 and 2025-12 loaded, 2026-01 and every
    // chargebacks / prevention window pending.
    expect(s.windows.done).toBe(2);
    expect(s.windows.pending).toContainEqual({ kind: 'mid_report', window: '2026-01-01..2026-01-01' });
    expect(s.windows.pending.filter((w) => w.kind === 'chargebacks').length).toBeGreaterThan(5);
    // Covered to the last second of December: the sandbox (clock 2026-01-01) answered after it, so the data is whole.
    expect(s.freshest.find((f) => f.kind === 'mid_report')).toMatchObject({ covered_to: '2025-12-31T23:59:59Z', loads: 6 });
    // The bad chargebacks file was loaded directly (not fetched, not imported by `cbp load`): nothing known covered.
    expect(s.freshest.find((f) => f.kind === 'chargebacks')).toMatchObject({ covered_to: null, loads: 1 });
    // The direct load after the backfill's publish left the snapshot behind.
    expect(s.snapshot).toMatchObject({ exists: true, behind: true });
    expect(s.journal.waiting).toBe(1);
    expect(s.quarantine).toEqual([{ kind: 'chargebacks', rows: 1 }]);
    expect(s.alerts).toContainEqual(expect.objectContaining({ mid: '860100000101', network: 'mastercard', program: 'ecp', month: '2025-12' }));
    // The levels and watch states of the latest month the rules judged (ratio_explanations), levels first.
    expect(s.ratioStates.month).toBe('2025-12');
    expect(s.ratioStates.monthToDate).toBe(false);
    expect(s.ratioStates.rows).toContainEqual(expect.objectContaining({ mid: '860100000101', network: 'mastercard', program: 'ecp', state: 'level', level: 'ecm' }));
    const order = s.ratioStates.rows.map((x) => (x.state === 'level' ? 0 : 1));
    expect(order).toEqual([...order].sort());
    expect(s.ratioStates.level).toBe(s.ratioStates.rows.filter((x) => x.state === 'level').length);
    expect(s.ratioStates.rows.every((x) => x.month === '2025-12' && (x.state === 'level' || x.state === 'watch'))).toBe(true);
    const text = humanStatus(s);
    expect(text).toMatch(/^Levels and watch in 2025-12 \(the latest month evaluated\): [1-9]\d* at a level, \d+ watch$/m);
    expect(text).toMatch(/^ECM +\| 860100000101 \| mastercard +\| ecp +\| hecm +\| 0\.\d\d +\| US\* +\| ratio /m);
    expect(text).toMatch(/^watch +\| /m);
    expect(humanStatus({ ...s, ratioStates: { ...s.ratioStates, monthToDate: true } })).toContain('(the latest month evaluated, MONTH TO DATE)');
    expect(text).toMatch(/2 loaded, \d+ pending/);
    expect(text).toContain('1 sealed segment(s) waiting');
    expect(text).toContain('chargebacks 1');
  });

  it('lists the latest run first when several finish within one second (the times it prints are to the second)', async () => {
    const store = await openTestStore({ dbPath: path.join(tempDir(), 'runs.duckdb') });
    try {
      for (const [id, ms] of [['a', 100], ['c', 900], ['b', 500]] as const) {
        const at = `2026-01-02T03:04:05.${ms}Z`;
        await recordRun(store, { runId: id, workflow: 'pushOrders', status: 'ok', startedAt: at, finishedAt: at, summary: {} });
      }
      expect((await recentRuns(store, 3)).map((r) => r.run_id)).toEqual(['c', 'b', 'a']);
    } finally {
      store.close();
    }
  });

  it('reads the published snapshot, and says so, while a writer holds the store', async () => {
    const writer = await pipelineFor(cfg);
    try {
      const env = { CBP_DB_PATH: cfg.dbPath, CBP_SNAPSHOT_PATH: cfg.snapshotPath, CBP_JOURNAL_DIR: cfg.journalDir, CBP_LOG_LEVEL: 'error' };
      const r = await cbpProcess(['status', '--json', '--as-of', '2026-01-01'], env);
      expect(r.code).toBe(0);
      const s = JSON.parse(r.stdout) as {
        source: string;
        note: string;
        freshest: Array<{ kind: string; covered_to: string }>;
        windows: { done: number };
        snapshot: { behind: boolean | null; generation: number | null };
      };
      expect(s.source).toBe('snapshot');
      expect(s.note).toMatch(/held by a writer/);
      // The snapshot is the backfill's own (published before the run is recorded, so its runs table lags by that run).
      expect(s.freshest.find((f) => f.kind === 'mid_report')?.covered_to).toBe('2025-12-31T23:59:59Z');
      expect(s.windows.done).toBe(2);
      // Whether the snapshot is behind cannot be told while the writer holds the store; its own generation can.
      expect(s.snapshot.behind).toBeNull();
      expect(s.snapshot.generation).toBeGreaterThan(0);
    } finally {
      await writer.close();
    }
  });
});
