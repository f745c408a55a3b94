// Operating-system file locks (fs-native-extensions, whose npm package carries prebuilt binaries: an
// open-file-description lock, F_OFD_SETLK, on Linux; flock on macOS; LockFileEx on Windows). The lock
// belongs to the open file, not to a pid: the kernel drops it the moment its holder dies, however it dies,
// so a pid handed to another process since can never keep a lock alive. Used by the journal directory's
// lock (webhook/lock.ts), by the snapshot's temp copies (store/snapshot.ts) and by a load's temp copy
// (store/load/temp.ts).
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type TryLock = (fd: number) => boolean;

let osLock: TryLock | null | undefined;

/** The native exclusive non-blocking lock, or null where the module cannot load. */
export function nativeTryLock(): TryLock | null {
  if (osLock === undefined) {
    try {
      const ext = createRequire(import.meta.url)('fs-native-extensions') as { tryLock(fd: number): boolean };
      osLock = (fd) => ext.tryLock(fd);
    } catch {
      osLock = null;
    }
  }
  return osLock;
}

/** Whether the open file `a` is still the file a path names (`b`: its stat, null when gone). */
export function sameFile(a: fs.Stats, b: fs.Stats | null): boolean {
  return b !== null && a.ino === b.ino && a.dev === b.dev;
}

/**
 * Takes the lock of `file` (created when missing) without waiting. Returns its release, which removes the
 * file and then lets go; null while another holder, in this process or any other, has it; undefined where
 * there is no native lock (the caller falls back to its own rule). A lock won on a file that the path no
 * longer names (a holder removed it meanwhile) is worthless, so it opens again.
 */
export function tryHoldFile(
  file: string,
  tryLock: TryLock | null = nativeTryLock(),
  hooks: {
    /** Another holder has it: may throw (e.g. naming the holder it reads from fd) instead of answering null. */
    busy?: (fd: number) => void;
    /** The lock is won: e.g. write the owner into the file before anyone can read it. */
    held?: (fd: number) => void;
  } = {},
): (() => void) | null | undefined {
  if (!tryLock) return undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o640);
    let held = false;
    try {
      if (!tryLock(fd)) {
        hooks.busy?.(fd);
        return null;
      }
      let now: fs.Stats | null = null;
      try {
        now = fs.statSync(file);
      } catch {
        // removed in between
      }
      if (!sameFile(fs.fstatSync(fd), now)) continue;
      hooks.held?.(fd);
      held = true;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        // Remove first, then close (which drops the lock): whoever opened the old file meanwhile sees it is
        // no longer the one the path names.
        try {
          fs.unlinkSync(file);
        } catch {
          // already gone, or not removable while open (Windows)
        }
        fs.closeSync(fd);
      };
    } finally {
      if (!held) fs.closeSync(fd);
    }
  }
  return null;
}

/** Whether a process with this pid exists (EPERM: it does, under another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the leftovers of temp copies in `dir` that are each guarded by a lock file `<copy>.lock` held while
 * the copy exists (a snapshot publish's, a load's). `pattern` matches a copy's names with group 1 the copy's
 * own name and group 2 its writer's pid. A copy is removed only when its lock can be taken (the kernel drops a
 * lock when its holder dies, whatever its pid); where there is no native lock, a copy of a live pid other
 * than this process's is left alone. `inFlight` copies (this process's own, in use) are never taken. Returns
 * the names removed (the lock files, taken for the check and removed with it, are not listed).
 */
export function removeUnlockedCopies(
  dir: string,
  pattern: RegExp,
  inFlight: ReadonlySet<string>,
  tryLock: TryLock | null = nativeTryLock(),
): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const groups = new Map<string, { pid: number; names: string[] }>();
  for (const name of names.sort()) {
    const m = pattern.exec(name);
    if (!m) continue;
    const g = groups.get(m[1]!) ?? { pid: Number(m[2]), names: [] };
    g.names.push(name);
    groups.set(m[1]!, g);
  }
  const removed: string[] = [];
  for (const [base, g] of groups) {
    const copy = path.join(dir, base);
    if (inFlight.has(copy)) continue;
    const release = tryHoldFile(`${copy}.lock`, tryLock);
    if (release === null) continue; // its writer holds the lock right now
    if (release === undefined && g.pid !== process.pid && processAlive(g.pid)) continue;
    try {
      for (const name of g.names) {
        if (name.endsWith('.lock')) continue;
        fs.rmSync(path.join(dir, name), { force: true });
        removed.push(name);
      }
    } finally {
      release?.(); // removes the lock file too
      if (release === undefined) fs.rmSync(`${copy}.lock`, { force: true });
    }
  }
  return removed;
}
