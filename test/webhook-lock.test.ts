// The journal directory's lock is held by the operating system for as long as its receiver lives: a second
// receiver on the same directory is refused, and a receiver killed with SIGKILL leaves nothing that blocks
// the next start, whatever pid its lock file names (pids are reused, in containers almost always).
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openJournal, type Journal } from '../webhook/journal.ts';
import { JournalLockedError, LOCK_FILE } from '../webhook/lock.ts';
import { listClosedSegments } from '../lib/journal-files.ts';
import { acquireLock } from '../webhook/lock.ts';
import { startReceiver } from '../webhook/start.ts';
import { tempDir } from './helpers/tmp.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const JOURNAL = path.join(ROOT, 'webhook', 'journal.ts');

const tmp = () => tempDir('cbp-lock-');
const open: Journal[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const j of open.splice(0)) await j.close();
});
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A real receiver process's hold on dir: a child that opens the journal, appends one event, and waits. */
async function holdInChild(dir: string): Promise<ChildProcess> {
  const code = `
    const { openJournal } = await import(${JSON.stringify(JOURNAL)});
    const j = openJournal({ dir: ${JSON.stringify(dir)}, checkIntervalMs: 0 });
    await j.append('{"received_at":"2026-11-01T00:00:00.000Z","event":{"event_guid":"ev_child","event_type":"chargeback.new"}}');
    process.stdout.write('ready\\n');
    setInterval(() => {}, 1 << 30);`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve());
    child.on('exit', (c) => reject(new Error(`lock holder exited (${c}) before it was ready: ${stderr}`)));
  });
  return child;
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.on('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

describe('journal lock', () => {
  it('refuses a second receiver on a journal another live process holds, naming its pid', async () => {
    const dir = tmp();
    const holder = await holdInChild(dir);
    let err: unknown;
    try {
      open.push(openJournal({ dir, checkIntervalMs: 0 }));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(JournalLockedError);
    expect((err as JournalLockedError).code).toBe('CBP_ERR_JOURNAL_LOCKED');
    expect((err as Error).message).toContain(`pid ${holder.pid}`);
    expect((err as Error).message).toMatch(/--journal/);
    // The refused start touched nothing: the holder's open segment is still open.
    expect(fs.readdirSync(dir).filter((n) => n.endsWith('.ndjson'))).toHaveLength(1);
    await killed(holder);
  }, 30_000);

  it('refuses a second journal on the same directory inside one process', () => {
    const dir = tmp();
    open.push(openJournal({ dir, checkIntervalMs: 0 }));
    expect(() => openJournal({ dir, checkIntervalMs: 0 })).toThrow(JournalLockedError);
    // Reached through another spelling of the same directory: still the same lock.
    const link = path.join(tmp(), 'link');
    fs.symlinkSync(dir, link);
    expect(() => openJournal({ dir: link, checkIntervalMs: 0 })).toThrow(JournalLockedError);
  });

  it.each([
    ['a live process (pid 1)', () => 1],
    ['this very process', () => process.pid],
  ])('starts at once after the holder is killed with SIGKILL, though its lock file names %s', async (_name, reusedPid) => {
    const dir = tmp();
    const holder = await holdInChild(dir);
    await killed(holder);
    // The killed receiver's pid has been handed to a live process since: the lock file says so.
    fs.writeFileSync(path.join(dir, LOCK_FILE), `${reusedPid()}\n`);
    const events: string[] = [];
    const j = openJournal({ dir, checkIntervalMs: 0, onEvent: (e) => events.push(e.kind) });
    open.push(j);
    expect(events).toContain('lock-taken-over');
    // Its open segment was sealed with its acknowledged event.
    expect(listClosedSegments(dir)).toHaveLength(1);
    expect(fs.readFileSync(path.join(dir, listClosedSegments(dir)[0]), 'utf8')).toContain('ev_child');
    await j.append('{"a":1}');
  }, 30_000);

  it('starts a receiver (startReceiver) on a journal whose stale lock names a live pid', async () => {
    const dir = tmp();
    fs.writeFileSync(path.join(dir, LOCK_FILE), '1\n');
    const rx = await startReceiver({ username: 'cbp-hook', password: 'a-long-enough-password-1', journalDir: dir, journal: { checkIntervalMs: 0 } });
    await rx.close();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
  });

  it('lets receivers on two different journal directories run side by side', async () => {
    const a = tmp();
    const b = tmp();
    const holder = await holdInChild(a);
    const jb = openJournal({ dir: b, checkIntervalMs: 0 });
    open.push(jb);
    const jc = openJournal({ dir: path.join(b, 'nested'), checkIntervalMs: 0 });
    open.push(jc);
    await jb.append('{"b":1}');
    await jc.append('{"c":1}');
    await killed(holder);
  }, 30_000);

  it('falls back to the pid rule, and says so, where the native lock cannot load', () => {
    const dir = tmp();
    const warnings: string[] = [];
    const release = acquireLock(dir, { tryLock: null, onWeakLock: (m) => warnings.push(m) });
    expect(warnings).toEqual([expect.stringMatching(/receiver\.lock/)]);
    expect(() => acquireLock(dir, { tryLock: null })).toThrow(JournalLockedError);
    release();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    acquireLock(dir, { tryLock: null })();
  });

  it('releases the lock at close, so the next receiver starts at once', async () => {
    const dir = tmp();
    const j = openJournal({ dir, checkIntervalMs: 0 });
    await j.close();
    expect(fs.existsSync(path.join(dir, LOCK_FILE))).toBe(false);
    open.push(openJournal({ dir, checkIntervalMs: 0 }));
  });
});
