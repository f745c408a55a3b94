// The published snapshot: a consistent, read-only copy of the store for analysts. The writer copies the
// whole database into a temp file beside the snapshot and renames it into place, which is atomic on one
// file system: a reader sees the old copy or the new one, never a half-finished load, and since readers
// open only the copy they never hold the writer's lock.
import { mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Store } from './db.ts';
import { openSnapshotSession, type AnalystSessionOptions } from './analyst.ts';

export interface SnapshotResult {
  path: string;
  bytes: number;
  publishedAt: string;
}

const ALIAS = 'cbp_snapshot_out';

/** Call after a committed write (never inside a transaction: COPY FROM DATABASE reads committed data). */
export async function publishSnapshot(store: Store, opts: { snapshotPath: string }): Promise<SnapshotResult> {
  const target = path.resolve(opts.snapshotPath);
  mkdirSync(path.dirname(target), { recursive: true });
  const tmp = `${target}.tmp-${process.pid}-${Date.now()}`;
  const [{ db }] = await store.all<{ db: string }>('SELECT current_database() AS db');
  try {
    await store.run(`ATTACH '${tmp.replace(/'/g, "''")}' AS ${ALIAS}`);
    try {
      await store.run(`COPY FROM DATABASE "${db.replace(/"/g, '""')}" TO ${ALIAS}`);
    } finally {
      await store.run(`DETACH ${ALIAS}`);
    }
    renameSync(tmp, target);
  } finally {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}.wal`, { force: true });
  }
  return { path: target, bytes: statSync(target).size, publishedAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z') };
}

/**
 * Opens the snapshot for reading, as every analyst session opens (store/analyst.ts: read-only, no file or
 * network access, configuration locked); a clear error when none has been published yet.
 */
export async function openSnapshot(snapshotPath: string, opts: AnalystSessionOptions & { workingStore?: string } = {}): Promise<Store> {
  return openSnapshotSession(snapshotPath, opts);
}
