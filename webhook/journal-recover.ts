// What a receiver finds when it opens its journal (webhook/journal.ts): the segments a killed receiver left open, and
// the next segment's sequence number.
import * as fs from 'node:fs';
import path from 'node:path';
import { fsyncPath } from '../lib/fsync.ts';
import { ARCHIVE_DIR, closedName, segmentInfo } from '../lib/journal-files.ts';
import type { JournalEvent } from './journal.ts';

/**
 * Seals every open segment a killed receiver left behind. Bytes after the last newline are a torn line: its
 * write never completed, so it was never acknowledged, and it is dropped. Everything before it is kept.
 */
export function recoverOpenSegments(dir: string, onEvent?: (e: JournalEvent) => void): Array<{ segment: string; lines: number; droppedBytes: number }> {
  const out: Array<{ segment: string; lines: number; droppedBytes: number }> = [];
  const open = fs.readdirSync(dir).filter((n) => segmentInfo(n) && !segmentInfo(n)!.closed);
  for (const name of open) {
    const file = path.join(dir, name);
    const data = fs.readFileSync(file);
    const keep = data.lastIndexOf(0x0a) + 1;
    const dropped = data.length - keep;
    if (keep === 0) {
      fs.unlinkSync(file);
    } else {
      const fd = fs.openSync(file, 'r+');
      try {
        if (dropped > 0) fs.ftruncateSync(fd, keep);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(file, path.join(dir, closedName(name)));
    }
    let lines = 0;
    for (let i = 0; i < keep; i++) if (data[i] === 0x0a) lines++;
    out.push({ segment: name, lines, droppedBytes: dropped });
    onEvent?.({ kind: 'recovered', segment: name, lines, droppedBytes: dropped });
  }
  if (open.length) fsyncPath(dir);
  return out;
}

/** The sequence number after every segment's in the journal and its archive. */
export function nextSeq(dir: string): number {
  let max = 0;
  for (const d of [dir, path.join(dir, ARCHIVE_DIR)]) {
    if (!fs.existsSync(d)) continue;
    for (const n of fs.readdirSync(d)) {
      const i = segmentInfo(n);
      if (i && i.seq > max) max = i.seq;
    }
  }
  return max + 1;
}
