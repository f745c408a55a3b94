// The event journal's file names, shared by the receiver that writes segments (webhook/journal.ts) and the
// ingest that loads them (store/ingest.ts), so neither imports the other:
//   seg-<seq>-<opened>-<tag>.ndjson   the open segment (only the live receiver writes it; ingest never reads it)
//   seg-<seq>-<opened>-<tag>.closed   a sealed segment: complete lines only, ready for ingest
//   archive/                          sealed segments ingest has committed to the store
// <tag> (8 random hex digits) keeps the names of two receivers' segments apart: the store keys a segment's load by its
// name, and two hosts' receivers opened their first segment in the same millisecond. Names without it (before) still parse.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';

export const ARCHIVE_DIR = 'archive';
const OPEN_EXT = '.ndjson';
const CLOSED_EXT = '.closed';
const SEGMENT_RE = /^seg-(\d+)-(\d{8}T\d{9}Z)(?:-[0-9a-f]{8})?\.(ndjson|closed)$/;

/** `20261122T105148123Z`: sortable, safe in file names. */
function stamp(d: Date): string {
  return d.toISOString().replace(/[-:.]/g, '');
}

/** The name of a new open segment: its sequence number, when it was opened, and a tag of its own. */
export function openSegmentName(seq: number, opened: Date, tag = randomBytes(4).toString('hex')): string {
  return `seg-${String(seq).padStart(10, '0')}-${stamp(opened)}-${tag}${OPEN_EXT}`;
}

export function segmentInfo(name: string): { seq: number; openedAt: string; closed: boolean } | null {
  const m = SEGMENT_RE.exec(name);
  if (!m) return null;
  return { seq: Number(m[1]), openedAt: m[2], closed: m[3] === 'closed' };
}

export function closedName(openName: string): string {
  return openName.slice(0, -OPEN_EXT.length) + CLOSED_EXT;
}

/** Sealed segments waiting for ingest, oldest first. */
export function listClosedSegments(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => segmentInfo(n)?.closed)
    .sort((a, b) => segmentInfo(a)!.seq - segmentInfo(b)!.seq || a.localeCompare(b));
}
