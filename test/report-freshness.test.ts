// Issue #10, part 1: a report window is done only when its data exists. Against a sandbox whose clock stands
// at 2026-01-01, a backfill of the first half of 2026 loads what there is (nothing yet), records no window as
// done, says so, and `cbp status` reports the data covered up to the service's clock, not to the range's end.
// The sandbox answers with its own clock in `Date`, which is what cbp judges completeness by.
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { collectStatus, humanStatus } from '../cli/commands/status.ts';
import { describeSandbox, humanSandbox } from '../cli/commands/sandbox.ts';
import type { Config } from '../lib/config.ts';
import type { RunningSandbox } from '../sandbox/index.ts';
import { openTestStore } from './helpers/store-template.ts';
import { admin, cbp, configFor, pipelineFor, sandbox, tempDir } from './activities-fixtures.ts';

let sb: RunningSandbox;
let dir: string;
let env: Record<string, string>;
let cfg: Config;

beforeAll(async () => {
  sb = await sandbox({ start: '2026-01-01T00:00:00Z' });
  dir = tempDir();
  env = { ...sandboxEnv(sb, dir), CBP_LOG_LEVEL: 'warn' };
  cfg = configFor(sb, dir);
});
afterAll(async () => {
  await sb?.close();
});

async function doneWindows(): Promise<string[]> {
  const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb'), readOnly: true });
  try {
    return (await store.all<{ id: string }>("SELECT kind || ':' || window_id AS id FROM windows_done ORDER BY 1")).map((r) => r.id);
  } finally {
    store.close();
  }
}

interface BackfillJson {
  status: string;
  planned: number;
  loaded: number;
  skipped: number;
  open: number;
  openWindows: string[];
  serviceTime: string;
  warning?: string;
}

describe('report windows and the service clock', { timeout: 180_000 }, () => {
  it('the sandbox sends its own clock in the Date header, and the reporting client returns it as the service time', async () => {
    const p = await pipelineFor(cfg);
    try {
      const dest = path.join(dir, 'probe', 'cb.json');
      const first = await p.clients.reporting.fetchReport({ kind: 'chargebacks', start: '2025-12-01T00:00:00Z', end: '2025-12-31T23:59:59Z', dest });
      expect(first.serviceTime).toBe('2026-01-01T00:00:00Z');
      const res = await fetch(`${sb.baseUrls.reporting}/chargebacks`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      expect(res.headers.get('date')).toBe('Thu, 01 Jan 2026 00:00:00 GMT');
      await res.arrayBuffer();
    } finally {
      await p.close();
    }
  });

  it('a backfill reaching past the service clock loads its windows but records none as done, warns which and why, and the next run fetches them again', async () => {
    const first = await cbp(['run', 'backfill', '--from', '2026-01-01', '--to', '2026-06-30', '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const r = JSON.parse(first.stdout) as BackfillJson;
    // 26 seven-day windows each for chargebacks and prevention, 6 months of MID report: all still running.
    expect(r).toMatchObject({ status: 'done', planned: 58, loaded: 58, skipped: 0, open: 58, serviceTime: '2026-01-01T00:00:00Z' });
    expect(r.openWindows).toContain('chargebacks:2026-01-01..2026-01-07');
    expect(r.warning).toMatch(/^58 windows reach past the service's clock \(2026-01-01T00:00:00Z\)/);
    // The log says it too (a warn line on stderr).
    expect(first.stderr).toContain("reach past the service's clock");
    expect(await doneWindows()).toEqual([]);

    // Status: data covered up to the service's clock, not up to the range's end; every window still pending.
    const s = await collectStatus(cfg, { now: new Date('2026-01-01T00:00:00Z') });
    for (const f of s.freshest) expect(f.covered_to, f.kind).toBe('2026-01-01T00:00:00Z');
    expect(s.windows.done).toBe(0);
    expect(humanStatus(s)).not.toContain('2026-06-30');

    // The next run, same clock: nothing was skipped, and the summary a person reads says why.
    const again = await cbp(['run', 'backfill', '--from', '2026-01-01', '--to', '2026-06-30'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/windows loaded\s+\|\s*58/);
    expect(again.stdout).toContain("WARNING: 58 windows reach past the service's clock (2026-01-01T00:00:00Z): loaded with the data so far but not recorded as done");
  });

  it('once the service clock has passed a window, the run records it as done and status covers up to that clock', async () => {
    await admin(sb, 'POST', '/clock', { to: '2026-02-01T00:00:00Z' });
    const r = await cbp(['run', 'backfill', '--from', '2026-01-01', '--to', '2026-06-30', '--json'], env);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as BackfillJson;
    // Whole by 2026-02-01: four 7-day windows per rolling kind (to 01-28) and January's MID report.
    expect(out).toMatchObject({ loaded: 58, skipped: 0, open: 49, serviceTime: '2026-02-01T00:00:00Z' });
    expect(await doneWindows()).toEqual([
      'chargebacks:2026-01-01..2026-01-07',
      'chargebacks:2026-01-08..2026-01-14',
      'chargebacks:2026-01-15..2026-01-21',
      'chargebacks:2026-01-22..2026-01-28',
      'mid_report:2026-01-01..2026-01-31',
      'prevention:2026-01-01..2026-01-07',
      'prevention:2026-01-08..2026-01-14',
      'prevention:2026-01-15..2026-01-21',
      'prevention:2026-01-22..2026-01-28',
    ]);
    const s = await collectStatus(cfg, { now: new Date('2026-02-01T00:00:00Z') });
    expect(s.freshest.map((f) => [f.kind, f.covered_to])).toEqual([
      ['chargebacks', '2026-02-01T00:00:00Z'],
      ['prevention', '2026-02-01T00:00:00Z'],
      ['mid_report', '2026-02-01T00:00:00Z'],
    ]);

    // A later run skips only the finished windows.
    const next = JSON.parse((await cbp(['run', 'backfill', '--from', '2026-01-01', '--to', '2026-06-30', '--json'], env)).stdout) as BackfillJson;
    expect(next).toMatchObject({ skipped: 9, loaded: 49 });
  });

  it('--force fetches a range again, windows recorded as done included, and leaves the store as one load would', async () => {
    const count = async () => {
      const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb'), readOnly: true });
      try {
        return (await store.all<{ n: number }>('SELECT (SELECT count(*) FROM chargebacks)::INTEGER + (SELECT count(*) FROM prevention_alerts)::INTEGER + (SELECT count(*) FROM mid_stats)::INTEGER AS n'))[0].n;
      } finally {
        store.close();
      }
    };
    const before = await count();
    const range = ['run', 'backfill', '--from', '2026-01-01', '--to', '2026-01-28', '--kinds', 'chargebacks,prevention', '--json'];
    const plain = JSON.parse((await cbp(range, env)).stdout) as BackfillJson;
    expect(plain).toMatchObject({ planned: 8, skipped: 8, loaded: 0 });
    const forced = await cbp([...range, '--force'], env);
    expect(forced.code, forced.stderr).toBe(0);
    expect(JSON.parse(forced.stdout)).toMatchObject({ planned: 8, skipped: 0, loaded: 8, open: 0 });
    expect(await count()).toBe(before);
    expect(await doneWindows()).toHaveLength(9);
  });

  it('the sandbox banner shows its clock and how to move it', async () => {
    const d = describeSandbox(sb);
    expect(d.clock).toMatchObject({ now: '2026-02-01T00:00:00Z', realtime: false, move: { method: 'POST', url: `${sb.admin}/clock`, body: { advance: 'P1D' } } });
    const text = humanSandbox(d);
    expect(text).toContain('Sandbox clock        2026-02-01T00:00:00Z');
    expect(text).toContain(`curl -X POST ${sb.admin}/clock -H 'content-type: application/json' -d '{"advance":"P1D"}'`);
    expect(text).toContain('--realtime');
    expect(text).toContain('cbp run backfill --from ... --to 2026-01-31');
    // The call it shows works.
    const moved = await fetch(d.clock.move.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(d.clock.move.body) });
    expect(((await moved.json()) as { now: string }).now).toBe('2026-02-02T00:00:00Z');
    expect(describeSandbox(sb, { realtime: true, speed: 60 }).clock).toMatchObject({ realtime: true, speed: 60 });
  });
});
