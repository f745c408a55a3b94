// Issue #10, part 2: the analysts' snapshot never stays behind the store. Every write transaction raises the
// store's generation, the snapshot carries the generation it was copied at, and every run's publish step
// publishes when the snapshot is older: a run killed between its commit and its publish is made good by the
// next run even when that one finds nothing new. A publish also removes the temp copies a killed publish
// left beside the snapshot, and nothing else. `cbp status` says when the snapshot is behind.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { collectStatus, humanStatus } from '../cli/commands/status.ts';
import type { Config } from '../lib/config.ts';
import type { RunningSandbox } from '../sandbox/index.ts';
import { openStore, type Store } from '../store/db.ts';
import { storeGeneration } from '../store/generation.ts';
import { ingestEvents } from '../store/ingest.ts';
import { publishIfBehind, publishSnapshot, snapshotGeneration } from '../store/snapshot.ts';
import { journalRecord } from '../webhook/server.ts';
import { openJournal } from '../webhook/journal.ts';
import { cbp, configFor, pipelineFor, sandbox, tempDir } from './activities-fixtures.ts';

let sb: RunningSandbox;
beforeAll(async () => {
  sb = await sandbox();
});
afterAll(async () => {
  await sb?.close();
});

const open: Store[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

async function store(dbPath: string, readOnly = false): Promise<Store> {
  const s = await openStore({ dbPath, readOnly });
  open.push(s);
  return s;
}

function closeAll(): void {
  for (const s of open.splice(0)) s.close();
}

/** A row of a table of the store (what it is does not matter here: that it is a write). */
const aFetch = (n: number) =>
  `INSERT INTO report_fetches VALUES ('chargebacks', DATE '2026-01-01' + ${n}, DATE '2026-01-01' + ${n}, now()::TIMESTAMP, now()::TIMESTAMP, 0, 0, NULL)`;

let seq = 0;
/** Writes `n` chargeback.new events into the journal and seals the segment (as a receiver's close does). */
async function journalEvents(dir: string, n: number): Promise<void> {
  const j = openJournal({ dir, checkIntervalMs: 0 });
  try {
    for (let i = 0; i < n; i++) {
      seq += 1;
      const event = { event_guid: `evt_fresh_${seq}`, event_type: 'chargeback.new', event_timestamp: '2026-01-01T00:00:00Z', mid: 'M1', case_number: `C${seq}` };
      await j.append(journalRecord(Buffer.from(JSON.stringify(event)), new Date(Date.UTC(2026, 0, 1, 0, 0, seq))));
    }
  } finally {
    await j.close();
  }
}

async function countEvents(dbPath: string): Promise<number> {
  const s = await openStore({ dbPath, readOnly: true, migrate: false });
  try {
    return (await s.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM events_raw'))[0].n;
  } finally {
    s.close();
  }
}

describe('the store generation', () => {
  it('rises in every committed write transaction, not in one rolled back, and not for the run log', async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const g0 = (await storeGeneration(s)) as number;
    expect(g0).toBeGreaterThanOrEqual(1);
    await s.transaction((t) => t.run(aFetch(1)));
    expect(await storeGeneration(s)).toBe(g0 + 1);
    await expect(
      s.transaction(async (t) => {
        await t.run(aFetch(2));
        throw new Error('disk full');
      }),
    ).rejects.toThrow('disk full');
    expect(await storeGeneration(s)).toBe(g0 + 1);
    await s.transaction((t) => t.run("INSERT INTO runs VALUES ('r1', 'nightly', 'ok', now()::TIMESTAMP, now()::TIMESTAMP, NULL, '{}', NULL)"), { generation: false });
    expect(await storeGeneration(s)).toBe(g0 + 1);
    // A nested transaction joins the outer one: one commit, one step.
    await s.transaction(async (t) => {
      await t.transaction((u) => u.run(aFetch(3)));
      await t.run(aFetch(4));
    });
    expect(await storeGeneration(s)).toBe(g0 + 2);
  });

  it('is copied into the snapshot, which is published only when behind', async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const snap = path.join(dir, 'published', 'cbp.duckdb');
    const first = await publishIfBehind(s, { snapshotPath: snap });
    expect(first).toMatchObject({ published: true, generation: await storeGeneration(s) });
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: false, generation: first.generation });
    await s.transaction((t) => t.run(aFetch(1)));
    expect(await snapshotGeneration(s, snap)).toEqual({ exists: true, generation: first.generation });
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: true, generation: (first.generation as number) + 1 });
    // A snapshot that is gone, or not a database, is published again.
    fs.rmSync(snap);
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: true });
    fs.writeFileSync(snap, 'not a database');
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: true });
    expect(await snapshotGeneration(s, snap)).toEqual({ exists: true, generation: (first.generation as number) + 1 });
  });
});

describe('a run killed between its commit and its publish', { timeout: 120_000 }, () => {
  it('`cbp run ingest` run again finds nothing new, and still publishes the events the killed run committed', async () => {
    const dir = tempDir();
    const env = sandboxEnv(sb, dir);
    const journalDir = env.CBP_JOURNAL_DIR;
    // A first run publishes a snapshot of 2 events.
    await journalEvents(journalDir, 2);
    const ok = await cbp(['run', 'ingest', '--json'], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ loaded: 2, snapshot: { published: true } });
    expect(await countEvents(env.CBP_SNAPSHOT_PATH)).toBe(2);

    // The killed run: ingest's store step commits 5 more events (and archives the segment), then the process
    // dies before its publish.
    await journalEvents(journalDir, 5);
    const s = await openStore({ dbPath: env.CBP_DB_PATH });
    try {
      expect(await ingestEvents({ store: s, journalDir })).toMatchObject({ loaded: 5 });
    } finally {
      s.close();
    }
    expect(await countEvents(env.CBP_SNAPSHOT_PATH)).toBe(2);

    // The re-run: nothing left to load, and the snapshot catches up.
    const again = await cbp(['run', 'ingest', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ loaded: 0, segments: [], snapshot: { published: true } });
    expect(await countEvents(env.CBP_SNAPSHOT_PATH)).toBe(7);
    expect(await countEvents(env.CBP_DB_PATH)).toBe(7);
    // And a third run leaves the current snapshot alone.
    const third = await cbp(['run', 'ingest'], env);
    expect(third.stdout).toContain('already up to date');
  });

  it('the ingest workflow with the real activities: a publish that failed once is made good by the next run, which loads nothing', async () => {
    const dir = tempDir();
    const cfg: Config = configFor(sb, dir);
    await journalEvents(cfg.journalDir as string, 3);
    let failures = 1;
    const p = await pipelineFor(cfg, {
      wrap: (a) => ({
        ...a,
        async publishSnapshot() {
          if (failures-- > 0) throw new Error('killed during publish');
          return a.publishSnapshot();
        },
      }),
    });
    try {
      await expect(p.runner.ingestEvents()).rejects.toThrow('killed during publish');
      expect(fs.existsSync(cfg.snapshotPath)).toBe(false);
      const r = await p.runner.ingestEvents();
      expect(r).toMatchObject({ segments: 0, events: 0 });
      // The first run's record says it failed; the second loaded nothing and is not recorded.
      expect(await p.store.all('SELECT status FROM runs')).toEqual([{ status: 'failed' }]);
    } finally {
      await p.close();
    }
    expect(await countEvents(cfg.snapshotPath)).toBe(3);
  });
});

describe('cbp status and the snapshot', () => {
  it('says when the snapshot is behind the store, and what to run', async () => {
    const dir = tempDir();
    const cfg = configFor(sb, dir);
    await journalEvents(cfg.journalDir as string, 1);
    const s = await store(cfg.dbPath);
    await ingestEvents({ store: s, journalDir: cfg.journalDir as string });
    closeAll();
    let r = await collectStatus(cfg);
    expect(r.snapshot).toMatchObject({ exists: false, behind: true });
    expect(humanStatus(r)).toContain('not published yet');

    const w = await store(cfg.dbPath);
    await publishSnapshot(w, { snapshotPath: cfg.snapshotPath });
    await journalEvents(cfg.journalDir as string, 1);
    await ingestEvents({ store: w, journalDir: cfg.journalDir as string });
    const g = await storeGeneration(w);
    closeAll();
    r = await collectStatus(cfg);
    expect(r.snapshot).toMatchObject({ exists: true, behind: true, storeGeneration: g, generation: (g as number) - 1 });
    expect(humanStatus(r)).toMatch(/Snapshot .*: BEHIND the store .* run `cbp db snapshot`/);

    const db = await cbp(['db', 'snapshot'], sandboxEnv(sb, dir));
    expect(db.code, db.stderr).toBe(0);
    r = await collectStatus(cfg);
    expect(r.snapshot).toMatchObject({ behind: false, generation: g });
    expect(humanStatus(r)).toContain(`up to date (generation ${g})`);
  });
});

describe('temp copies a killed publish left', () => {
  it('are removed by the next publish: only names of its own pattern, and never one a live process is writing', async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const pub = path.join(dir, 'published');
    fs.mkdirSync(pub, { recursive: true });
    // A process that has ended: its pid names a publish that can no longer be running.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const leftovers = [`cbp.duckdb.tmp-${gone}-1767225600000`, `cbp.duckdb.tmp-${gone}-1767225600000.wal`];
    const kept = [
      `cbp.duckdb.tmp-${process.ppid}-1767225600000`, // a live process: perhaps publishing right now
      'cbp.duckdb.tmp-notes',
      'cbp.duckdb.tmp-12-34.bak',
      'other.duckdb.tmp-99999999-1',
      'cbp.duckdb.wal.tmp-1-2',
      'README.txt',
    ];
    for (const f of [...leftovers, ...kept]) fs.writeFileSync(path.join(pub, f), 'x'.repeat(64));
    const r = await publishSnapshot(s, { snapshotPath: path.join(pub, 'cbp.duckdb') });
    expect(r.removedTemps.sort()).toEqual(leftovers.sort());
    expect(fs.readdirSync(pub).sort()).toEqual(['cbp.duckdb', ...kept].sort());
    // The check that finds the snapshot current cleans up too.
    fs.writeFileSync(path.join(pub, leftovers[0]), 'x');
    expect(await publishIfBehind(s, { snapshotPath: path.join(pub, 'cbp.duckdb') })).toMatchObject({ published: false, removedTemps: [leftovers[0]] });
  });
});
