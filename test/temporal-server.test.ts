// The workflows through a real Temporal server, with fake activities. Runs where a server can be had:
// TEMPORAL_ADDRESS (an existing server), or a `temporal` CLI on PATH or from `npm run temporal:install` (its dev
// server is started here).
// TestWorkflowEnvironment.createLocal() is only called with that existing binary: without one it would
// download a server, which this machine cannot.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { FetchAndLoadInput } from '../activities/types.ts';
import { applySchedules, backfillSchedule } from '../worker/schedules.ts';
import { createWorker } from '../worker/worker.ts';
import type { BackfillResult } from '../workflows/backfill.ts';
import type { NightlyResult } from '../workflows/nightly.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { windowId } from '../lib/utc.ts';
import { callsOf, createFakes, type FakeState } from './workflows-fakes.ts';
import { skipTemporal, temporalTitle, useTemporalEnv, workflowBundle } from './helpers/temporal-env.ts';

const loadedKeys = (state: FakeState) =>
  callsOf(state, 'fetchAndLoad').map(([i]) => `${(i as FetchAndLoadInput).kind}:${windowId((i as FetchAndLoadInput).window)}`);

describe.skipIf(skipTemporal)(temporalTitle('real Temporal server'), () => {
  const server = useTemporalEnv();

  async function withWorker<T>(state: ReturnType<typeof createFakes>, fn: (taskQueue: string) => Promise<T>): Promise<T> {
    const taskQueue = `cbp-test-${randomUUID()}`;
    const w = await createWorker({ connection: server().nativeConnection, namespace: server().namespace ?? 'default', activities: state.acts, taskQueue, workflowBundle: await workflowBundle(), shutdownGraceTime: '2 seconds' });
    const running = w.run();
    try {
      return await fn(taskQueue);
    } finally {
      await w.shutdown();
      await running;
    }
  }

  it('runs nightly through Temporal and covers the windows up to asOf', async () => {
    const fakes = createFakes();
    const r = await withWorker(fakes, (taskQueue) =>
      server().client.workflow.execute(WORKFLOW_TYPES.nightly, {
        taskQueue,
        workflowId: `nightly-${randomUUID()}`,
        args: [{ asOf: '2026-03-15T02:30:00Z', lookbackDays: 30, windowDays: 10 }],
      }),
    );
    expect((r as NightlyResult).windows).toHaveLength(8);
    expect(loadedKeys(fakes.state)).toContain('mid_report:2026-03-01..2026-03-15');
    expect(fakes.state.runs).toMatchObject([{ workflow: 'nightly', status: 'ok' }]);
  });

  it('runs a backfill that continues as new and loads every window exactly once', async () => {
    const fakes = createFakes();
    const r = await withWorker(fakes, (taskQueue) =>
      server().client.workflow.execute(WORKFLOW_TYPES.backfill, {
        taskQueue,
        workflowId: `backfill-${randomUUID()}`,
        args: [{ from: '2026-01-01', to: '2026-02-28', kinds: ['chargebacks', 'mid_report'], windowDays: 7, parallelism: 2, windowsPerRun: 3 }],
      }),
    );
    expect(r as BackfillResult).toMatchObject({ status: 'done', planned: 11, loaded: 11 });
    expect(new Set(loadedKeys(fakes.state)).size).toBe(11);
    expect(loadedKeys(fakes.state)).toHaveLength(11);
  });

  it('gives each run of a schedule backfill its own nominal day as asOf', async () => {
    const fakes = createFakes();
    const id = `cbp-nightly-test-${randomUUID()}`;
    await withWorker(fakes, async (taskQueue) => {
      await applySchedules(server().client, {
        taskQueue,
        nightly: { scheduleId: id, input: { windowDays: 1, lookbackDays: 1, kinds: ['chargebacks'] }, paused: true },
        ingest: { scheduleId: `${id}-ingest`, paused: true },
      });
      try {
        await backfillSchedule(server().client, { scheduleId: id, from: '2026-03-01T00:00:00Z', to: '2026-03-03T23:59:59Z' });
        for (let i = 0; i < 120 && fakes.state.runs.length < 3; i++) await new Promise((r) => setTimeout(r, 500));
      } finally {
        await server().client.schedule.getHandle(id).delete();
        await server().client.schedule.getHandle(`${id}-ingest`).delete();
      }
    });
    expect(loadedKeys(fakes.state).sort()).toEqual(['chargebacks:2026-03-01..2026-03-01', 'chargebacks:2026-03-02..2026-03-02', 'chargebacks:2026-03-03..2026-03-03']);
  });
});
