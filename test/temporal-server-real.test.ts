// The workflows on a real Temporal server with the REAL activities (issue #12): one dev server for the file
// (or TEMPORAL_ADDRESS), one sandbox whose clock stands at today's start, real DuckDB stores in temp folders
// (test/helpers/temporal-real.ts). Each case compares what the server's runs left in the store with what the local
// runner (worker/local.ts, as `cbp run` uses it) builds from the same sandbox state in a second store, and reads
// every payload of the runs' histories (no order field, no credential, nothing over 64 KiB). The runs across a
// worker's SIGTERM and SIGKILL are in test/temporal-worker-stop.test.ts.
//
// CBP_RECORD_HISTORIES=1 writes the histories of these runs to test/fixtures/histories/ (the replay fixtures
// of test/temporal-replay-recorded.test.ts); see docs/orchestration.md, "Tests".
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { addDays } from '../lib/utc.ts';
import { applySchedules, backfillSchedule, scheduleOptionsFromConfig } from '../worker/schedules.ts';
import { DEFAULT_WINDOWS_PER_RUN, type BackfillInput, type BackfillResult } from '../workflows/backfill.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import type { NightlyInput, NightlyResult } from '../workflows/nightly.ts';
import type { PushOrdersResult } from '../workflows/push-orders.ts';
import type { ReconcileResult } from '../workflows/reconcile.ts';
import { admin, cbp, configFor, pipelineFor, WEBHOOK } from './activities-fixtures.ts';
import { startReceiver as startHookReceiver, type Receiver } from './sandbox-fixtures.ts';
import { plantedOrder } from './helpers/history-rules.ts';
import { skipTemporal, temporalTitle } from './helpers/temporal-env.ts';
import {
  checkAndRecord, dumpFile, eventsOf, historyOf, HISTORY_WARNING, localStore, realWorker, rig, startedActivities, TODAY, until,
  useRealServer, withStoreFile, type RealWorker,
} from './helpers/temporal-real.ts';
import { tempDir } from './helpers/tmp.ts';

describe.skipIf(skipTemporal)(temporalTitle('real Temporal server, real activities'), () => {
  useRealServer();

  it('runs a nightly created by applySchedules and triggered: asOf is TemporalScheduledStartTime, the store equals the local runner\'s', async () => {
    const cfg = { ...configFor(rig.sb, tempDir()), windowDays: 7, lookbackDays: 21 };
    const w = await realWorker(cfg);
    const id = `cbp-nightly-${randomUUID()}`;
    const opts = scheduleOptionsFromConfig(cfg);
    try {
      // As `cbp schedule apply` builds them from the configuration; the ids and queue are this test's own.
      await applySchedules(rig.env.client, {
        ...opts,
        taskQueue: w.taskQueue,
        nightly: { ...opts.nightly, scheduleId: id },
        ingest: { ...opts.ingest, scheduleId: `${id}-ingest`, paused: true },
      });
      const schedule = rig.env.client.schedule.getHandle(id);
      await schedule.trigger();
      const action = await until('the triggered run', async () => (await schedule.describe()).info.recentActions[0]);
      const handle = rig.env.client.workflow.getHandle(action.action.workflow.workflowId, action.action.workflow.firstExecutionRunId);
      const r = (await handle.result()) as NightlyResult;
      const d = await handle.describe();
      const nominal = d.typedSearchAttributes.get({ name: 'TemporalScheduledStartTime', type: 'DATETIME' } as never) as unknown as Date;
      expect(nominal).toBeInstanceOf(Date);
      expect(r.asOf).toBe(nominal.toISOString());
      // The search attribute keeps whole seconds: the schedule's time of the action, not the run's start.
      expect(r.asOf).toBe(new Date(Math.floor(action.scheduledAt.getTime() / 1000) * 1000).toISOString());
      expect(r.asOf).not.toBe(d.startTime.toISOString());
      expect(r.windows.map((x) => x.task)).toContain(`mid_report:${TODAY.slice(0, 8)}01..${TODAY}`);
      await checkAndRecord('nightly-triggered', handle);
      await schedule.delete();
      await rig.env.client.schedule.getHandle(`${id}-ingest`).delete();
      await w.stop();

      const input: NightlyInput = { ...opts.nightly.input, asOf: r.asOf };
      const local = await localStore((runner) => runner.nightly(input));
      const temporal = await dumpFile(cfg);
      expect(temporal.chargebacks!.length).toBeGreaterThan(0);
      expect(temporal.mid_stats!.length).toBeGreaterThan(0);
      expect(temporal).toEqual(local);
    } finally {
      await w.stop();
    }
  }, 120_000);

  it('runs every nominal night of a schedule backfill across a month end once, in order; the store equals the local runner\'s; applying twice changes nothing', async () => {
    const cfg = configFor(rig.sb, tempDir());
    const w = await realWorker(cfg);
    const id = `cbp-nightly-${randomUUID()}`;
    const input = { windowDays: 1, lookbackDays: 1, kinds: ['chargebacks' as const, 'mid_report' as const] };
    const apply = () =>
      applySchedules(rig.env.client, {
        taskQueue: w.taskQueue,
        nightly: { scheduleId: id, input, paused: true },
        ingest: { scheduleId: `${id}-ingest`, paused: true },
      });
    // A nightly with its pipeline (events, enrichment, ratios, notices, snapshot) is slow here, so the default is
    // four nights across a month's end; CBP_REAL_NIGHTS=61 runs two months.
    const NIGHTS = Number(process.env.CBP_REAL_NIGHTS ?? 4);
    const from = addDays(`${addDays(TODAY, -60).slice(0, 8)}01`, -2);
    const to = addDays(from, NIGHTS - 1);
    try {
      expect((await apply()).map((a) => a.action)).toEqual(['created', 'created']);
      const schedule = rig.env.client.schedule.getHandle(id);
      const ingest = rig.env.client.schedule.getHandle(`${id}-ingest`);
      const definition = async () => {
        const [a, b] = await Promise.all([schedule.describe(), ingest.describe()]);
        return [a, b].map((x) => ({ spec: x.spec, action: x.action, policies: x.policies, state: x.state, memo: x.memo }));
      };
      const before = await definition();
      expect((await apply()).map((a) => a.action)).toEqual(['updated', 'updated']);
      expect(await definition()).toEqual(before);

      await backfillSchedule(rig.env.client, { scheduleId: id, from, to });
      const info = await until(`all ${NIGHTS} nights`, async () => {
        const i = (await schedule.describe()).info;
        return i.numActionsTaken >= NIGHTS && i.runningActions.length === 0 ? i : undefined;
      }, 500);
      expect(info.numActionsTaken).toBe(NIGHTS);
      expect(info.numActionsSkippedOverlap).toBe(0);
      expect(info.numActionsMissedCatchupWindow).toBe(0);

      // Every run the schedule started, through visibility: one per nominal night, each completed.
      const nights = Array.from({ length: NIGHTS }, (_, i) => `${addDays(from, i)}T02:30:00.000Z`);
      const runs = await until(`visibility lists the ${NIGHTS} runs`, async () => {
        const list: Array<{ workflowId: string; runId: string; status: string; nominal: string }> = [];
        for await (const x of rig.env.client.workflow.list({ query: `TemporalScheduledById = '${id}'` })) {
          const t = x.typedSearchAttributes.get({ name: 'TemporalScheduledStartTime', type: 'DATETIME' } as never) as unknown as Date | undefined;
          list.push({ workflowId: x.workflowId, runId: x.runId, status: x.status.name, nominal: t ? t.toISOString() : '?' });
        }
        return list.length >= NIGHTS && list.every((x) => x.status === 'COMPLETED') ? list : undefined;
      }, 500);
      expect(runs.map((x) => x.nominal).sort()).toEqual(nights);
      const first = runs.find((x) => x.nominal === nights[0])!;
      await checkAndRecord('nightly-schedule-backfill', rig.env.client.workflow.getHandle(first.workflowId, first.runId));
      await schedule.delete();
      await ingest.delete();
      await w.stop();

      const asOfs = await withStoreFile(cfg, (s) => s.all<{ as_of: unknown }>("SELECT as_of FROM runs WHERE workflow = 'nightly' ORDER BY started_at"));
      expect(asOfs.map((x) => new Date(String(x.as_of).replace(' ', 'T') + (String(x.as_of).endsWith('Z') ? '' : 'Z')).toISOString()).sort()).toEqual(nights);

      const local = await localStore(async (runner) => {
        for (const asOf of nights) await runner.nightly({ ...input, asOf });
      });
      expect(await dumpFile(cfg)).toEqual(local);
    } finally {
      await w.stop();
    }
  }, 240_000);

  it('runs a backfill that continues as new, each run of the chain well under the history limits at the default windows per run', async () => {
    const cfg = configFor(rig.sb, tempDir());
    const w = await realWorker(cfg);
    const from = addDays(TODAY, -400);
    const to = addDays(from, 17);
    // The input `cbp schedule backfill --workflow` builds, with 6 windows a run in place of its default: a chain of 3.
    const input: BackfillInput = { from, to, kinds: ['chargebacks'], windowDays: 1, parallelism: 6, windowsPerRun: 6 };
    try {
      const handle = await rig.env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue: w.taskQueue, workflowId: `cbp-backfill-${randomUUID()}`, args: [input] });
      const r = (await handle.result()) as BackfillResult;
      expect(r).toMatchObject({ status: 'done', planned: 18, loaded: 18, skipped: 0, open: 0 });

      // Walk the chain from its first run: each continued as new into the next, the last completed.
      let runId: string | undefined = handle.firstExecutionRunId;
      const chain: Array<{ runId: string; events: number; status: string }> = [];
      while (runId) {
        const h = rig.env.client.workflow.getHandle(handle.workflowId, runId);
        const d = await h.describe();
        const hist = await historyOf(h);
        chain.push({ runId, events: hist.events.length, status: d.status.name });
        const next = eventsOf(hist, 'EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW')[0];
        expect(d.historyLength).toBe(hist.events.length);
        // A run of the default's windows, at this run's size per window, stays under half of Temporal's warning
        // (a linear guess: what a run carries to the next, the windows left, is small beside its events).
        const scale = DEFAULT_WINDOWS_PER_RUN / input.windowsPerRun!;
        expect(hist.events.length * scale).toBeLessThan(HISTORY_WARNING.events / 2);
        expect(Buffer.byteLength(JSON.stringify(hist)) * scale).toBeLessThan(HISTORY_WARNING.bytes / 2);
        // The first and the last run are kept as fixtures; the ones between are only checked.
        await checkAndRecord(chain.length === 1 ? 'backfill-continued' : next ? undefined : 'backfill-last', h);
        runId = next?.workflowExecutionContinuedAsNewEventAttributes.newExecutionRunId;
      }
      expect(chain.length).toBe(3);
      expect(chain.slice(0, -1).every((c) => c.status === 'CONTINUED_AS_NEW')).toBe(true);
      expect(chain.at(-1)!.status).toBe('COMPLETED');
      await w.stop();
      const done = await withStoreFile(cfg, (s) => s.all<{ n: bigint }>("SELECT count(*) AS n FROM windows_done WHERE kind = 'chargebacks'"));
      expect(Number(done[0]!.n)).toBe(18);
      const runs = await withStoreFile(cfg, (s) => s.all<{ n: bigint }>("SELECT count(*) AS n FROM runs WHERE workflow = 'backfill'"));
      expect(Number(runs[0]!.n)).toBe(1);
    } finally {
      await w.stop();
    }
  }, 240_000);

  it('re-fetches a range with `cbp schedule backfill --workflow --force`; without --force the done windows are skipped', async () => {
    const dir = tempDir();
    const cfg = configFor(rig.sb, dir);
    const w = await realWorker(cfg);
    const cliEnv = { ...sandboxEnv(rig.sb, dir), TEMPORAL_ADDRESS: rig.env.address, TEMPORAL_NAMESPACE: rig.env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: w.taskQueue, CBP_LOG_LEVEL: 'warn' };
    const from = addDays(TODAY, -20);
    const to = addDays(TODAY, -18);
    const backfill = async (...extra: string[]) => {
      const r = await cbp(['schedule', 'backfill', '--workflow', '--from', from, '--to', to, '--kinds', 'chargebacks', '--window-days', '1', '--json', ...extra], cliEnv);
      expect(r.code, r.stderr).toBe(0);
      const started = JSON.parse(r.stdout) as { workflowId: string; runId: string; input: BackfillInput };
      return { started, result: (await rig.env.client.workflow.getHandle(started.workflowId, started.runId).result()) as BackfillResult };
    };
    try {
      const first = await backfill();
      expect(first.result).toMatchObject({ status: 'done', planned: 3, loaded: 3, skipped: 0 });
      const again = await backfill();
      expect(again.result).toMatchObject({ status: 'done', planned: 3, loaded: 0, skipped: 3 });
      const forced = await backfill('--force');
      expect(forced.started.input.force).toBe(true);
      expect(forced.result).toMatchObject({ status: 'done', planned: 3, loaded: 3, skipped: 0 });
    } finally {
      await w.stop();
    }
  }, 120_000);

  it('fails fast on a wrong reporting key: one attempt, the CBP_ERR_* code and message in the failure', async () => {
    const cfg = { ...configFor(rig.sb, tempDir()), reportingKey: 'wrong-reporting-key-for-the-test' };
    const w = await realWorker(cfg);
    try {
      const handle = await rig.env.client.workflow.start(WORKFLOW_TYPES.backfill, {
        taskQueue: w.taskQueue,
        workflowId: `cbp-backfill-wrong-key-${randomUUID()}`,
        args: [{ from: addDays(TODAY, -30), to: addDays(TODAY, -30), kinds: ['chargebacks'], windowDays: 1 } satisfies BackfillInput],
      });
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowFailedError);
      const activity = (err as WorkflowFailedError).cause;
      expect(activity).toBeInstanceOf(ActivityFailure);
      expect((activity as ActivityFailure).activityType).toBe('fetchAndLoad');
      const app = (activity as ActivityFailure).cause as ApplicationFailure;
      expect(app).toBeInstanceOf(ApplicationFailure);
      expect(app.type).toBe('CBP_ERR_SERVICE_UNAUTHORIZED');
      expect(app.nonRetryable).toBe(true);
      expect(app.message).toMatch(/401/);
      expect(app.message).not.toContain('wrong-reporting-key-for-the-test');
      const h = await checkAndRecord('backfill-failed-wrong-key', handle);
      expect(startedActivities(h).filter((a) => a.name === 'fetchAndLoad')).toEqual([{ name: 'fetchAndLoad', attempt: 1 }]);
      expect(eventsOf(h, 'EVENT_TYPE_ACTIVITY_TASK_FAILED')[0]!.activityTaskFailedEventAttributes.retryState).toBe('RETRY_STATE_NON_RETRYABLE_FAILURE');
      expect(JSON.stringify(h)).not.toContain('wrong-reporting-key-for-the-test');
      await w.stop();
      const runs = await withStoreFile(cfg, (s) => s.all<{ status: string; error: string }>('SELECT status, error FROM runs'));
      expect(runs).toEqual([{ status: 'failed', error: app.message }]);
    } finally {
      await w.stop();
    }
  }, 120_000);

  it('reconciles the subscriptions, pushes orders and ingests through the server against the sandbox', async () => {
    let hook: Receiver | undefined;
    let w: RealWorker | undefined;
    try {
      hook = await startHookReceiver();
      const cfg = configFor(rig.sb, tempDir(), { ...WEBHOOK, url: hook.url });
      w = await realWorker(cfg);
      const run = async <T>(type: string, args: unknown[], name: string): Promise<T> => {
        const handle = await rig.env.client.workflow.start(type, { taskQueue: w!.taskQueue, workflowId: `${name}-${randomUUID()}`, args });
        const r = (await handle.result()) as T;
        await checkAndRecord(name, handle);
        return r;
      };
      const reconcile = { webhookUrl: hook.url, email: 'ops@merchant.example', auth: { username: WEBHOOK.username } };
      const first = await run<ReconcileResult>(WORKFLOW_TYPES.reconcileSubscriptions, [reconcile], 'reconcile-subscriptions');
      expect(first.created).toHaveLength(8);
      const second = await run<ReconcileResult>(WORKFLOW_TYPES.reconcileSubscriptions, [reconcile], 'reconcile-subscriptions-unchanged');
      expect(second).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
      // The local runner, on the state the server's runs left, finds nothing to do either.
      const local = await pipelineFor(configFor(rig.sb, tempDir(), { ...WEBHOOK, url: hook.url }));
      try {
        expect(await local.runner.reconcileSubscriptions(reconcile)).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
      } finally {
        await local.close();
      }

      // Orders full of personal data: none of it may reach the history (checked by checkAndRecord).
      const source = path.join(cfg.dataDir, 'orders.ndjson');
      fs.writeFileSync(source, `${Array.from({ length: 120 }, (_, i) => JSON.stringify(plantedOrder(i))).join('\n')}\n`);
      const pushed = await run<PushOrdersResult>(WORKFLOW_TYPES.pushOrders, [{ source, batchSize: 50 }], 'push-orders');
      expect(pushed).toMatchObject({ status: 'done', read: 120, pushed: 120, new: 120, rejected: 0, invalid: 0 });
      const again = await run<PushOrdersResult>(WORKFLOW_TYPES.pushOrders, [{ source, batchSize: 50 }], 'push-orders-unchanged');
      expect(again).toMatchObject({ status: 'done', read: 120, pushed: 0, unchanged: 120 });
      expect((await admin<unknown[]>(rig.sb, 'GET', '/orders')).length).toBeGreaterThanOrEqual(120);

      const ingested = await run<{ segments: number }>(WORKFLOW_TYPES.ingestEvents, [{}], 'ingest-events');
      expect(ingested.segments).toBe(0);
    } finally {
      await w?.stop();
      await hook?.close();
    }
  }, 120_000);
});

describe('cbp schedule backfill --force', () => {
  it('applies to --workflow only: without it, exit 2 before anything connects', async () => {
    const r = await cbp(['schedule', 'backfill', '--from', '2026-01-01', '--to', '2026-01-31', '--force']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--force apply to --workflow only/);
  });
});
