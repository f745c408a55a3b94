// The published snapshot: a consistent, read-only copy of the store for analysts. The writer copies the
// whole database into a temp file beside the snapshot and renames it into place, which is atomic on one
// file system: a reader sees the old copy or the new one, never a half-finished load, and since readers
// open only the copy they never hold the writer's lock.
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { openStore, type Store } from './db.ts';
import { NoSnapshotError } from './errors.ts';

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

/** Opens the snapshot read-only; a clear error when none has been published yet. */
export async function openSnapshot(snapshotPath: string): Promise<Store> {
  if (!existsSync(snapshotPath)) {
    throw new NoSnapshotError(
      `No snapshot at ${snapshotPath} yet: run a load first (e.g. \`cbp load chargebacks FILE\`), which publishes one.`,
    );
  }
  return openStore({ dbPath: snapshotPath, readOnly: true, migrate: false });
}
