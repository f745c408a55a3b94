// A load's temp copy of its report file (the file without the records cbp reads itself, store/long-rows.ts):
// written beside the file, on the disk that holds the data (not the system's temp folder, which may be a
// RAM-backed tmpfs), as `.<file name>.cbp-load-<pid>-<ms>`. The load holds an OS lock on `<copy>.lock`
// (lib/file-lock.ts, as a snapshot publish does for its copy) from before the copy exists until after it is
// removed, so a copy whose lock can be taken belongs to no running load: a load killed mid-way (kill -9, OOM,
// power) left it, and the next load of a file in that folder removes it.
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { removeUnlockedCopies, tryHoldFile, type TryLock } from '../../lib/file-lock.ts';

/** `.<name>.cbp-load-<pid>-<ms>` and its `.lock`: the names claimLoadCopy gives. */
const PATTERN = /^(\..+\.cbp-load-(\d+)-(\d+))(\.lock)?$/;

/** Copies this process is writing or reading right now: never taken for leftovers. */
const inFlight = new Set<string>();

/**
 * A temp copy's path beside `file`, no other load's, whose lock this process holds. `release` removes the
 * copy, then its lock.
 */
export function claimLoadCopy(file: string): { copy: string; release: () => void } {
  const dir = path.dirname(file);
  const name = path.basename(file);
  for (let n = 0; ; n++) {
    const copy = path.join(dir, `.${name}.cbp-load-${process.pid}-${Date.now() + n}`);
    if (inFlight.has(copy) || existsSync(copy)) continue;
    const release = tryHoldFile(`${copy}.lock`);
    if (release === null) continue;
    inFlight.add(copy);
    let done = false;
    return {
      copy,
      release: () => {
        if (done) return;
        done = true;
        try {
          rmSync(copy, { force: true });
        } finally {
          inFlight.delete(copy);
          release?.();
        }
      },
    };
  }
}

/**
 * Removes the temp copies killed loads left in `dir`: names of claimLoadCopy's pattern only, and of those
 * only the ones whose lock can be taken (no load holds it). Where there is no native lock, a copy of a live
 * pid other than this process's is left alone. Returns the names removed (lock files not listed).
 */
export function removeStaleLoadCopies(dir: string, opts: { tryLock?: TryLock | null } = {}): string[] {
  return removeUnlockedCopies(dir, PATTERN, inFlight, opts.tryLock);
}
