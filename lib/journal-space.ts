// What an operator watches on the journal's folder: the backlog waiting for ingest, the disk under it, and whether
// a receiver may take events there now (/readyz). Read by the receiver, by `cbp metrics` and by the worker.
import { accessSync, constants, existsSync, statfsSync, statSync } from 'node:fs';
import path from 'node:path';
import { listClosedSegments } from './journal-files.ts';

/** Free space below which a receiver stops taking events (503), unless CBP_JOURNAL_MIN_FREE says otherwise. */
export const JOURNAL_MIN_FREE_DEFAULT = '256MB';

/** Sealed segments waiting for ingest and their bytes (0 and 0 when the folder does not exist yet). */
export function journalBacklog(dir: string): { segments: number; bytes: number } {
  let bytes = 0;
  const names = listClosedSegments(dir);
  for (const n of names) {
    try {
      bytes += statSync(path.join(dir, n)).size;
    } catch {
      // Archived by an ingest between the listing and the stat: no longer waiting.
    }
  }
  return { segments: names.length, bytes };
}

/** The file system under `dir` (or its nearest existing parent): bytes free to an unprivileged writer and in all. */
export function diskSpace(dir: string): { freeBytes: number; sizeBytes: number } | null {
  let at = path.resolve(dir);
  while (!existsSync(at) && path.dirname(at) !== at) at = path.dirname(at);
  try {
    const s = statfsSync(at);
    return { freeBytes: s.bavail * s.bsize, sizeBytes: s.blocks * s.bsize };
  } catch {
    return null;
  }
}

export interface JournalReadiness {
  ready: boolean;
  writable: boolean;
  freeBytes: number | null;
  minFreeBytes: number;
  /** Why not ready, for the operator (no file path: /readyz is on the public port). */
  reasons: string[];
}

/** Ready when the journal folder exists and is writable and its disk has at least minFreeBytes free. */
export function journalReadiness(dir: string, minFreeBytes: number): JournalReadiness {
  const reasons: string[] = [];
  let writable = true;
  try {
    accessSync(dir, constants.W_OK);
    if (!statSync(dir).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
  } catch (e) {
    writable = false;
    reasons.push(`the journal folder is not writable (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const disk = writable ? diskSpace(dir) : null;
  if (writable && disk === null) reasons.push('the free space under the journal cannot be read');
  if (disk && disk.freeBytes < minFreeBytes) reasons.push(`${disk.freeBytes} bytes free under the journal, below CBP_JOURNAL_MIN_FREE (${minFreeBytes})`);
  return { ready: reasons.length === 0, writable, freeBytes: disk?.freeBytes ?? null, minFreeBytes, reasons };
}
