// `cbp db backup` and `cbp db restore` (docs/operations.md, "Backup and restore"). A backup folder holds cbp.duckdb (a
// consistent copy of the store: DuckDB's COPY FROM DATABASE reads one committed state, as the snapshot's publish
// does), journal/ (what the store had not loaded yet: lib/journal-backup.ts) and backup.json (what it holds).
// While a worker holds the store (DuckDB has one writer), the published snapshot stands in for it, and the journal's
// archived segments it has not loaded are copied too: the next ingest after a restore loads them again.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../lib/errors.ts';
import { fsyncPath } from '../lib/fsync.ts';
import { copyJournal, requeueArchived, restoreJournal, type JournalCopy } from '../lib/journal-backup.ts';
import { openStore, type Store, type StoreOptions } from './db.ts';
import { StoreHeldError, StoreUnavailableError } from './errors.ts';
import { storeVersion } from './generation.ts';
import { publishSnapshot } from './snapshot.ts';

export const BACKUP_FILE = 'cbp.duckdb';
export const MANIFEST_FILE = 'backup.json';
export const JOURNAL_DIR = 'journal';

export interface BackupManifest {
  format: 1;
  createdAt: string;
  /** store: copied from the store itself; snapshot: the store was held by a writer, its published snapshot was copied. */
  source: 'store' | 'snapshot';
  storeId: string | null;
  generation: number | null;
  /** Rows per table of the copy. */
  tables: Record<string, number>;
  journal: JournalCopy;
  /** The thresholds file in force when it was taken, copied beside it (THRESHOLDS_FILE); null: the built-in rules. */
  thresholds?: string | null;
}

/** The backup's copy of the thresholds file in force (settings and secrets are not backed up: docs/operations.md). */
export const THRESHOLDS_FILE = 'thresholds.json';

/** Bookkeeping tables: a store holding rows in these only is empty (migrated, never loaded). */
const BOOKKEEPING = new Set(['schema_migrations', 'schema_views', 'store_generation']);

/** Rows per table of a store's main schema (views and temp tables left out). */
export async function tableRows(store: Pick<Store, 'all'>): Promise<Record<string, number>> {
  const tables = await store.all<{ t: string }>(
    "SELECT table_name AS t FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main' AND NOT internal AND NOT temporary ORDER BY table_name",
  );
  const out: Record<string, number> = {};
  for (const { t } of tables) out[t] = Number((await store.all<{ n: bigint }>(`SELECT count(*) AS n FROM "${t.replace(/"/g, '""')}"`))[0].n);
  return out;
}

export function dataRows(tables: Record<string, number>): number {
  return Object.entries(tables).reduce((n, [t, rows]) => n + (BOOKKEEPING.has(t) ? 0 : rows), 0);
}

/** Journal segments a store lists as loaded (event_loads). */
async function loadedSegments(store: Pick<Store, 'all'>): Promise<Set<string>> {
  const rows = await store.all<{ segment: string }>('SELECT segment FROM event_loads').catch(() => []);
  return new Set(rows.map((r) => r.segment));
}

/** Opens a store file alone, read-only, unmigrated, runs fn, closes it. */
async function readStoreFile<T>(file: string, fn: (s: Store) => Promise<T>): Promise<T> {
  const s = await openStore({ dbPath: file, readOnly: true, migrate: false });
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

export interface BackupOptions {
  store: StoreOptions;
  snapshotPath: string;
  journalDir: string;
  out: string;
  /** CBP_THRESHOLDS_FILE, copied into the backup when set */
  thresholdsFile?: string;
  now?: () => Date;
}

/** Writes a backup into `out` (new or empty). The store first, then the journal: an event is in one or the other. */
export async function backup(o: BackupOptions): Promise<BackupManifest & { path: string; note?: string }> {
  if (o.store.lake) throw lakeRefusal('backup');
  const dbPath = path.resolve(o.store.dbPath);
  if (!existsSync(dbPath)) throw new UsageError(`there is no store at ${dbPath} to back up (CBP_DB_PATH, or <CBP_DATA_DIR>/cbp.duckdb)`);
  const out = path.resolve(o.out);
  if (existsSync(out) && readdirSync(out).length > 0) throw new UsageError(`--out ${out} is not empty: give a new folder for each backup`);
  mkdirSync(out, { recursive: true });
  const file = path.join(out, BACKUP_FILE);
  let source: BackupManifest['source'] = 'store';
  let note: string | undefined;
  let store: Store | undefined;
  try {
    store = await openStore({ ...o.store, migrate: false });
  } catch (e) {
    if (!(e instanceof StoreHeldError)) throw e;
    if (!existsSync(o.snapshotPath)) throw new StoreUnavailableError(`${e.message.split(' (')[0]} No snapshot is published to back up instead.`, { cause: e });
    // Renamed into place whole by its publisher: the copy reads one file, the old or the new.
    copyFileSync(o.snapshotPath, file);
    source = 'snapshot';
    note = `the store is held by a writer (a worker): its published snapshot was copied, with the archived journal segments it has not loaded`;
  }
  if (store) {
    try {
      await publishSnapshot(store, { snapshotPath: file });
    } finally {
      store.close();
    }
  }
  fsyncPath(file);
  const { tables, loaded, version } = await readStoreFile(file, async (s) => ({ tables: await tableRows(s), loaded: await loadedSegments(s), version: await storeVersion(s) }));
  const journal = copyJournal(o.journalDir, path.join(out, JOURNAL_DIR), loaded);
  let thresholds: string | null = null;
  if (o.thresholdsFile) {
    copyFileSync(o.thresholdsFile, path.join(out, THRESHOLDS_FILE));
    thresholds = path.resolve(o.thresholdsFile);
  }
  const manifest: BackupManifest = { format: 1, createdAt: (o.now?.() ?? new Date()).toISOString(), source, ...version, tables, journal, thresholds };
  writeFileSync(path.join(out, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  fsyncPath(path.join(out, MANIFEST_FILE));
  return { path: out, ...manifest, ...(note ? { note } : {}) };
}

export function readManifest(dir: string): BackupManifest {
  const file = path.join(dir, MANIFEST_FILE);
  if (!existsSync(file) || !existsSync(path.join(dir, BACKUP_FILE))) throw new UsageError(`${dir} is not a cbp backup (no ${MANIFEST_FILE} and ${BACKUP_FILE}): give a folder \`cbp db backup --out\` wrote`);
  return JSON.parse(readFileSync(file, 'utf8')) as BackupManifest;
}

export interface RestoreResult {
  restored: string;
  from: string;
  /** Data rows the store held before (0: none, or no store). */
  replacedRows: number;
  tables: Record<string, number>;
  /** Backed-up segments put back into the journal, and archived ones the restored store had not loaded. */
  journalSegments: string[];
  requeued: string[];
  /** The backup's thresholds file, when it differs from the one in force here (the ratios are judged by the latter). */
  backupThresholds?: string;
}

/** Puts a backup back in place of the store. Refuses a store holding data unless force; refuses one a writer holds. */
export async function restore(o: { store: StoreOptions; journalDir: string; from: string; force?: boolean; thresholdsFile?: string }): Promise<RestoreResult> {
  if (o.store.lake) throw lakeRefusal('restore');
  const from = path.resolve(o.from);
  readManifest(from);
  const dbPath = path.resolve(o.store.dbPath);
  let replacedRows = 0;
  if (existsSync(dbPath)) {
    // Opened for writing: a worker or run holding it makes this fail, and nothing is replaced under it.
    const s = await openStore({ ...o.store, migrate: false });
    try {
      replacedRows = dataRows(await tableRows(s));
    } finally {
      s.close();
    }
    if (replacedRows > 0 && !o.force) {
      throw new UsageError(`the store ${dbPath} is not empty (${replacedRows} rows): restoring replaces it; add --force to do so (stop the worker and the runs first)`);
    }
  }
  mkdirSync(path.dirname(dbPath), { recursive: true });
  const tmp = `${dbPath}.restore-${process.pid}`;
  copyFileSync(path.join(from, BACKUP_FILE), tmp);
  fsyncPath(tmp);
  // The old store's write-ahead log must not be replayed onto the backup.
  rmSync(`${dbPath}.wal`, { force: true });
  renameSync(tmp, dbPath);
  const s = await openStore(o.store);
  try {
    const tables = await tableRows(s);
    const journalSegments = restoreJournal(path.join(from, JOURNAL_DIR), o.journalDir);
    const requeued = requeueArchived(o.journalDir, await loadedSegments(s));
    const theirs = path.join(from, THRESHOLDS_FILE);
    const differ = existsSync(theirs) && (!o.thresholdsFile || !existsSync(o.thresholdsFile) || readFileSync(theirs, 'utf8') !== readFileSync(o.thresholdsFile, 'utf8'));
    return { restored: dbPath, from, replacedRows, tables, journalSegments, requeued, ...(differ ? { backupThresholds: theirs } : {}) };
  } finally {
    s.close();
  }
}

function lakeRefusal(what: 'backup' | 'restore'): UsageError {
  return new UsageError(
    `cbp db ${what} works on a DuckDB file store, and CBP_STORE names a lake: a lake is backed up as its two parts, ` +
      'the catalog database (PostgreSQL: pg_dump, or its point-in-time recovery) and the data path (the Parquet files: a copy, or the ' +
      'object store\'s versioning), taken catalog first; see docs/operations.md, "Backup and restore"',
  );
}
