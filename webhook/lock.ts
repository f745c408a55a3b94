// The journal directory's lock: one receiver per directory. The lock is an operating-system lock on
// `receiver.lock` (an open-file-description lock, F_OFD_SETLK, on Linux; flock on macOS; LockFileEx on
// Windows, through fs-native-extensions, whose npm package carries prebuilt binaries), so it belongs to the
// open file, not to a pid: the kernel drops it the moment its holder dies, however it dies, and a pid that
// has been handed to another process since can never keep a directory locked. It is bound to the file
// itself, so every path to the directory (symlinks, bind mounts, another container on the same volume)
// meets the same lock. The file's content (pid, host, since) only says who holds it.
//
// Where the native module cannot load (a platform without a prebuilt binary), the lock falls back to the
// pid rule (a live pid in the file refuses), which a reused pid can fool: it says so at start.
import * as fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CbpError } from '../lib/errors.ts';
import { nativeTryLock, processAlive, tryHoldFile, type TryLock } from '../lib/file-lock.ts';

export { nativeTryLock };

export const LOCK_FILE = 'receiver.lock';

export interface LockOwner {
  pid: number;
  host?: string;
  since?: string;
}

/** Another live receiver holds the journal directory. */
export class JournalLockedError extends CbpError {
  constructor(dir: string, owner: Partial<LockOwner>) {
    const who = Number.isInteger(owner.pid) && owner.pid! > 0 ? `the receiver with pid ${owner.pid}${owner.host && owner.host !== os.hostname() ? ` on host ${owner.host}` : ''}` : 'another receiver';
    super(
      'CBP_ERR_JOURNAL_LOCKED',
      `journal directory ${dir} is in use by ${who}: stop it, or give this receiver its own --journal directory`,
    );
  }
}

/** Reads who the file says holds (or last held) the lock; a pid alone is the older format. */
export function parseOwner(text: string): LockOwner | null {
  const t = text.trim();
  if (!t) return null;
  if (/^\d+$/.test(t)) return { pid: Number(t) };
  try {
    const o = JSON.parse(t) as Partial<LockOwner>;
    if (Number.isInteger(o.pid)) return { pid: o.pid!, host: typeof o.host === 'string' ? o.host : undefined, since: typeof o.since === 'string' ? o.since : undefined };
  } catch {
    // torn or foreign content: nobody we can name
  }
  return null;
}

function readFd(fd: number): string {
  const size = fs.fstatSync(fd).size;
  const buf = Buffer.alloc(Math.min(size, 4096));
  const n = buf.length ? fs.readSync(fd, buf, 0, buf.length, 0) : 0;
  return buf.subarray(0, n).toString('utf8');
}

export interface AcquireOptions {
  /** Called when the lock file names an earlier holder that is gone (a killed receiver). */
  onTakeOver?: (stalePid: number) => void;
  /** Called once when the lock is only the pid rule (no native lock on this platform). */
  onWeakLock?: (why: string) => void;
  /** Tests: force the pid rule. */
  tryLock?: TryLock | null;
}

/**
 * Takes the directory's lock; returns its release. Throws JournalLockedError while another receiver, in
 * this process or any other, holds it.
 */
export function acquireLock(dir: string, opts: AcquireOptions | ((stalePid: number) => void) = {}): () => void {
  const o: AcquireOptions = typeof opts === 'function' ? { onTakeOver: opts } : opts;
  const tryLock = o.tryLock === undefined ? nativeTryLock() : o.tryLock;
  if (!tryLock) {
    o.onWeakLock?.('no native file lock on this platform: the journal lock is a pid in receiver.lock; if a restart is refused although no receiver runs, delete that file');
    return acquirePidLock(dir, o.onTakeOver);
  }
  const file = path.join(dir, LOCK_FILE);
  // tryHoldFile opens again when a releasing holder unlinked the file just before letting go (a lock won on a
  // file the path no longer names is worthless); null after that bounded retry means another receiver has it.
  const release = tryHoldFile(file, tryLock, {
    busy: (fd) => {
      throw new JournalLockedError(dir, parseOwner(readFd(fd)) ?? {});
    },
    held: (fd) => {
      const previous = parseOwner(readFd(fd));
      // Content left behind means its writer died holding the lock (a clean release removes the file).
      if (previous) o.onTakeOver?.(previous.pid);
      const owner = Buffer.from(JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() } satisfies LockOwner) + '\n');
      fs.ftruncateSync(fd, 0);
      fs.writeSync(fd, owner, 0, owner.length, 0);
      fs.fsyncSync(fd);
    },
  });
  if (!release) throw new JournalLockedError(dir, {});
  return release;
}


/** Directories whose pid lock this process holds (a lock with our own pid but not in here is stale). */
const heldHere = new Set<string>();

/**
 * The fallback: the lock file holds the owner's pid, a live pid refuses. A lock carrying this process's pid
 * that this process does not hold is stale (a restarted container often gets the same pid).
 */
function acquirePidLock(dir: string, onTakeOver?: (pid: number) => void): () => void {
  const file = path.join(dir, LOCK_FILE);
  let key = path.resolve(dir);
  try {
    key = fs.realpathSync(dir);
  } catch {
    // not there yet: the resolved path will do
  }
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = fs.openSync(file, 'wx', 0o640);
      fs.writeSync(fd, `${process.pid}\n`);
      fs.fsyncSync(fd);
      fs.closeSync(fd);
      heldHere.add(key);
      return () => {
        heldHere.delete(key);
        try {
          if (parseOwner(fs.readFileSync(file, 'utf8'))?.pid === process.pid) fs.unlinkSync(file);
        } catch {
          // already gone
        }
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let owner: LockOwner | null;
    try {
      owner = parseOwner(fs.readFileSync(file, 'utf8'));
    } catch {
      continue; // removed in between: try again
    }
    const pid = owner?.pid ?? NaN;
    const live = Number.isInteger(pid) && pid > 0 && (pid === process.pid ? heldHere.has(key) : processAlive(pid));
    if (live) throw new JournalLockedError(dir, owner!);
    try {
      fs.unlinkSync(file);
    } catch {
      // someone else took it over first; the next attempt decides
    }
    onTakeOver?.(Number.isFinite(pid) ? pid : 0);
  }
  throw new JournalLockedError(dir, {});
}
