import { ApplicationFailure } from '@temporalio/common';
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type ScheduleOptions } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACTIVITY_NAMES } from '../activities/types.ts';
import { CbpError, ValidationError } from '../lib/errors.ts';
import { temporalActivities, toActivityFailure } from '../worker/activity-errors.ts';
import { withHeartbeat } from '../activities/heartbeat.ts';
import { loadConfig } from '../lib/config.ts';
import { applySchedules, backfillSchedule, parseAt, scheduleDefinitions, scheduleOptionsFromConfig, type ScheduleClientLike } from '../worker/schedules.ts';
import { PREBUILT_BUNDLE_PATH, temporalTargetFromConfig, WORKER_DEFAULTS, WORKFLOWS_PATH, workerOptions, workflowSource } from '../worker/worker.ts';
import { ACTIVITY_GROUPS } from '../workflows/activity-options.ts';
import { createFakes } from './workflows-fakes.ts';
import { tempDir } from './helpers/tmp.ts';

describe('activity errors reach Temporal typed by their code', () => {
  it('marks a refused request (400/401/412/422 kinds) non-retryable and a 5xx retryable', () => {
    const refused = toActivityFailure(new CbpError('CBP_ERR_SERVICE_UNPROCESSABLE', 'reporting POST /chargebacks failed with HTTP 422'));
    expect(refused).toBeInstanceOf(ApplicationFailure);
    expect(refused).toMatchObject({ type: 'CBP_ERR_SERVICE_UNPROCESSABLE', nonRetryable: true, message: expect.stringMatching(/422/) });
    const busy = toActivityFailure(Object.assign(new CbpError('CBP_ERR_SERVICE_UNAVAILABLE', 'HTTP 503', { status: 503 }), { retryAfterMs: 2000 }));
    expect(busy).toMatchObject({ type: 'CBP_ERR_SERVICE_UNAVAILABLE', nonRetryable: false, nextRetryDelay: 2000 });
    expect(toActivityFailure(new ValidationError('order', ['order_id: missing']))).toMatchObject({ type: 'CBP_ERR_VALIDATION', nonRetryable: true });
    const plain = new TypeError('bug');
    expect(toActivityFailure(plain)).toBe(plain);
  });

  it('wraps every activity of an implementation, keeping results and names', async () => {
    const { acts } = createFakes();
    const failing = { ...acts, enrich: async () => Promise.reject(new CbpError('CBP_ERR_SERVICE_UNAUTHORIZED', 'HTTP 401')) };
    const wrapped = temporalActivities(failing);
    expect(Object.keys(wrapped).sort()).toEqual([...ACTIVITY_NAMES, 'now'].sort());
    await expect(wrapped.ingestEvents()).resolves.toMatchObject({ events: 40 });
    await expect(wrapped.enrich()).rejects.toMatchObject({ type: 'CBP_ERR_SERVICE_UNAUTHORIZED', nonRetryable: true });
    expect(wrapped.fetchAndLoad.name).toBe('fetchAndLoad');
  });

  it('assigns every activity of the interface to an options group', () => {
    expect(Object.keys(ACTIVITY_GROUPS).sort()).toEqual([...ACTIVITY_NAMES].sort());
    expect(ACTIVITY_GROUPS.fetchAndLoad).toBe('report');
  });
});

describe('every activity heartbeats through the worker wrapper', () => {
  it('beats while a store activity runs, stops when it ends, and keeps its result and typed errors', async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    const acts = temporalActivities(
      {
        async load(ms: number) { await new Promise((r) => setTimeout(r, ms)); return 'loaded'; },
        async refuse() { throw new ValidationError('order', ['order_id: missing']); },
      },
      { heartbeatMs: 10 },
    );
    expect(await env.run(() => acts.load(60))).toBe('loaded');
    expect(beats.length).toBeGreaterThanOrEqual(2);
    const after = beats.length;
    await new Promise((r) => setTimeout(r, 40));
    expect(beats.length).toBe(after);
    await expect(env.run(() => acts.refuse())).rejects.toMatchObject({ type: 'CBP_ERR_VALIDATION', nonRetryable: true });
  });

  it('runs outside an activity context (the local runner) without heartbeating', async () => {
    const acts = temporalActivities({ async ping() { return 'pong'; } });
    expect(await acts.ping()).toBe('pong');
  });
});

describe('heartbeats of a long download', () => {
  it('heartbeats while the download runs and stops when it ends', async () => {
    const env = new MockActivityEnvironment();
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    let bytes = 0;
    const result = await env.run(() =>
      withHeartbeat(
        async () => {
          for (let i = 0; i < 5; i++) {
            bytes += 100;
            await new Promise((r) => setTimeout(r, 15));
          }
          return 'landed';
        },
        { intervalMs: 10, details: () => ({ bytes }) },
      ),
    );
    expect(result).toBe('landed');
    expect(beats.length).toBeGreaterThanOrEqual(2);
    expect(beats[0]).toEqual({ bytes: 0 });
    const after = beats.length;
    await new Promise((r) => setTimeout(r, 40));
    expect(beats.length).toBe(after);
  });

  it('hands the download the cancellation signal', async () => {
    const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
    const env = new MockActivityEnvironment(undefined, { logger: silent });
    const run = env.run(() =>
      withHeartbeat(
        (signal) =>
          new Promise<string>((resolve, reject) => {
            signal.addEventListener('abort', () => reject(new Error('download aborted')));
            setTimeout(() => resolve('finished'), 5_000).unref();
          }),
        { intervalMs: 10 },
      ),
    );
    setTimeout(() => env.cancel(), 20);
    await expect(run).rejects.toThrow(/aborted/);
  });

  it('runs plainly outside an activity (the local runner)', async () => {
    await expect(withHeartbeat(async (signal) => (signal.aborted ? 'aborted' : 'ran'))).resolves.toBe('ran');
  });
});

describe('worker options', () => {
  it('sets a shutdown grace time, the task queue and the workflows, and wraps the activities', () => {
    const { acts } = createFakes();
    const o = workerOptions({ activities: acts }, {} as never);
    expect(o.shutdownGraceTime).toBe(WORKER_DEFAULTS.shutdownGraceTime);
    expect(o.taskQueue).toBe('cbp');
    expect(o.namespace).toBe('default');
    expect(o.workflowsPath).toBe(WORKFLOWS_PATH);
    expect(o.activities).not.toBe(acts);
    const custom = workerOptions({ activities: acts, shutdownGraceTime: '5 seconds', taskQueue: 'q2', workflowBundle: { code: 'x' } }, {} as never);
    expect(custom).toMatchObject({ shutdownGraceTime: '5 seconds', taskQueue: 'q2', workflowBundle: { code: 'x' } });
    expect(custom.workflowsPath).toBeUndefined();
  });

  it('runs the bundle `npm run build` wrote when there is one; from the sources, bundles workflows/temporal.ts at start', () => {
    expect(PREBUILT_BUNDLE_PATH).toBeUndefined(); // the sources never run a bundle built from older code
    expect(WORKFLOWS_PATH.endsWith(path.join('workflows', 'temporal.ts'))).toBe(true);
    expect(workflowSource()).toEqual({ workflowsPath: WORKFLOWS_PATH });
    const dir = tempDir();
    const built = path.join(dir, 'workflow-bundle.js');
    expect(workflowSource(undefined, built)).toEqual({ workflowsPath: WORKFLOWS_PATH }); // not built (yet)
    fs.writeFileSync(built, '// bundle');
    expect(workflowSource(undefined, built)).toEqual({ workflowBundle: { codePath: built } });
    expect(workflowSource({ code: 'x' }, built)).toEqual({ workflowBundle: { code: 'x' } });
  });
});

describe('where Temporal is', () => {
  it('reads address, namespace, task queue and API key from the configuration', () => {
    expect(temporalTargetFromConfig(loadConfig({ env: {} }))).toEqual({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'cbp' });
    const cfg = loadConfig({ env: { TEMPORAL_ADDRESS: 'ns.tmprl.cloud:7233', TEMPORAL_NAMESPACE: 'ns', TEMPORAL_TASK_QUEUE: 'q', TEMPORAL_API_KEY: 'k' } });
    expect(temporalTargetFromConfig(cfg)).toEqual({ address: 'ns.tmprl.cloud:7233', namespace: 'ns', taskQueue: 'q', apiKey: 'k' });
  });
});

interface FakeScheduleClient extends ScheduleClientLike {
  created: ScheduleOptions[];
  updated: Array<{ id: string; def: unknown }>;
  backfills: Array<{ id: string; req: unknown }>;
}

function fakeScheduleClient(existing: string[] = []): FakeScheduleClient {
  const ids = new Set(existing);
  const c = {
    created: [] as ScheduleOptions[],
    updated: [] as Array<{ id: string; def: unknown }>,
    backfills: [] as Array<{ id: string; req: unknown }>,
    schedule: {
      async create(o: ScheduleOptions) {
        if (ids.has(o.scheduleId)) throw new ScheduleAlreadyRunning('exists', o.scheduleId);
        ids.add(o.scheduleId);
        c.created.push(o);
        return {};
      },
      getHandle(id: string) {
        return {
          async update(fn: (prev: unknown) => unknown) {
            c.updated.push({ id, def: fn({ state: { paused: false } }) });
          },
          async backfill(req: unknown) {
            c.backfills.push({ id, req });
          },
        };
      },
    },
  };
  return c as unknown as FakeScheduleClient;
}

const NIGHTLY = { input: { windowDays: 7, lookbackDays: 60 } };

describe('schedules', () => {
  it('creates the nightly and ingest schedules with explicit overlap and catch-up window', async () => {
    const client = fakeScheduleClient();
    const r = await applySchedules(client, { nightly: { ...NIGHTLY, at: '03:15', timezone: 'Europe/Berlin' }, taskQueue: 'cbp-q' });
    expect(r).toEqual([
      { scheduleId: 'cbp-nightly', action: 'created' },
      { scheduleId: 'cbp-ingest', action: 'created' },
    ]);
    const [nightly, ingest] = client.created;
    expect(nightly!.spec).toEqual({ calendars: [{ hour: 3, minute: 15, comment: 'cbp nightly' }], timezone: 'Europe/Berlin' });
    expect(nightly!.action).toMatchObject({ type: 'startWorkflow', workflowType: 'nightlyWorkflow', taskQueue: 'cbp-q', args: [{ windowDays: 7, lookbackDays: 60 }] });
    expect((nightly!.action.args as Array<Record<string, unknown>>)[0]!.asOf).toBeUndefined(); // from the nominal time
    expect(nightly!.policies).toEqual({ overlap: ScheduleOverlapPolicy.BUFFER_ONE, catchupWindow: '1 day' });
    expect(ingest!.spec).toEqual({ intervals: [{ every: '5m' }] });
    expect(ingest!.action).toMatchObject({ workflowType: 'ingestEventsWorkflow' });
    expect(ingest!.policies?.catchupWindow).toBe('10 minutes');
  });

  it('updates schedules that already exist to the same definition, so applying twice is harmless', async () => {
    const client = fakeScheduleClient(['cbp-nightly', 'cbp-ingest']);
    const r = await applySchedules(client, { nightly: NIGHTLY });
    expect(r.map((x) => x.action)).toEqual(['updated', 'updated']);
    const defs = scheduleDefinitions({ nightly: NIGHTLY });
    expect(client.updated[0]).toEqual({ id: 'cbp-nightly', def: { spec: defs[0]!.spec, action: defs[0]!.action, policies: defs[0]!.policies, state: { paused: false } } });
    const again = fakeScheduleClient();
    await applySchedules(again, { nightly: NIGHTLY });
    expect(await applySchedules(again, { nightly: NIGHTLY })).toEqual([
      { scheduleId: 'cbp-nightly', action: 'updated' },
      { scheduleId: 'cbp-ingest', action: 'updated' },
    ]);
  });

  it('takes time, zone, interval and window sizes from the configuration', () => {
    const cfg = loadConfig({ env: { CBP_NIGHTLY_AT: '04:10', CBP_SCHEDULE_TIMEZONE: 'America/New_York', CBP_INGEST_EVERY: '2m', CBP_WINDOW_DAYS: '3', TEMPORAL_TASK_QUEUE: 'q9' } });
    const o = scheduleOptionsFromConfig(cfg);
    expect(o).toMatchObject({ taskQueue: 'q9', nightly: { at: '04:10', timezone: 'America/New_York', input: { windowDays: 3, lookbackDays: 60, parallelism: 2 } }, ingest: { every: '2m' } });
    const [nightly] = scheduleDefinitions(o);
    expect(nightly!.spec).toMatchObject({ calendars: [{ hour: 4, minute: 10 }], timezone: 'America/New_York' });
  });

  it('gives a host its own ingest schedule on its own queue when CBP_INGEST_TASK_QUEUE is set (receivers on several hosts)', () => {
    const one = scheduleDefinitions(scheduleOptionsFromConfig(loadConfig({ env: { TEMPORAL_TASK_QUEUE: 'cbp' } })));
    expect(one.map((d) => [d.scheduleId, (d.action as { taskQueue: string }).taskQueue])).toEqual([['cbp-nightly', 'cbp'], ['cbp-ingest', 'cbp']]);
    const host = scheduleDefinitions(scheduleOptionsFromConfig(loadConfig({ env: { TEMPORAL_TASK_QUEUE: 'cbp', CBP_INGEST_TASK_QUEUE: 'cbp-ingest-a' } })));
    expect(host.map((d) => [d.scheduleId, (d.action as { taskQueue: string }).taskQueue])).toEqual([['cbp-nightly', 'cbp'], ['cbp-ingest-cbp-ingest-a', 'cbp-ingest-a']]);
  });

  it('adds the daily upkeep schedule when the store is a lake, running the maintenance workflow on the shared queue', () => {
    const file = scheduleDefinitions(scheduleOptionsFromConfig(loadConfig({ env: {} })));
    expect(file.map((d) => d.scheduleId)).toEqual(['cbp-nightly', 'cbp-ingest']);
    const lake = scheduleDefinitions(scheduleOptionsFromConfig(loadConfig({ env: { CBP_STORE: 'ducklake:postgres:dbname=cbp host=db', CBP_LAKE_DATA_PATH: '/shared/lake', CBP_SCHEDULE_TIMEZONE: 'Europe/Paris' } })));
    expect(lake.map((d) => d.scheduleId)).toEqual(['cbp-nightly', 'cbp-ingest', 'cbp-maintain']);
    expect(lake[2]).toMatchObject({
      spec: { calendars: [{ hour: 3, minute: 30 }], timezone: 'Europe/Paris' },
      action: { workflowType: 'maintainStoreWorkflow', taskQueue: 'cbp', args: [{}] },
    });
  });

  it('refuses a malformed time of day', () => {
    expect(parseAt('2:05')).toEqual({ hour: 2, minute: 5 });
    expect(() => parseAt('24:00')).toThrow(/HH:MM/);
    expect(() => parseAt('noon')).toThrow(/HH:MM/);
  });

  it('backfills the nightly schedule with BUFFER_ALL by default, never SKIP', async () => {
    const client = fakeScheduleClient(['cbp-nightly']);
    const r = await backfillSchedule(client, { from: '2026-03-01', to: '2026-03-10' });
    expect(r).toEqual({ scheduleId: 'cbp-nightly', start: '2026-03-01T00:00:00.000Z', end: '2026-03-10T23:59:59.999Z', overlap: 'BUFFER_ALL' });
    expect(client.backfills).toEqual([
      { id: 'cbp-nightly', req: [{ start: new Date('2026-03-01T00:00:00.000Z'), end: new Date('2026-03-10T23:59:59.999Z'), overlap: 'BUFFER_ALL' }] },
    ]);
    await backfillSchedule(client, { from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00Z', overlap: ScheduleOverlapPolicy.ALLOW_ALL });
    expect((client.backfills[1]!.req as Array<{ overlap: string }>)[0]!.overlap).toBe('ALLOW_ALL');
    await expect(backfillSchedule(client, { from: '2026-03-01', to: '2026-03-02', overlap: ScheduleOverlapPolicy.SKIP as never })).rejects.toThrow(/SKIP/);
    expect(client.backfills).toHaveLength(2);
  });

  it('refuses a backfill that starts after it ends or exceeds what the server buffers', async () => {
    const client = fakeScheduleClient(['cbp-nightly']);
    await expect(backfillSchedule(client, { from: '2026-03-10', to: '2026-03-01' })).rejects.toMatchObject({ code: 'CBP_ERR_WINDOW_RANGE' });
    await expect(backfillSchedule(client, { from: '2020-01-01', to: '2026-01-01' })).rejects.toThrow(/1000 runs/);
    expect(client.backfills).toEqual([]);
  });
});
