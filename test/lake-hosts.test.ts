// Two hosts of one lake, each with its webhook receiver's journal ingested by its own worker on its own task queue
// (issue #27), on a real Temporal dev server and a throwaway PostgreSQL: every event once, and the lake's daily upkeep
// on its schedule. A backfill spread over workers: lake-workers.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { startReceiver } from '../webhook/index.ts';
import { cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { payloadViolations } from './helpers/history-payloads.ts';
import { skipTemporal, temporalTitle } from './helpers/temporal-env.ts';
import { tempDir } from './helpers/tmp.ts';
import { historyOf, lakeWorld, until, worker } from './helpers/lake-workers.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

describe.skipIf(skipLake || skipTemporal)(`${lakeTitle('two hosts of one lake')}, ${temporalTitle('Temporal')}`, { timeout: 600_000 }, () => {
  const w = lakeWorld();

  it('ingests the journals of two receivers on two hosts, each on its own host\'s queue: every event once; the daily upkeep runs on its schedule', async () => {
    w.pg.createDb('receivers');
    const lake = { catalog: w.pg.dsn('receivers'), dataPath: tempDir('cbp-lake-data-') };
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
    const temporalEnv = { TEMPORAL_ADDRESS: w.env.address, TEMPORAL_NAMESPACE: w.env.namespace ?? 'default', TEMPORAL_TASK_QUEUE: taskQueue };
    const scheduleIds: string[] = [];
    try {
      for (const h of hosts) {
        const hostEnv = { CBP_JOURNAL_DIR: h.journalDir, CBP_INGEST_TASK_QUEUE: h.queue };
        await worker(w, lakeEnv, taskQueue, hostEnv);
        const applied = await cbp(['schedule', 'apply', '--json'], { ...lakeEnv, ...temporalEnv, ...hostEnv });
        expect(applied.code, applied.stderr).toBe(0);
        scheduleIds.push(`cbp-ingest-${h.queue}`);
      }
      for (const id of scheduleIds) await w.env.client.schedule.getHandle(id).trigger();
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
      await w.env.client.schedule.getHandle('cbp-maintain').trigger();
      const upkeep = await openStore({ dbPath: 'lake', lake, readOnly: true, migrate: false });
      try {
        const [run] = await until('the upkeep recorded', async () => {
          const rows = await upkeep.all<{ status: string; summary: string }>("SELECT status, summary::VARCHAR AS summary FROM runs WHERE workflow = 'maintainStore'").catch(() => []);
          return rows.length ? rows : false;
        });
        expect(run!.status).toBe('ok');
        expect(JSON.parse(run!.summary)).toMatchObject({ lake: true });
        // Its history, read against the payload rules; with CBP_RECORD_HISTORIES=1 kept as a replay fixture.
        const recent = (await w.env.client.schedule.getHandle('cbp-maintain').describe()).info.recentActions[0]!;
        const wf = w.env.client.workflow.getHandle(recent.action.workflow.workflowId, recent.action.workflow.firstExecutionRunId);
        await wf.result();
        const h = await historyOf(wf);
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
      for (const id of [...scheduleIds, 'cbp-nightly', 'cbp-maintain']) await w.env.client.schedule.getHandle(id).delete().catch(() => undefined);
    }
  });
});
