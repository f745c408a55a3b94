// Upkeep of a lake (`cbp db maintain`): small commits leave many small Parquet files and a snapshot per commit.
// Safe beside every other process (docs/lake.md "Upkeep"): no step removes what a running step or a reader in flight
// may still read, and a step that loses a race with a writer's commit is run again.
import type { Store } from './db.ts';
import { LAKE_ALIAS, ensureLakeIndex, isLakeConflict, retryLakeRace } from './lake.ts';

export interface MaintainOptions {
  /** Snapshots younger than this many days are kept (time travel). Default 7. */
  keepDays?: number;
  /**
   * Nothing younger than this many hours is expired or deleted: no step runs this long, so none finds its snapshot
   * or files gone. Default 24; the CLI takes 1 or more.
   */
  graceHours?: number;
  /** Write rows an older cbp held in the catalog (inlined) out to Parquet: only with every other cbp process stopped. */
  flushInlined?: boolean;
}

export interface MaintainResult {
  store: string;
  lake: boolean;
  /** Tables whose inlined rows were written out to Parquet (flushInlined only) */
  flushedTables: number;
  /** Small adjacent files merged */
  mergedFiles: number;
  expiredSnapshots: number;
  deletedFiles: number;
  deletedOrphans: number;
  /** Parquet data files the lake's tables hold afterwards */
  dataFiles: number;
}

/** A commit race with another process: DuckLake's own conflict, or PostgreSQL's serialization failure under it. */
const raced = (e: unknown) => isLakeConflict(e) || /could not serialize access|current transaction is aborted/i.test((e as Error)?.message ?? '');

/** Runs an upkeep call in the writers' turn (after any writer's commit), again after a race; the rows it returned. */
const retried = (store: Store, sql: string): Promise<number> => retryLakeRace(() => store.writerTurn(async () => (await store.all(sql)).length), raced);

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
  await ensureLakeIndex(store, store.lake);
  const lake = `'${LAKE_ALIAS}'`;
  const grace = `now() - INTERVAL ${graceHours} HOUR`;
  // DuckLake's flush deletes the inlined rows outright, under readers still on a snapshot that lists them.
  const flushedTables = opts.flushInlined ? await retried(store, `CALL ducklake_flush_inlined_data(${lake})`) : 0;
  const mergedFiles = await retried(store, `CALL ducklake_merge_adjacent_files(${lake})`);
  // A snapshot a running step began on keeps the change records its commit's conflict check reads (DuckLake #1472).
  const expiredSnapshots = await retried(store, `CALL ducklake_expire_snapshots(${lake}, older_than => least(now() - INTERVAL ${keepDays} DAY, ${grace}))`);
  const deletedFiles = await retried(store, `CALL ducklake_cleanup_old_files(${lake}, older_than => ${grace})`);
  const deletedOrphans = await retried(store, `CALL ducklake_delete_orphaned_files(${lake}, older_than => ${grace})`);
  const [{ files }] = await store.all<{ files: number }>(`SELECT coalesce(sum(file_count), 0)::INTEGER AS files FROM ducklake_table_info(${lake})`);
  return { ...base, lake: true, flushedTables, mergedFiles, expiredSnapshots, deletedFiles, deletedOrphans, dataFiles: Number(files) };
}
