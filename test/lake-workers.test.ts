// Several `cbp worker` processes on one task queue and one lake (issue #27), on a real Temporal dev server and a
// throwaway PostgreSQL: each worker in a working folder of its own, as if on its own host. A backfill's windows are
// spread across them; after kill -9 of one mid-download the other finishes the run, and the lake equals what the
// local runner builds alone, nothing loaded twice; `cbp status` reads the lake meanwhile. Two hosts' journals: lake-hosts.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { addDays } from '../lib/utc.ts';
import { openStore } from '../store/db.ts';
import type { BackfillInput, BackfillResult } from '../workflows/backfill.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { admin, cbp, configFor, pipelineFor } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { dumpStore } from './helpers/store-dump.ts';
import { timeOutHeartbeats, skipTemporal, temporalTitle } from './helpers/temporal-env.ts';
import { tempDir } from './helpers/tmp.ts';
import { historyOf, lakeWorld, TODAY, until, within, worker } from './helpers/lake-workers.ts';

describe.skipIf(skipLake || skipTemporal)(`${lakeTitle('several workers on one lake')}, ${temporalTitle('Temporal')}`, { timeout: 600_000 }, () => {
  const w = lakeWorld();

  it('spreads a backfill over two workers; after kill -9 of one the other finishes it, and the lake equals a one-process run', async () => {
    w.pg.createDb('workers');
    const lake = { catalog: w.pg.dsn('workers'), dataPath: tempDir('cbp-lake-data-') };
    const lakeEnv = { CBP_STORE: `ducklake:postgres:${lake.catalog}`, CBP_LAKE_DATA_PATH: lake.dataPath };
    // The schema first, as `cbp db migrate` would: two workers starting together both migrate otherwise (also safe).
    expect((await cbp(['db', 'migrate'], lakeEnv)).code).toBe(0);
    const taskQueue = `cbp-lake-${randomUUID()}`;
    // One activity at a time each: the backfill's two downloads at once are one on each worker (Temporal may give both
    // to one worker's pollers otherwise, round after round).
    const [w1, w2] = await Promise.all([worker(w, lakeEnv, taskQueue, {}, ['--max-activities', '1']), worker(w, lakeEnv, taskQueue, {}, ['--max-activities', '1'])]);
    const input: BackfillInput = { from: addDays(TODAY, -30), to: addDays(TODAY, -25), kinds: ['chargebacks'], windowDays: 1, parallelism: 2 };
    await admin(w.sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 2500 } } });
    const handle = await w.env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue, workflowId: `cbp-lake-backfill-${randomUUID()}`, args: [input] });
    // Two downloads running at once, one on each worker (a worker's identity is pid@host); then one worker dies mid-download.
    const running = await until('a download running on each worker', async () => {
      const started = ((await handle.describe()).raw.pendingActivities ?? []).filter((a) => String(a.state) === '2' || a.state === ('PENDING_ACTIVITY_STATE_STARTED' as never));
      const on = new Set(started.map((a) => String(a.lastWorkerIdentity ?? '').split('@')[0]));
      return on.size === 2 ? on : false;
    });
    expect(running).toEqual(new Set([String(w1.child.pid), String(w2.child.pid)]));
    const status = await within('cbp status', cbp(['status', '--json'], lakeEnv));
    expect(status.code, status.stderr).toBe(0);
    w1.child.kill('SIGKILL');
    await within('the killed worker to exit', w1.exited);
    await admin(w.sb, 'POST', '/faults', {});
    // Its activities time out in seconds, not the production minute (timeOutHeartbeats), and run again on w2.
    const held = ((await handle.describe()).raw.pendingActivities ?? []).filter((a) => String(a.lastWorkerIdentity ?? '').split('@')[0] === String(w1.child.pid));
    await timeOutHeartbeats(w.env, handle, held.map((a) => a.activityId!));
    const r = (await within('the backfill to finish on the worker left', handle.result())) as BackfillResult;
    expect(r).toMatchObject({ status: 'done', planned: 6, loaded: 6 });
    // The killed downloads were run again on the worker left. (A store step the killed worker held beside them, such as
    // marking a window done, is run again too: only the downloads are counted.)
    const h = await historyOf(handle);
    const names = new Map(h.events.filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_SCHEDULED').map((e) => [String(e.eventId), e.activityTaskScheduledEventAttributes.activityType.name as string]));
    const downloads = h.events
      .filter((e) => e.eventType === 'EVENT_TYPE_ACTIVITY_TASK_STARTED' && names.get(String(e.activityTaskStartedEventAttributes.scheduledEventId)) === 'fetchAndLoad')
      .map((e) => Number(e.activityTaskStartedEventAttributes.attempt ?? 1));
    // Every window downloaded; those the killed worker held run again, once each: at most the run's parallelism (none
    // when the kill came just after a download completed; two when it held both at once: under load both happen).
    // (A history keeps one started event an activity: its last attempt's.)
    expect(downloads).toHaveLength(6);
    const again = downloads.filter((a) => a > 1).length;
    expect(again).toBeLessThanOrEqual(input.parallelism ?? 2);
    w2.child.kill('SIGTERM');
    await within('the worker left to stop on SIGTERM', w2.exited);

    const store = await openStore({ dbPath: 'lake', lake, readOnly: true, migrate: false });
    let got;
    try {
      const loads = await store.all<{ files: number; loads: number }>("SELECT count(*)::INTEGER AS files, sum(load_count)::INTEGER AS loads FROM loads WHERE kind = 'chargebacks' GROUP BY window_start ORDER BY window_start");
      // One landing file a window, loaded once; the killed download's window twice at most: a worker killed after its
      // load committed and before Temporal heard of it has its download run again, and the same file loaded again
      // (the rows replace themselves: the lake equals the one-process run below).
      expect(loads.map((l) => l.files)).toEqual([1, 1, 1, 1, 1, 1]);
      expect(loads.filter((l) => l.loads !== 1).length).toBeLessThanOrEqual(again);
      expect(loads.every((l) => l.loads === 1 || l.loads === 2)).toBe(true);
      got = await dumpStore(store);
    } finally {
      store.close();
    }
    const cfg = configFor(w.sb, tempDir('cbp-local-'));
    const p = await pipelineFor(cfg);
    try {
      await p.runner.backfill(input);
    } finally {
      await p.close();
    }
    const file = await openStore({ dbPath: cfg.dbPath, readOnly: true });
    try {
      expect(got).toEqual(await dumpStore(file));
    } finally {
      file.close();
    }
  });
});
