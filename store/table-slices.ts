// Ranges of MIDs holding at most so many rows of a table, and emptying a large table a slice per commit: one DELETE of
// tens of millions of rows runs out of DuckDB's memory limit (and a failed rollback then ends the process). A lake
// deletes whole files in its catalog: one commit.
import type { Store } from './db.ts';
import { sqlText } from './sql-text.ts';
import { sizeBytes } from '../lib/size.ts';

export interface MidRange { lo: string | null; hi: string | null } // MIDs read at once: [lo, hi), an end open when null

/** A condition (AND …) that keeps the rows of column `col`'s MIDs in `range` (none: all). */
export const midsIn = (range?: MidRange, col = 'mid') =>
  `${range?.lo == null ? '' : `AND ${col} >= ${sqlText(range.lo)}`} ${range?.hi == null ? '' : `AND ${col} < ${sqlText(range.hi)}`}`;

/** Ranges of MIDs covering all, each of at most `most` rows of `table` (those `where` keeps), or of one MID. */
export async function midRanges(store: Pick<Store, 'all'>, table: string, most: number, where = ''): Promise<MidRange[]> {
  const mids = await store.all<{ mid: string; n: number }>(`SELECT mid, count(*)::INTEGER AS n FROM ${table} ${where} GROUP BY mid ORDER BY mid`);
  const out: MidRange[] = [{ lo: null, hi: null }];
  for (let i = 0, n = 0; i < mids.length; n += mids[i]!.n, i++) {
    if (n > 0 && n + mids[i]!.n > most) { out.push({ lo: (out.at(-1)!.hi = mids[i]!.mid), hi: null }); n = 0; }
  }
  return out;
}

/**
 * Deletes every row of `table` (that `where` keeps) in commits of about `rows` rows, each its first rows in storage order: a slice frees whole
 * row groups, which a checkpoint drops unread (slices of MIDs left every row group part deleted, more than a checkpoint
 * could hold in memory: a fatal error, the store invalidated).
 */
export async function deleteInSlices(store: Store, table: string, rows: number, where = 'TRUE'): Promise<void> {
  if (store.lake) return store.transaction((s) => s.run(`DELETE FROM ${table} WHERE ${where}`));
  const every = slicesPerCheckpoint(store.memoryLimit, rows);
  let slices = 0;
  for (;;) {
    const [r] = await store.transaction((s) => s.all<{ Count: number | bigint }>(
      `DELETE FROM ${table} WHERE ${where} AND rowid < (SELECT min(rowid) FROM ${table} WHERE ${where}) + ${Math.max(1, Math.floor(rows))}`));
    if (Number(r?.Count ?? 0) === 0) break;
    if (++slices % every === 0) await store.run('CHECKPOINT');
  }
  if (slices > 1) await store.run('CHECKPOINT'); // a table emptied in one commit needs none (as before)
}

/** Rows a file store deletes before a checkpoint: it holds a transaction id per deleted row until one, kept within a quarter of its limit. */
export function deletableRows(memoryLimit: string): number {
  const bytes = sizeBytes(memoryLimit);
  return Number.isFinite(bytes) ? Math.floor(bytes / 4 / 8) : 0;
}

/** Slices of `rows` between checkpoints (deletableRows), at least one. */
export const slicesPerCheckpoint = (memoryLimit: string, rows: number) => Math.max(1, Math.floor(deletableRows(memoryLimit) / Math.max(1, rows)));
