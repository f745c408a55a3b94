// A `cbp worker` stopped mid-backfill on a real Temporal server with the real activities: SIGTERM lets the running
// download finish, SIGKILL leaves it to a retry on the next worker; either way the store equals a clean run's.
// Server, sandbox and checks as in test/temporal-server-real.test.ts (test/helpers/temporal-real.ts), including
// CBP_RECORD_HISTORIES=1.
import { describe, expect, it } from 'vitest';
import type { BackfillResult } from '../workflows/backfill.ts';
import { skipTemporal, temporalTitle, timeOutHeartbeats } from './helpers/temporal-env.ts';
import {
  checkAndRecord, dumpFile, eventsOf, faults, historyOf, localStore, PENDING_ACTIVITY_SCHEDULED, rig, startedActivities, useRealServer,
  whenTheWorkerDies, whileDownloading, withStoreFile,
} from './helpers/temporal-real.ts';

describe.skipIf(skipTemporal)(temporalTitle('real Temporal server, a `cbp worker` stopped mid-backfill'), () => {
  useRealServer();

  it('lets the running download finish when `cbp worker` gets SIGTERM, and a next worker finishes the run; the store equals a clean run', async () => {
    await whenTheWorkerDies({ days: 3, latencyMs: 2500, id: 'sigterm' }, async ({ cfg, input, child, handle, next }) => {
      await whileDownloading(handle, 1);
      child.child.kill('SIGTERM');
      const exit = await child.exited;
      expect(exit, child.output()).toEqual({ code: 0, signal: null });
      await faults({});
      // The download running at SIGTERM finished within the grace time: every activity the stopping worker had
      // started completed at its first attempt (none failed, timed out or is left for a retry).
      const mid = await historyOf(handle);
      const fetches = startedActivities(mid).filter((a) => a.name === 'fetchAndLoad');
      expect(fetches.length).toBeGreaterThanOrEqual(2);
      expect(fetches.every((a) => a.attempt === 1)).toBe(true);
      expect(eventsOf(mid, 'EVENT_TYPE_ACTIVITY_TASK_COMPLETED').length).toBe(startedActivities(mid).length);
      // Nothing the stopping worker started is pending. It may have taken the workflow task that followed, so the next
      // activity can already be scheduled, never started: left for the next worker, not for a retry.
      const pending = ((await handle.describe()).raw.pendingActivities ?? []).map((a) => ({
        name: a.activityType?.name, state: a.state, attempt: a.attempt, failed: a.lastFailure != null,
      }));
      for (const a of pending) expect(a).toMatchObject({ state: PENDING_ACTIVITY_SCHEDULED, attempt: 1, failed: false });

      const w = await next();
      const r = (await handle.result()) as BackfillResult;
      expect(r).toMatchObject({ status: 'done', planned: 3, loaded: 3 });
      await checkAndRecord('backfill-worker-sigterm', handle);
      await w.stop();
      const local = await localStore((runner) => runner.backfill(input));
      expect(await dumpFile(cfg)).toEqual(local);
    });
  }, 180_000);

  it('retries the activities of a worker killed with SIGKILL mid-backfill on a new worker; the store equals a clean run, nothing loaded twice', async () => {
    await whenTheWorkerDies({ days: 5, latencyMs: 2000, id: 'kill' }, async ({ cfg, input, child, handle, next }) => {
      await whileDownloading(handle, 2);
      child.child.kill('SIGKILL');
      expect((await child.exited).signal).toBe('SIGKILL');
      await faults({});

      // The new worker gets the killed download once its heartbeat times out (the production minute shortened on
      // the server: timeOutHeartbeats), then the rest.
      const killed = ((await handle.describe()).raw.pendingActivities ?? []).map((a) => a.activityId!);
      expect(killed).toHaveLength(1);
      await timeOutHeartbeats(rig.env, handle, killed);
      const w = await next();
      const r = (await handle.result()) as BackfillResult;
      expect(r).toMatchObject({ status: 'done', planned: 5, loaded: 5 });
      const h = await checkAndRecord('backfill-worker-killed', handle);
      const fetches = startedActivities(h).filter((a) => a.name === 'fetchAndLoad');
      expect(fetches.filter((a) => a.attempt === 2)).toHaveLength(1);
      expect(eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT').length).toBe(0); // a retried attempt's timeout is not an event of its own
      await w.stop();

      // Nothing loaded twice: one landing file per window, loaded once, and one fetch record per window.
      const loads = await withStoreFile(cfg, (s) =>
        s.all<{ w: string; files: bigint; loads: bigint }>("SELECT CAST(window_start AS VARCHAR) AS w, count(*) AS files, sum(load_count) AS loads FROM loads WHERE kind = 'chargebacks' GROUP BY 1 ORDER BY 1"),
      );
      expect(loads.map((l) => [Number(l.files), Number(l.loads)])).toEqual(Array.from({ length: 5 }, () => [1, 1]));
      const local = await localStore((runner) => runner.backfill(input));
      expect(await dumpFile(cfg)).toEqual(local);
    });
  }, 240_000);
});
