// The nightly and backfill bodies with the REAL activities against the sandbox and a real DuckDB file:
// the right windows land in the store, a faulty service ends in the same store as a healthy one, and a
// backfill killed half-way and resumed ends in the same store as an uninterrupted one.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import { selectReport } from '../sandbox/reports.ts';
import { nightlyTasks } from '../workflows/windows.ts';
import { windowBounds, windowId } from '../lib/utc.ts';
import { REPORT_KINDS } from '../contract/reporting.ts';
import path from 'node:path';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { createReportActivities } from '../activities/reports.ts';
import { admin, configFor, crashAfter, dumpTables, pipelineFor, rmrf, sandbox, tempDir } from './activities-fixtures.ts';

let sb: RunningSandbox;
const dirs: string[] = [];
const dir = () => {
  const d = tempDir();
  dirs.push(d);
  return d;
};

const AS_OF = '2026-01-01T00:00:00Z';
const NIGHTLY = { asOf: AS_OF, lookbackDays: 30, windowDays: 10, parallelism: 2 };

beforeAll(async () => {
  sb = await sandbox();
});
afterAll(async () => {
  await sb?.close();
  for (const d of dirs) rmrf(d);
});

async function nightlyDump(faults?: unknown) {
  const cfg = configFor(sb, dir());
  if (faults) await admin(sb, 'POST', '/faults', faults);
  const p = await pipelineFor(cfg);
  try {
    const r = await p.runner.nightly(NIGHTLY);
    const injected = faults ? (await admin<{ injected: Record<string, unknown> }>(sb, 'GET', '/faults')).injected : {};
    return { r, dump: await dumpTables(p.store), injected };
  } finally {
    if (faults) await admin(sb, 'DELETE', '/faults');
    await p.close();
  }
}

describe('nightly with the real activities', () => {
  it('loads exactly the trailing windows of asOf, with every record the service reports for them', async () => {
    const cfg = configFor(sb, dir());
    const p = await pipelineFor(cfg);
    try {
      const r = await p.runner.nightly(NIGHTLY);
      const tasks = nightlyTasks(REPORT_KINDS, AS_OF, 30, 10);
      expect(r.windows.map((w) => w.task).sort()).toEqual(tasks.map((t) => `${t.kind}:${windowId(t.window)}`).sort());

      const loads = await p.store.all<{ kind: string; s: string; e: string }>(
        "SELECT kind, strftime(window_start, '%Y-%m-%d') AS s, strftime(window_end, '%Y-%m-%d') AS e FROM loads ORDER BY kind, s",
      );
      expect(loads.map((l) => `${l.kind}:${l.s}..${l.e}`).sort()).toEqual(tasks.map((t) => `${t.kind}:${windowId(t.window)}`).sort());
      // Each window the service had finished is marked done in its load's commit, as a backfill's are: a backfill skips it.
      const done = await p.store.all<{ kind: string; window_id: string; run_id: string }>('SELECT kind, window_id, run_id FROM windows_done');
      expect(done.map((d) => `${d.kind}:${d.window_id}`).sort()).toEqual(r.windows.filter((w) => !w.open).map((w) => w.task).sort());
      expect(done.length).toBeGreaterThan(0);
      expect(new Set(done.map((d) => d.run_id))).toEqual(new Set([r.runId]));

      // The store holds every chargeback the service reports for those windows, once each.
      const world = sb.state.world;
      const keys = new Set<string>();
      for (const t of tasks.filter((x) => x.kind === 'chargebacks')) {
        const b = windowBounds(t.window);
        for (const rec of selectReport(world, { kind: 'chargebacks', start: b.start, end: b.end, now: AS_OF })) keys.add(`${rec.mid}|${rec.case_number}`);
      }
      const [{ n }] = await p.store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM chargebacks');
      expect(keys.size).toBeGreaterThan(0);
      expect(n).toBe(keys.size);

      const [run] = await p.store.all<{ workflow: string; status: string; as_of: string }>("SELECT workflow, status, strftime(as_of, '%Y-%m-%dT%H:%M:%SZ') AS as_of FROM runs");
      expect(run).toEqual({ workflow: 'nightly', status: 'ok', as_of: AS_OF });
      expect(r.snapshot.path).toMatch(/published/);
    } finally {
      await p.close();
    }
  });

  it('ends with the same store when the reporting interface answers 20% 5xx, some 504s and slowly (the client retries)', async () => {
    const clean = await nightlyDump();
    const faulty = await nightlyDump({
      seed: 11,
      interfaces: { reporting: { errorRate: 0.2, errorStatuses: [500, 502, 503, 504, 504], latencyMs: 15 } },
    });
    expect(faulty.r.windows.length).toBe(clean.r.windows.length);
    expect(faulty.dump).toEqual(clean.dump);
    expect(clean.dump.chargebacks.length).toBeGreaterThan(0);
    // The faults were really there.
    expect(JSON.stringify(faulty.injected)).toMatch(/[1-9]/);
  });
});

describe('backfill with the real activities', () => {
  const INPUT = { from: '2025-10-01', to: '2025-12-31', windowDays: 15, parallelism: 2 };

  it('records a finished window as done in its load\'s commit, with its run, before the workflow marks it', async () => {
    let store: Store | undefined;
    const marks: number[] = [];
    const p = await pipelineFor(configFor(sb, dir()), {
      wrap: (a) => ({
        ...a,
        async fetchAndLoad(input) {
          const r = await a.fetchAndLoad(input);
          const [{ n }] = await store!.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM windows_done WHERE kind = $1 AND window_id = $2 AND run_id = $3',
            [input.kind, windowId(input.window), input.runId]);
          marks.push(n);
          return r;
        },
      }),
    });
    store = p.store;
    try {
      const r = await p.runner.backfill({ ...INPUT, to: '2025-10-30', parallelism: 1 });
      expect(r.status).toBe('done');
      expect(marks).toEqual(Array(r.planned).fill(1));
      // markWindowDone wrote nothing over them (its own write has no run id).
      const runs = await p.store.all<{ run_id: string | null }>('SELECT DISTINCT run_id FROM windows_done');
      expect(runs).toEqual([{ run_id: r.runId }]);
    } finally {
      await p.close();
    }
  });

  it('still records an older worker\'s result (no outcomeRecorded): done when finished, an earlier mark removed when not', async () => {
    const store = await openTestStore({ dbPath: path.join(dir(), 'w.duckdb') });
    try {
      const acts = createReportActivities({ withStore: (_name: string, fn: (s: Store) => Promise<unknown>) => fn(store), now: () => new Date(AS_OF) } as never);
      const window = { from: '2025-12-01', to: '2025-12-10' };
      const result = { kind: 'chargebacks' as const, windowId: windowId(window), records: 3, quarantined: 0 };
      const done = () => store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM windows_done WHERE window_id = $1', [windowId(window)]);
      await acts.markWindowDone('chargebacks', window, { ...result, serviceTime: '2025-12-11T00:00:00Z' });
      expect(await done()).toEqual([{ n: 1 }]);
      await acts.markWindowDone('chargebacks', window, { ...result, serviceTime: '2025-12-10T12:00:00Z' });
      expect(await done()).toEqual([{ n: 0 }]);
      // A result whose load recorded it writes nothing.
      await acts.markWindowDone('chargebacks', window, { ...result, serviceTime: '2025-12-11T00:00:00Z', outcomeRecorded: true });
      expect(await done()).toEqual([{ n: 0 }]);
    } finally {
      store.close();
    }
  });

  it('resumes a run killed half-way and ends with the same store as an uninterrupted run', async () => {
    const whole = configFor(sb, dir());
    const p1 = await pipelineFor(whole);
    let wholeDump;
    let planned = 0;
    try {
      const r = await p1.runner.backfill(INPUT);
      expect(r.status).toBe('done');
      planned = r.planned;
      expect(r.loaded).toBe(r.planned);
      wholeDump = await dumpTables(p1.store);
    } finally {
      await p1.close();
    }

    const cfg = configFor(sb, dir());
    const killed = await pipelineFor(cfg, { wrap: crashAfter(5) });
    try {
      await expect(killed.runner.backfill(INPUT)).rejects.toThrow(/simulated crash/);
      const [{ n }] = await killed.store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM windows_done');
      expect(n).toBeGreaterThanOrEqual(4);
      expect(n).toBeLessThan(planned);
      const [failed] = await killed.store.all<{ status: string; error: string }>('SELECT status, error FROM runs');
      expect(failed.status).toBe('failed');
      expect(failed.error).toMatch(/simulated crash/);
    } finally {
      await killed.close();
    }

    const resumed = await pipelineFor(cfg);
    try {
      const r = await resumed.runner.backfill(INPUT);
      expect(r.status).toBe('done');
      expect(r.skipped).toBeGreaterThanOrEqual(4);
      expect(r.loaded + r.skipped).toBe(planned);
      expect(await dumpTables(resumed.store)).toEqual(wholeDump);
      // A third run finds everything done and fetches nothing.
      const again = await resumed.runner.backfill(INPUT);
      expect(again).toMatchObject({ status: 'done', loaded: 0, skipped: planned });
    } finally {
      await resumed.close();
    }
  });
});
