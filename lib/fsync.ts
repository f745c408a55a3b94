// Durable on disk: a file's bytes, or a directory's entries (a rename, a new or removed file), flushed by fsync.
import { closeSync, fsyncSync, openSync } from 'node:fs';

/** fsync of a file or a directory by its path. */
export function fsyncPath(p: string): void {
  const fd = openSync(p, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
