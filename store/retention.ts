// Retention (opt-in, CBP_RETENTION_DAYS): the raw files the store has already loaded, once older than the setting, are
// deleted by the maintenance step and reported. Never on by default (raw first: every report and event is kept as
// received, so any view can be rebuilt); and a file the store has not loaded is never deleted, whatever its age:
// landing files not in `loads`, archived segments not in `event_loads` (a store put back from an older backup).
import { existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { ARCHIVE_DIR, segmentInfo } from '../lib/journal-files.ts';
import { DAY_MS } from '../lib/utc.ts';
import type { Store } from './db.ts';

export interface RetentionResult {
  /** The setting in force; null: retention is off and nothing was looked at. */
  days: number | null;
  /** Files older than this were deleted (ISO UTC); null when off. */
  before: string | null;
  landingFiles: number;
  journalSegments: number;
  bytes: number;
  /** Files past the age kept because the store has not loaded them. */
  keptNotLoaded: number;
}

export const RETENTION_OFF: RetentionResult = { days: null, before: null, landingFiles: 0, journalSegments: 0, bytes: 0, keptNotLoaded: 0 };

/** Files under dir, recursively (none when it does not exist). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

export async function applyRetention(
  store: Pick<Store, 'all'>,
  o: { days: number | undefined; dataDir: string; journalDir: string; now?: Date },
): Promise<RetentionResult> {
  if (o.days === undefined) return RETENTION_OFF;
  if (!Number.isInteger(o.days) || o.days < 1) throw new RangeError('retention days are a whole number, 1 or more');
  const cutoff = (o.now ?? new Date()).getTime() - o.days * DAY_MS;
  const loadedFiles = new Set((await store.all<{ f: string }>('SELECT DISTINCT landing_file AS f FROM loads')).map((r) => r.f));
  const loadedSegments = new Set((await store.all<{ s: string }>('SELECT segment AS s FROM event_loads')).map((r) => r.s));
  const r: RetentionResult = { days: o.days, before: new Date(cutoff).toISOString(), landingFiles: 0, journalSegments: 0, bytes: 0, keptNotLoaded: 0 };
  const remove = (file: string, size: number) => {
    rmSync(file, { force: true });
    r.bytes += size;
  };
  for (const file of filesUnder(path.join(o.dataDir, 'landing'))) {
    if (file.endsWith('.meta.json')) continue; // goes with its file
    const st = statSync(file);
    if (st.mtimeMs >= cutoff) continue;
    if (!loadedFiles.has(path.resolve(file))) {
      r.keptNotLoaded++;
      continue;
    }
    remove(file, st.size);
    const meta = `${file}.meta.json`;
    if (existsSync(meta)) remove(meta, statSync(meta).size);
    r.landingFiles++;
  }
  const archive = path.join(o.journalDir, ARCHIVE_DIR);
  for (const name of existsSync(archive) ? readdirSync(archive) : []) {
    if (!segmentInfo(name)?.closed) continue;
    const st = statSync(path.join(archive, name));
    if (st.mtimeMs >= cutoff) continue;
    if (!loadedSegments.has(name)) {
      r.keptNotLoaded++;
      continue;
    }
    remove(path.join(archive, name), st.size);
    r.journalSegments++;
  }
  return r;
}

/** One line for a person. */
export function retentionLine(r: RetentionResult): string {
  if (r.days === null) return 'retention: off (CBP_RETENTION_DAYS unset: every landing file and archived journal segment is kept)';
  const kept = r.keptNotLoaded ? `; ${r.keptNotLoaded} older files kept: the store has not loaded them` : '';
  return `retention (${r.days} days, before ${r.before}): deleted ${r.landingFiles} landing files and ${r.journalSegments} archived journal segments, ${r.bytes} bytes${kept}`;
}
