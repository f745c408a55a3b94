// Several `cbp worker` processes on one task queue and one lake (issue #27), on a real Temporal dev server and a
// throwaway PostgreSQL: each worker in a working folder of its own, as if on its own host. A backfill's windows are
// spread across them; after kill -9 of one mid-download the other finishes the run, and the lake equals what the
// local runner builds alone, nothing loaded twice; `cbp status` reads the lake meanwhile.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { addDays } from '../lib/utc.ts';
import { startSandbox, type RunningSandbox } from '../sandbox/index.ts';
import { parseScenario } from '../sandbox/scenario.ts';
import { openStore } from '../store/db.ts';
import { startReceiver } from '../webhook/index.ts';
import type { BackfillInput, BackfillResult } from '../workflows/backfill.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { admin, cbp, configFor, pipelineFor, WEBHOOK } from './activities-fixtures.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { dumpStore } from './helpers/store-dump.ts';
import { payloadViolations } from './helpers/history-payloads.ts';
import { quietTemporalRuntime, timeOutHeartbeats, skipTemporal, startTemporalEnv, temporalTitle } from './helpers/temporal-env.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const TODAY = new Date().toISOString().slice(0, 10);
const SCENARIO = parseScenario({
  seed: 2727, history_months: 3, horizon_months: 0, orders: 0, order_share: 0,
  mids: [{ mid: '860100000027', alias: 'Lake Shop', monthly_transactions: 1500, profile: 'hovering' }],
});

let env: TestWorkflowEnvironment;
let sb: RunningSandbox;
let pg: Postgres;
const children: ChildProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The workers' output so far, shown when a wait runs out. */
const outputs: Array<() => string> = [];

/** Polls until probe gives a value; past 4 minutes, fails with what it waited for and the workers' last output. */
async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const end = Date.now() + 240_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`waited 4 minutes for ${what}; the workers said:\n${outputs.map((o) => o().slice(-3000)).join('\n---\n')}`);
    await sleep(250);
  }
}

/** A promise, or past `ms` a failure saying what was awaited, with the workers' last output. */
async function within<T>(what: string, p: Promise<T>, ms = 240_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${ms / 1000} s for ${what}; the workers said:\n${outputs.map((o) => o().slice(-4000)).join('\n---\n')}`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

type History = { events: Array<Record<string, any>> };
const historyOf = async (h: WorkflowHandle): Promise<History> => JSON.parse(historyToJSON(await h.fetchHistory())) as History;

/** A `cbp worker` child (with `args`) with a working folder of its own, on the lake and the task queue. */
async function worker(lakeEnv: Record<string, string>, taskQueue: string, host: Record<string, string> = {}, args: string[] = []): Promise<{ child: ChildProcess; exited: Promise<unknown>; output: () => string }> {
  const base = cleanEnv();
  const child = spawn(process.execPath, [cbpEntry(), 'worker', ...args], {
    cwd: ROOT,
    env: {
      ...base, ...sandboxEnv(sb, tempDir('cbp-host-')), ...lakeEnv, CBP_WEBHOOK_USERNAME: WEBHOOK.username, CBP_WEBHOOK_PASSWORD: WEBHOOK.password,
      CBP_LOG_LEVEL: 'info', TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: taskQueue,
      CBP_WORKER_METRICS_ADDR: '127.0.0.1:0', ...host,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  outputs.push(() => out);
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const exited = new Promise((r) => child.on('exit', r));
  const ready = await Promise.race([until('polling', async () => /cbp worker polling/.test(out)), exited.then(() => false)]);
  if (!ready) throw new Error(`cbp worker exited before polling:\n${out}`);
  return { child, exited, output: () => out };
}

describe.skipIf(skipLake || skipTemporal)(`${lakeTitle('several workers on one lake')}, ${temporalTitle('Temporal')}`, { timeout: 600_000 }, () => {
  beforeAll(async () => {
    quietTemporalRuntime();
    [env, sb, pg] = await Promise.all([startTemporalEnv(), startSandbox({ port: 0, start: `${TODAY}T00:00:00Z`, scenario: SCENARIO }), startPostgres()]);
  }, 180_000);
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await admin(sb, 'POST', '/faults', {}).catch(() => undefined);
    await sb?.close();
    await env?.teardown();
    await pg?.stop();
  });

  it('spreads a backfill over two workers; after kill -9 of one the other finishes it, and the lake equals a one-process run', async () => {
    pg.createDb('workers');
    const lake = { catalog: pg.dsn('workers'), dataPath: tempDir('cbp-lake-data-') };
    const lakeEnv = { CBP_STORE: `ducklake:postgres:${lake.catalog}`, CBP_LAKE_DATA_PATH: lake.dataPath };
    // The schema first, as `cbp db migrate` would: two workers starting together both migrate otherwise (also safe).
    expect((await cbp(['db', 'migrate'], lakeEnv)).code).toBe(0);
    const taskQueue = `cbp-lake-${randomUUID()}`;
    // One activity at a time each: the backfill's two downloads at once are one on each worker (Temporal may give both
    // to one worker's pollers otherwise, round after round).
    const [w1, w2] = await Promise.all([worker(lakeEnv, taskQueue, {}, ['--max-activities', '1']), worker(lakeEnv, taskQueue, {}, ['--max-activities', '1'])]);
    const input: BackfillInput = { from: addDays(TODAY, -30), to: addDays(TODAY, -25), kinds: ['chargebacks'], windowDays: 1, parallelism: 2 };
    await admin(sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 2500 } } });
    const handle = await env.client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue, workflowId: `cbp-lake-backfill-${randomUUID()}`, args: [input] });
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
    await admin(sb, 'POST', '/faults', {});
    // Its activities time out in seconds, not the production minute (timeOutHeartbeats), and run again on w2.
    const held = ((await handle.describe()).raw.pendingActivities ?? []).filter((a) => String(a.lastWorkerIdentity ?? '').split('@')[0] === String(w1.child.pid));
    await timeOutHeartbeats(env, handle, held.map((a) => a.activityId!));
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
    const cfg = configFor(sb, tempDir('cbp-local-'));
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

  it('ingests the journals of two receivers on two hosts, each on its own host\'s queue: every event once; the daily upkeep runs on its schedule', async () => {
    pg.createDb('receivers');
    const lake = { catalog: pg.dsn('receivers'), dataPath: tempDir('cbp-lake-data-') };
    const lakeEnv = { CBP_STORE: `ducklake:postgres:${lake.catalog}`, CBP_LAKE_DATA_PATH: lake.dataPath };
    expect((await cbp(['db', 'migrate'], lakeEnv)).code).toBe(0);
    // Two receivers, as on two hosts: 40 events each, 20 of them delivered to both (the service retried elsewhere).
    const creds = { username: 'cbp-hosts', password: 'receiver-password-1234567890' };
    const hosts = await Promise.all(['a', 'b'].map(async (name, h) => {
      const journalDir = tempDir(`cbp-journal-${name}-`);
      const r = await startReceiver({ ...creds, journalDir, host: '127.0.0.1', port: 0 });
      for (let i = h * 20; i < h * 20 + 40; i++) {
        const res = await fetch(r.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${creds.username}:${creds.password}`).toString('base64')}` },
          body: JSON.stringify({ event_guid: `ev_host_${i}`, event_type: 'chargeback.result', event_timestamp: '2026-11-01T09:00:00Z', chargeback_guid: `cb_${i}`, result: 'won' }),
        });
        expect(res.status).toBe(200);
      }
      await r.close(); // seals the open segment
      return { name, journalDir, queue: `cbp-ingest-host-${name}-${randomUUID().slice(0, 8)}` };
    }));
    const taskQueue = `cbp-lake-${randomUUID()}`;
    const temporalEnv = { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: taskQueue };
    const scheduleIds: string[] = [];
    try {
      for (const h of hosts) {
        const hostEnv = { CBP_JOURNAL_DIR: h.journalDir, CBP_INGEST_TASK_QUEUE: h.queue };
        await worker(lakeEnv, taskQueue, hostEnv);
        const applied = await cbp(['schedule', 'apply', '--json'], { ...lakeEnv, ...temporalEnv, ...hostEnv });
        expect(applied.code, applied.stderr).toBe(0);
        scheduleIds.push(`cbp-ingest-${h.queue}`);
      }
      for (const id of scheduleIds) await env.client.schedule.getHandle(id).trigger();
      const store = await openStore({ dbPath: 'lake', lake, readOnly: true, migrate: false });
      try {
        // (Both journals' first segments were once named alike, opened in the same millisecond: the second counted as a
        // re-load of the first, "segments 1" for ever. Segment names carry a random tag since: lib/journal-files.ts.)
        const [ev] = await until('both journals ingested', async () => {
          const rows = await store.all<{ n: number; d: number; segments: number }>(
            "SELECT count(*)::INTEGER AS n, count(DISTINCT event_guid)::INTEGER AS d, (SELECT count(*)::INTEGER FROM event_loads) AS segments FROM events_raw WHERE event_guid LIKE 'ev_host_%'",
          ).catch(() => []);
          return rows[0] && rows[0].segments >= 2 ? rows : false;
        });
        expect(ev).toEqual({ n: 60, d: 60, segments: 2 });
      } finally {
        store.close();
      }
      // The lake's daily upkeep (cbp schedule apply made it: the store is a lake), triggered: it runs and is recorded.
      await env.client.schedule.getHandle('cbp-maintain').trigger();
      const upkeep = await openStore({ dbPath: 'lake', lake, readOnly: true, migrate: false });
      try {
        const [run] = await until('the upkeep recorded', async () => {
          const rows = await upkeep.all<{ status: string; summary: string }>("SELECT status, summary::VARCHAR AS summary FROM runs WHERE workflow = 'maintainStore'").catch(() => []);
          return rows.length ? rows : false;
        });
        expect(run!.status).toBe('ok');
        expect(JSON.parse(run!.summary)).toMatchObject({ lake: true });
        // Its history, read against the payload rules; with CBP_RECORD_HISTORIES=1 kept as a replay fixture.
        const recent = (await env.client.schedule.getHandle('cbp-maintain').describe()).info.recentActions[0]!;
        const wf = env.client.workflow.getHandle(recent.action.workflow.workflowId, recent.action.workflow.firstExecutionRunId);
        await wf.result();
        const h = JSON.parse(historyToJSON(await wf.fetchHistory()));
        expect(payloadViolations(h, { forbidden: [] })).toEqual([]);
        if (process.env.CBP_RECORD_HISTORIES === '1') fs.writeFileSync(path.join(ROOT, 'test', 'fixtures', 'histories', 'maintain-store.json'), `${JSON.stringify(h, null, 1)}\n`);
      } finally {
        upkeep.close();
      }
      // Each journal was ingested on its own host: its sealed segment was moved to that host's archive.
      for (const h of hosts) {
        expect(fs.readdirSync(h.journalDir).filter((f) => f.endsWith('.closed'))).toEqual([]);
        expect(fs.readdirSync(path.join(h.journalDir, 'archive')).length).toBe(1);
      }
    } finally {
      for (const id of [...scheduleIds, 'cbp-nightly', 'cbp-maintain']) await env.client.schedule.getHandle(id).delete().catch(() => undefined);
    }
  });
});
