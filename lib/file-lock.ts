// Operating-system file locks (fs-native-extensions, whose npm package carries prebuilt binaries: an
// open-file-description lock, F_OFD_SETLK, on Linux; flock on macOS; LockFileEx on Windows). The lock
// belongs to the open file, not to a pid: the kernel drops it the moment its holder dies, however it dies,
// so a pid handed to another process since can never keep a lock alive. Used by the journal directory's
// lock (webhook/lock.ts), by the snapshot's temp copies (store/snapshot.ts) and by a load's temp copy
// (store/load/temp.ts).
import * as fs from 'node:fs';
import { createRequire } from 'node:module';

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
export function tryHoldFile(file: string, tryLock: TryLock | null = nativeTryLock()): (() => void) | null | undefined {
  if (!tryLock) return undefined;
  for (let attempt = 0; attempt < 5; attempt++) {
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT, 0o640);
    let held = false;
    try {
      if (!tryLock(fd)) return null;
      let now: fs.Stats | null = null;
      try {
        now = fs.statSync(file);
      } catch {
        // removed in between
      }
      if (!sameFile(fs.fstatSync(fd), now)) continue;
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
