// Issue #10, part 2: the analysts' snapshot never stays behind the store. Every write transaction raises the
// store's generation, the snapshot carries the generation it was copied at, and every run's publish step
// publishes when the snapshot is older: a run killed between its commit and its publish is made good by the
// next run even when that one finds nothing new. A publish also removes the temp copies a killed publish
// left beside the snapshot, and nothing else. `cbp status` says when the snapshot is behind.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { collectStatus, humanStatus } from '../cli/commands/status.ts';
import type { Config } from '../lib/config.ts';
import type { RunningSandbox } from '../sandbox/index.ts';
import { DEFAULT_MIGRATIONS_DIR, openStore, type Store } from '../store/db.ts';
import { ConfigError } from '../lib/errors.ts';
import { storeGeneration, storeVersion } from '../store/generation.ts';
import { ingestEvents } from '../store/ingest.ts';
import { publishIfBehind, publishSnapshot, removeStaleTemps, snapshotGeneration } from '../store/snapshot.ts';
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

  it('rises when an open applies a migration (the snapshot must take its tables), not when it applies none', async () => {
    const dir = tempDir();
    const older = path.join(dir, 'migrations');
    fs.mkdirSync(older);
    const files = fs.readdirSync(DEFAULT_MIGRATIONS_DIR).filter((f) => f.endsWith('.sql')).sort();
    for (const f of files.slice(0, -1)) fs.copyFileSync(path.join(DEFAULT_MIGRATIONS_DIR, f), path.join(older, f));
    const dbPath = path.join(dir, 'cbp.duckdb');
    (await openStore({ dbPath, migrationsDir: older })).close();
    const before = await openStore({ dbPath, readOnly: true });
    const g0 = (await storeGeneration(before)) as number;
    before.close();
    const s = await openStore({ dbPath });
    expect(s.migration?.applied.map((m) => m.version)).toEqual([Number(files.at(-1)!.slice(0, 3))]);
    expect(await storeGeneration(s)).toBe(g0 + 1);
    s.close();
    const again = await openStore({ dbPath });
    expect(again.migration?.applied).toEqual([]);
    expect(await storeGeneration(again)).toBe(g0 + 1);
    again.close();
  });

  it('is copied into the snapshot, which is published only when behind', async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const snap = path.join(dir, 'published', 'cbp.duckdb');
    const first = await publishIfBehind(s, { snapshotPath: snap });
    expect(first).toMatchObject({ published: true, generation: await storeGeneration(s) });
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: false, generation: first.generation });
    await s.transaction((t) => t.run(aFetch(1)));
    expect(await snapshotGeneration(s, snap)).toEqual({ exists: true, generation: first.generation, storeId: first.storeId });
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: true, generation: (first.generation as number) + 1 });
    // A snapshot that is gone, or not a database, is published again.
    fs.rmSync(snap);
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: true });
    fs.writeFileSync(snap, 'not a database');
    expect(await publishIfBehind(s, { snapshotPath: snap })).toMatchObject({ published: true });
    expect(await snapshotGeneration(s, snap)).toEqual({ exists: true, generation: (first.generation as number) + 1, storeId: first.storeId });
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
    await journalEvents(cfg.journalDir, 3);
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
      // The first run's record says it failed; the second loaded nothing, and is recorded as the failure's end (an empty
      // ingest after a failed one is: its success is what sends pipeline_recovered, issue #29).
      expect(await p.store.all('SELECT status FROM runs ORDER BY finished_at')).toEqual([{ status: 'failed' }, { status: 'ok' }]);
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
    await journalEvents(cfg.journalDir, 1);
    const s = await store(cfg.dbPath);
    await ingestEvents({ store: s, journalDir: cfg.journalDir });
    closeAll();
    let r = await collectStatus(cfg);
    expect(r.snapshot).toMatchObject({ exists: false, behind: true });
    expect(humanStatus(r)).toContain('not published yet');

    const w = await store(cfg.dbPath);
    await publishSnapshot(w, { snapshotPath: cfg.snapshotPath });
    await journalEvents(cfg.journalDir, 1);
    await ingestEvents({ store: w, journalDir: cfg.journalDir });
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

/** Another process holding the OS lock of `file` (as a publish holds `<temp>.lock`); kill() ends it as kill -9 does. */
async function lockHolder(file: string): Promise<{ pid: number; release(): Promise<void>; kill(): Promise<void> }> {
  const mod = createRequire(import.meta.url).resolve('fs-native-extensions');
  const code = `const ext = require(${JSON.stringify(mod)}); const fs = require('fs');
    const fd = fs.openSync(process.argv[1], fs.constants.O_RDWR | fs.constants.O_CREAT);
    if (!ext.tryLock(fd)) process.exit(3);
    process.stdout.write('locked'); process.stdin.on('end', () => process.exit(0)); process.stdin.resume();`;
  const child = spawn(process.execPath, ['-e', code, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((res) => child.once('exit', () => res()));
  await new Promise<void>((res, rej) => {
    child.stdout.once('data', () => res());
    child.once('exit', (c) => rej(new Error(`the lock holder exited with ${c}`)));
  });
  return {
    pid: child.pid as number,
    release: async () => {
      child.stdin.end();
      await exited;
    },
    kill: async () => {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

describe('temp copies a killed publish left', () => {
  it('are removed by the next publish: only names of its own pattern, whatever pid they carry, never one whose publish holds its lock', async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const pub = path.join(dir, 'published');
    fs.mkdirSync(pub, { recursive: true });
    // A process that has ended: its pid names a publish that can no longer be running.
    const gone = spawnSync(process.execPath, ['-e', '0']).pid as number;
    const leftovers = [
      `cbp.duckdb.tmp-${gone}-1767225600000`,
      `cbp.duckdb.tmp-${gone}-1767225600000.wal`,
      // Pids now held by live processes (a restarted container's pid 1, this test's parent): a pid says
      // nothing about whether its publish still runs.
      'cbp.duckdb.tmp-1-1767225600001',
      'cbp.duckdb.tmp-1-1767225600001.wal',
      `cbp.duckdb.tmp-${process.ppid}-1767225600002`,
      // The lock file of a publish killed before its copy began.
      `cbp.duckdb.tmp-${gone}-1767225600003.lock`,
    ];
    const kept = ['cbp.duckdb.tmp-notes', 'cbp.duckdb.tmp-12-34.bak', 'other.duckdb.tmp-99999999-1', 'cbp.duckdb.wal.tmp-1-2', 'README.txt'];
    // A publish under way in another process: it holds the lock beside its copy.
    const live = `cbp.duckdb.tmp-${gone}-1767225600004`;
    const holder = await lockHolder(path.join(pub, `${live}.lock`));
    try {
      for (const f of [...leftovers, ...kept, live, `${live}.wal`]) fs.writeFileSync(path.join(pub, f), 'x'.repeat(64));
      const r = await publishSnapshot(s, { snapshotPath: path.join(pub, 'cbp.duckdb') });
      expect(r.removedTemps.sort()).toEqual(leftovers.filter((f) => !f.endsWith('.lock')).sort());
      expect(fs.readdirSync(pub).sort()).toEqual(['cbp.duckdb', ...kept, live, `${live}.wal`, `${live}.lock`].sort());
      // The check that finds the snapshot current cleans up too.
      fs.writeFileSync(path.join(pub, leftovers[2]), 'x');
      expect(await publishIfBehind(s, { snapshotPath: path.join(pub, 'cbp.duckdb') })).toMatchObject({ published: false, removedTemps: [leftovers[2]] });
      expect(fs.existsSync(path.join(pub, live))).toBe(true);
    } finally {
      // Killed mid-publish: the kernel drops its lock, and the next publish removes its copy.
      await holder.kill();
    }
    expect(removeStaleTemps(path.join(pub, 'cbp.duckdb')).sort()).toEqual([live, `${live}.wal`].sort());
    expect(fs.readdirSync(pub).sort()).toEqual(['cbp.duckdb', ...kept].sort());
  });

  it('without a native lock, fall back to the pid rule: a live pid is left alone', async () => {
    const dir = tempDir();
    const snap = path.join(dir, 'cbp.duckdb');
    const gone = spawnSync(process.execPath, ['-e', '0']).pid as number;
    for (const f of [`cbp.duckdb.tmp-${gone}-1`, `cbp.duckdb.tmp-${process.ppid}-2`]) fs.writeFileSync(path.join(dir, f), 'x');
    expect(removeStaleTemps(snap, { tryLock: null })).toEqual([`cbp.duckdb.tmp-${gone}-1`]);
    expect(fs.readdirSync(dir)).toEqual([`cbp.duckdb.tmp-${process.ppid}-2`]);
  });

  it('a publish holds the lock beside its copy while it writes, and leaves no lock file behind', async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const pub = path.join(dir, 'published');
    const seen: string[] = [];
    // Looks at the folder while the copy is being written (the COPY runs on DuckDB's threads).
    const run = s.run.bind(s);
    s.run = async (sql, params) => {
      if (sql.startsWith('COPY FROM DATABASE')) {
        seen.push(...fs.readdirSync(pub));
        // Another publish's cleanup now: it must leave this copy alone.
        expect(removeStaleTemps(path.join(pub, 'cbp.duckdb'))).toEqual([]);
      }
      return run(sql, params);
    };
    await publishSnapshot(s, { snapshotPath: path.join(pub, 'cbp.duckdb') });
    expect(seen.some((f) => /^cbp\.duckdb\.tmp-\d+-\d+\.lock$/.test(f))).toBe(true);
    expect(fs.readdirSync(pub)).toEqual(['cbp.duckdb']);
  });
});

describe('a store started over', () => {
  const writes = async (s: Store, n: number, from = 0) => {
    for (let i = 0; i < n; i++) await s.transaction((t) => t.run(aFetch(from + i)));
  };
  const fetches = async (dbPath: string) => {
    const r = await store(dbPath, true);
    try {
      return (await r.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM report_fetches'))[0].n;
    } finally {
      r.close();
      open.splice(open.indexOf(r), 1);
    }
  };

  it('gets its snapshot published, though the old snapshot holds a higher or equal generation', async () => {
    const dir = tempDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    const snapshotPath = path.join(dir, 'published', 'cbp.duckdb');
    const old = await store(dbPath);
    await writes(old, 20);
    const first = await publishIfBehind(old, { snapshotPath });
    expect(first).toMatchObject({ published: true, storeId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    closeAll();
    fs.rmSync(dbPath);
    fs.rmSync(`${dbPath}.wal`, { force: true });

    const fresh = await store(dbPath);
    const v = await storeVersion(fresh);
    expect(v.storeId).not.toBe(first.storeId);
    expect(v.generation).toBeLessThan(first.generation as number);
    // Written up to the very generation the old snapshot holds: the number alone would call it current.
    await writes(fresh, (first.generation as number) - (v.generation as number), 100);
    expect(await storeGeneration(fresh)).toBe(first.generation);
    const again = await publishIfBehind(fresh, { snapshotPath });
    expect(again).toMatchObject({ published: true, generation: first.generation, storeId: v.storeId });
    closeAll();
    expect(await fetches(snapshotPath)).toBe(await fetches(dbPath));
  });

  it('put back from an older copy of itself gets its snapshot published too (same id, lower generation)', async () => {
    const dir = tempDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    const snapshotPath = path.join(dir, 'published', 'cbp.duckdb');
    let s = await store(dbPath);
    await writes(s, 2);
    closeAll();
    fs.copyFileSync(dbPath, path.join(dir, 'backup.duckdb'));
    s = await store(dbPath);
    await writes(s, 3, 10);
    expect(await publishIfBehind(s, { snapshotPath })).toMatchObject({ published: true });
    closeAll();
    fs.copyFileSync(path.join(dir, 'backup.duckdb'), dbPath);
    s = await store(dbPath);
    expect(await publishIfBehind(s, { snapshotPath })).toMatchObject({ published: true });
    expect(await publishIfBehind(s, { snapshotPath })).toMatchObject({ published: false });
    closeAll();
    expect(await fetches(snapshotPath)).toBe(2);
  });

  it('`cbp run ingest` after the store file was deleted publishes, and `cbp status` says a snapshot of another store is not up to date', async () => {
    const dir = tempDir();
    const env = sandboxEnv(sb, dir);
    const cfg = configFor(sb, dir);
    await journalEvents(env.CBP_JOURNAL_DIR, 3);
    const first = await cbp(['run', 'ingest', '--json'], env);
    expect(JSON.parse(first.stdout)).toMatchObject({ loaded: 3, snapshot: { published: true } });
    // The old store, written up past where the new one will be.
    let s = await store(env.CBP_DB_PATH);
    await writes(s, 10);
    await publishIfBehind(s, { snapshotPath: env.CBP_SNAPSHOT_PATH });
    closeAll();
    fs.rmSync(env.CBP_DB_PATH);

    // A new store, and the snapshot of the old one left in place: status reads the ids.
    s = await store(env.CBP_DB_PATH);
    closeAll();
    let r = await collectStatus(cfg);
    expect(r.snapshot).toMatchObject({ exists: true, behind: true });
    expect(r.snapshot.fromStore).not.toBe(r.snapshot.storeId);
    expect(humanStatus(r)).toMatch(/Snapshot .*: a copy of ANOTHER store .* run `cbp db snapshot`/);

    await journalEvents(env.CBP_JOURNAL_DIR, 1);
    const again = await cbp(['run', 'ingest', '--json'], env);
    expect(again.code, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ loaded: 1, snapshot: { published: true } });
    expect(await countEvents(env.CBP_SNAPSHOT_PATH)).toBe(1);
    r = await collectStatus(cfg);
    expect(r.snapshot).toMatchObject({ behind: false });
    expect(r.snapshot.fromStore).toBe(r.snapshot.storeId);
  });
});

describe('a snapshot path that names the store', () => {
  it('is refused by the publish (a ConfigError naming both), nothing renamed, and later writes are kept', async () => {
    const dir = tempDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    fs.symlinkSync(dir, path.join(dir, 'alias'));
    const s = await store(dbPath);
    await s.transaction((t) => t.run(aFetch(1)));
    const inode = fs.statSync(dbPath).ino;
    for (const snapshotPath of [dbPath, path.join(dir, 'alias', 'cbp.duckdb'), `${dbPath}.wal`]) {
      await expect(publishSnapshot(s, { snapshotPath })).rejects.toThrow(ConfigError);
      await expect(publishIfBehind(s, { snapshotPath })).rejects.toThrow(/the snapshot path .* and the store.* are the same file/);
    }
    expect(fs.statSync(dbPath).ino).toBe(inode);
    expect(fs.readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
    await s.transaction((t) => t.run(aFetch(2)));
    closeAll();
    const again = await store(dbPath, true);
    expect(await again.all('SELECT count(*)::INTEGER AS n FROM report_fetches')).toEqual([{ n: 2 }]);
  });

  it('`cbp db snapshot` with CBP_SNAPSHOT_PATH set to the store refuses at start, exit 2, naming both settings', async () => {
    const dir = tempDir();
    const env = { ...sandboxEnv(sb, dir), CBP_SNAPSHOT_PATH: path.join(dir, 'cbp.duckdb') };
    const r = await cbp(['db', 'snapshot'], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/CBP_SNAPSHOT_PATH .* and CBP_DB_PATH \(the store\) .* are the same file/);
    expect(fs.existsSync(path.join(dir, 'cbp.duckdb'))).toBe(false);
  });
});
