// Upkeep of a lake (`cbp db maintain`): small commits leave many small Parquet files and a snapshot per commit.
// Each step is DuckLake's own and safe while workers write (a step that loses a commit race is run again); files
// are removed only once no reader can still be on a snapshot that lists them (the grace times). docs/lake.md.
import type { Store } from './db.ts';
import { LAKE_ALIAS, LAKE_COMMIT_ATTEMPTS, isLakeConflict, lakeRetryDelay } from './lake.ts';

export interface MaintainOptions {
  /** Snapshots younger than this many days are kept (time travel, and readers in flight). Default 7. */
  keepDays?: number;
  /**
   * Files of expired snapshots, and files no snapshot lists, are deleted once this many hours old. Default 24; the
   * CLI takes 1 or more: at 0 a transaction still on an older snapshot (a worker's MERGE) finds its files gone.
   */
  graceHours?: number;
}

export interface MaintainResult {
  store: string;
  lake: boolean;
  /** Rows held in the catalog (inlined) written out to Parquet */
  flushedTables: number;
  /** Small adjacent files merged */
  mergedFiles: number;
  expiredSnapshots: number;
  deletedFiles: number;
  deletedOrphans: number;
  /** Parquet data files the lake's tables hold afterwards */
  dataFiles: number;
}

/** Runs a statement, again after a commit conflict with another process's. */
async function retried<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!isLakeConflict(e) || attempt >= LAKE_COMMIT_ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, lakeRetryDelay(attempt)));
    }
  }
}

const count = async (store: Store, sql: string): Promise<number> => retried(async () => (await store.all(sql)).length);

export async function maintainStore(store: Store, opts: MaintainOptions = {}): Promise<MaintainResult> {
  const keepDays = opts.keepDays ?? 7;
  const graceHours = opts.graceHours ?? 24;
  if (!Number.isInteger(keepDays) || keepDays < 0 || !Number.isInteger(graceHours) || graceHours < 0) throw new RangeError('keepDays and graceHours are whole numbers, 0 or more');
  const base = { store: store.dbPath, flushedTables: 0, mergedFiles: 0, expiredSnapshots: 0, deletedFiles: 0, deletedOrphans: 0, dataFiles: 0 };
  if (!store.lake) {
    // A DuckDB file: its checkpoint writes the WAL into the file and gives back the blocks deletes freed.
    await store.run('CHECKPOINT');
    return { ...base, lake: false };
  }
  const lake = `'${LAKE_ALIAS}'`;
  const flushedTables = await count(store, `CALL ducklake_flush_inlined_data(${lake})`);
  const mergedFiles = await count(store, `CALL ducklake_merge_adjacent_files(${lake})`);
  const expiredSnapshots = await count(store, `CALL ducklake_expire_snapshots(${lake}, older_than => now() - INTERVAL ${keepDays} DAY)`);
  const deletedFiles = await count(store, `CALL ducklake_cleanup_old_files(${lake}, older_than => now() - INTERVAL ${graceHours} HOUR)`);
  const deletedOrphans = await count(store, `CALL ducklake_delete_orphaned_files(${lake}, older_than => now() - INTERVAL ${graceHours} HOUR)`);
  const [{ files }] = await store.all<{ files: number }>(`SELECT coalesce(sum(file_count), 0)::INTEGER AS files FROM ducklake_table_info(${lake})`);
  return { ...base, lake: true, flushedTables, mergedFiles, expiredSnapshots, deletedFiles, deletedOrphans, dataFiles: Number(files) };
}
