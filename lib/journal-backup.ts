// The journal's part of a backup (`cbp db backup`, docs/operations.md): what the store does not hold yet, copied while
// the receiver goes on writing. The open segment is copied up to its last newline (appends are whole lines, each
// fsync'd before its 200: a torn tail was never acknowledged) and kept sealed; a segment sealed or archived while
// we look is read where it went. Archived segments are copied only when the store copy has not loaded them.
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readdirSync, readSync, fstatSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fsyncPath } from './fsync.ts';
import { ARCHIVE_DIR, closedName, segmentInfo } from './journal-files.ts';

export interface JournalCopy {
  /** Segment files written into the backup (sealed names), oldest first. */
  segments: string[];
  /** Lines of the open segment copied (0: none was open). */
  openLines: number;
  /** Archived segments the store copy had not loaded, copied as sealed ones. */
  fromArchive: number;
}

const bySeq = (a: string, b: string) => segmentInfo(a)!.seq - segmentInfo(b)!.seq || a.localeCompare(b);

/** The bytes of a file up to its last newline, read through one descriptor (a rename while reading changes nothing). */
function wholeLines(file: string): Buffer | null {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw e;
  }
  try {
    const size = fstatSync(fd).size;
    const buf = Buffer.alloc(size);
    let off = 0;
    while (off < size) {
      const n = readSync(fd, buf, off, size - off, off);
      if (n === 0) break;
      off += n;
    }
    return buf.subarray(0, buf.subarray(0, off).lastIndexOf(0x0a) + 1);
  } finally {
    closeSync(fd);
  }
}

function writeDurable(file: string, data: Buffer): void {
  writeFileSync(file, data);
  fsyncPath(file);
}

/** Copies the journal's unsealed state into `out` (created). loaded: the segments the store copy has loaded. */
export function copyJournal(journalDir: string, out: string, loaded: ReadonlySet<string>): JournalCopy {
  mkdirSync(out, { recursive: true });
  const result: JournalCopy = { segments: [], openLines: 0, fromArchive: 0 };
  if (!existsSync(journalDir)) return result;
  const archive = path.join(journalDir, ARCHIVE_DIR);
  const names = readdirSync(journalDir).filter((n) => segmentInfo(n)).sort(bySeq);
  for (const name of names) {
    const sealed = segmentInfo(name)!.closed ? name : closedName(name);
    // Where the segment may be by now: as listed, sealed since, or archived since.
    const data = [name, sealed].map((n) => wholeLines(path.join(journalDir, n))).find((d) => d !== null) ?? wholeLines(path.join(archive, sealed));
    if (!data || data.length === 0) continue;
    if (!segmentInfo(name)!.closed) result.openLines += data.filter((b) => b === 0x0a).length;
    writeDurable(path.join(out, sealed), data);
    result.segments.push(sealed);
  }
  if (existsSync(archive)) {
    for (const name of readdirSync(archive).filter((n) => segmentInfo(n)?.closed).sort(bySeq)) {
      if (loaded.has(name) || result.segments.includes(name)) continue;
      copyFileSync(path.join(archive, name), path.join(out, name));
      result.segments.push(name);
      result.fromArchive++;
    }
  }
  result.segments.sort(bySeq);
  return result;
}

/**
 * Puts a backup's segments back as sealed segments for the next ingest, each unless the journal has it (open, sealed
 * or archived: the live journal's copy is the same or longer). Returns the names put back.
 */
export function restoreJournal(from: string, journalDir: string): string[] {
  if (!existsSync(from)) return [];
  mkdirSync(journalDir, { recursive: true });
  const archive = path.join(journalDir, ARCHIVE_DIR);
  const back: string[] = [];
  for (const name of readdirSync(from).filter((n) => segmentInfo(n)?.closed).sort(bySeq)) {
    const open = name.replace(/\.closed$/, '.ndjson');
    if ([path.join(journalDir, name), path.join(journalDir, open), path.join(archive, name)].some((f) => existsSync(f))) continue;
    copyFileSync(path.join(from, name), path.join(journalDir, name));
    back.push(name);
  }
  return back;
}

/**
 * Archived segments a store does not list as loaded (a store put back from an older backup): copied back as sealed
 * segments, so the next ingest loads them (the event_guid key ignores what it already has). Returns the names.
 */
export function requeueArchived(journalDir: string, loaded: ReadonlySet<string>): string[] {
  const archive = path.join(journalDir, ARCHIVE_DIR);
  if (!existsSync(archive)) return [];
  const back: string[] = [];
  for (const name of readdirSync(archive).filter((n) => segmentInfo(n)?.closed).sort(bySeq)) {
    if (loaded.has(name) || existsSync(path.join(journalDir, name))) continue;
    copyFileSync(path.join(archive, name), path.join(journalDir, name));
    back.push(name);
  }
  return back;
}
