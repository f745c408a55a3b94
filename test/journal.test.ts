import { afterEach, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { tempDir } from './helpers/tmp.ts';
import { JournalUnavailableError, nodeJournalFs, openJournal, type Journal, type JournalFs } from '../webhook/journal.ts';
import { JournalLockedError, LOCK_FILE } from '../webhook/lock.ts';
import { listClosedSegments } from '../lib/journal-files.ts';

const tmp = () => tempDir();
const open: Journal[] = [];
afterEach(async () => {
  for (const j of open.splice(0)) await j.close();
});

/** nodeJournalFs with counted syncs and an optional gate that holds every datasync until released. */
function countingFs(opts: { failSync?: () => boolean } = {}) {
  const counts = { datasync: 0, write: 0 };
  let gate: Promise<void> | null = null;
  let release: () => void = () => {};
  const layer: JournalFs = {
    ...nodeJournalFs,
    async write(fd, buf) {
      counts.write++;
      await nodeJournalFs.write(fd, buf);
    },
    async datasync(fd) {
      counts.datasync++;
      if (gate) await gate;
      if (opts.failSync?.()) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      await nodeJournalFs.datasync(fd);
    },
  };
  return {
    layer,
    counts,
    hold() {
      gate = new Promise((r) => (release = r));
    },
    release() {
      gate = null;
      release();
    },
  };
}

function lines(dir: string, name: string): string[] {
  return fs.readFileSync(path.join(dir, name), 'utf8').split('\n').filter(Boolean);
}

describe('journal', () => {
  it('shares one fdatasync among appends that arrive while a sync is in flight (group commit)', async () => {
    const dir = tmp();
    const f = countingFs();
    const j = openJournal({ dir, fs: f.layer, checkIntervalMs: 0 });
    open.push(j);
    f.hold();
    const first = j.append('{"n":0}');
    // Wait until the first batch is inside its sync, then pile up 49 more.
    for (let i = 0; i < 100 && f.counts.datasync === 0; i++) await new Promise((r) => setTimeout(r, 5));
    const rest = Array.from({ length: 49 }, (_, i) => j.append(`{"n":${i + 1}}`));
    f.release();
    await Promise.all([first, ...rest]);
    expect(f.counts.datasync).toBeLessThan(50);
    expect(f.counts.datasync).toBe(2);
    expect(f.counts.write).toBe(2);
    await j.close();
    const [seg] = listClosedSegments(dir);
    expect(lines(dir, seg)).toHaveLength(50);
  });

  it('resolves an append only after its fdatasync, and rejects it when the sync fails', async () => {
    const dir = tmp();
    let fail = true;
    const f = countingFs({ failSync: () => fail });
    const j = openJournal({ dir, fs: f.layer, checkIntervalMs: 0 });
    open.push(j);
    await expect(j.append('{"a":1}')).rejects.toBeInstanceOf(JournalUnavailableError);
    expect(j.healthy).toBe(false);
    expect(j.status().lastError).toMatch(/EIO/);
    fail = false;
    await j.append('{"a":2}');
    expect(j.healthy).toBe(true);
    await j.close();
    // The failed batch was cut off: only the durable event remains, in a new segment.
    const all = listClosedSegments(dir).flatMap((s) => lines(dir, s));
    expect(all).toEqual(['{"a":2}']);
  });

  it('seals a segment once it reaches the size limit', async () => {
    const dir = tmp();
    const j = openJournal({ dir, segmentMaxBytes: 100, checkIntervalMs: 0 });
    open.push(j);
    for (let i = 0; i < 10; i++) await j.append(JSON.stringify({ i, pad: 'x'.repeat(30) }));
    const sealed = listClosedSegments(dir);
    // ~46-byte lines: a segment is sealed by the append that takes it to 100 bytes or more.
    expect(sealed).toHaveLength(3);
    for (const s of sealed) expect(lines(dir, s)).toHaveLength(3);
    await j.close();
    const all = listClosedSegments(dir).flatMap((s) => lines(dir, s));
    expect(all.map((l) => JSON.parse(l).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('seals a non-empty segment once it is older than the age limit', async () => {
    const dir = tmp();
    let now = Date.parse('2026-11-01T00:00:00Z');
    const j = openJournal({ dir, segmentMaxAgeMs: 60_000, now: () => new Date(now), checkIntervalMs: 0 });
    open.push(j);
    await j.rotateIfDue();
    expect(fs.readdirSync(dir).filter((n) => n.startsWith('seg-'))).toEqual([]); // nothing written, nothing opened
    await j.append('{"a":1}');
    now += 59_000;
    await j.rotateIfDue();
    expect(listClosedSegments(dir)).toEqual([]);
    now += 1_000;
    await j.rotateIfDue();
    expect(listClosedSegments(dir)).toHaveLength(1);
    expect(listClosedSegments(dir)[0]).toMatch(/^seg-0000000001-20261101T000000000Z-[0-9a-f]{8}\.closed$/);
    await j.append('{"a":2}');
    expect(j.status().segment).toMatch(/^seg-0000000002-.*\.ndjson$/);
  });

  it('seals a killed receiver\'s open segment at the next start, dropping only the torn last line', async () => {
    const dir = tmp();
    const name = 'seg-0000000007-20261101T000000000Z.ndjson';
    fs.writeFileSync(path.join(dir, name), '{"a":1}\n{"a":2}\n{"a":3, "torn');
    fs.writeFileSync(path.join(dir, LOCK_FILE), '999999999\n'); // a dead pid
    const events: string[] = [];
    const j = openJournal({ dir, checkIntervalMs: 0, onEvent: (e) => events.push(e.kind) });
    open.push(j);
    expect(listClosedSegments(dir)).toEqual(['seg-0000000007-20261101T000000000Z.closed']);
    expect(fs.readFileSync(path.join(dir, 'seg-0000000007-20261101T000000000Z.closed'), 'utf8')).toBe('{"a":1}\n{"a":2}\n');
    expect(events).toContain('recovered');
    expect(events).toContain('lock-taken-over');
    await j.append('{"a":4}');
    expect(j.status().segment).toMatch(/^seg-0000000008-/); // numbering continues after the recovered one
  });

  it('refuses a journal directory held by a live receiver', async () => {
    const dir = tmp();
    const j = openJournal({ dir, checkIntervalMs: 0 });
    open.push(j);
    expect(() => openJournal({ dir, checkIntervalMs: 0 })).toThrow(JournalLockedError);
    await j.close();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    const again = openJournal({ dir, checkIntervalMs: 0 });
    open.push(again);
  });

  it('takes over a lock left by a process that has exited', async () => {
    const dir = tmp();
    const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
    fs.writeFileSync(path.join(dir, LOCK_FILE), `${child.stdout.toString()}\n`);
    const j = openJournal({ dir, checkIntervalMs: 0 });
    open.push(j);
    expect(JSON.parse(fs.readFileSync(path.join(dir, LOCK_FILE), 'utf8'))).toMatchObject({ pid: process.pid });
  });

  it('takes over a lock carrying its own pid that it does not hold (a restarted container reuses pids)', async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, LOCK_FILE), `${process.pid}\n`);
    const j = openJournal({ dir, checkIntervalMs: 0 });
    open.push(j);
    expect(() => openJournal({ dir, checkIntervalMs: 0 })).toThrow(JournalLockedError);
  });

  it('answers appends made after close with JournalUnavailableError and finishes those already queued', async () => {
    const dir = tmp();
    const f = countingFs();
    const j = openJournal({ dir, fs: f.layer, checkIntervalMs: 0 });
    f.hold();
    const queued = j.append('{"q":1}');
    for (let i = 0; i < 100 && f.counts.datasync === 0; i++) await new Promise((r) => setTimeout(r, 5));
    const closing = j.close();
    await expect(j.append('{"q":2}')).rejects.toBeInstanceOf(JournalUnavailableError);
    f.release();
    await queued;
    await closing;
    expect(listClosedSegments(dir).flatMap((s) => lines(dir, s))).toEqual(['{"q":1}']);
  });
});
