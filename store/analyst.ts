// Analyst sessions: the one way cbp opens a DuckDB file for a user to read (`cbp sql`, `cbp ratios`,
// `cbp alerts`, `cbp status`, `cbp export`). The file opens read-only with DuckDB's external access off (no
// file read or written besides the database itself, no ATTACH, no network), extension auto-install and
// auto-load off, and then the configuration locked, so no statement can SET or RESET any of it back. The
// session's time zone is UTC, set before the lock. `cbp export` gets one folder it may write into, its own
// staging folder, through DuckDB's allowed_directories (set before external access goes off).
//
// DuckDB allows its temp directory even with external access off; each session gets a private one (a
// fresh folder under the system temp folder, removed at close) so nothing lands beside the snapshot.
import { existsSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ResultReturnType, type DuckDBResultReader } from '@duckdb/node-api';
import { CbpError, isOutOfMemory, NotFoundError, UsageError } from '../lib/errors.ts';
import { sizeBytes } from '../lib/size.ts';
import { DEFAULT_MIGRATIONS_DIR, openStore, type Store } from './db.ts';
import { readMigrations } from './migrate.ts';
import { lakeWithoutSchema, type LakeOptions } from './lake.ts';
import { NoSnapshotError, QueryError, StoreUnavailableError } from './errors.ts';
import { sqlText } from './sql-text.ts';

export interface AnalystSessionOptions {
  /** DuckDB memory_limit (default as the store's, lib/size.ts DEFAULT_STORE_MEMORY). */
  memoryLimit?: string;
  threads?: number;
  /** The one folder the session may write files into (cbp export's staging folder). None by default. */
  writableDir?: string;
  /**
   * cbp's own statements only, never an analyst's SQL: the configuration stays unlocked, so that the session can give
   * back DuckDB's cache between the steps of a long read (Store.releaseMemory). File and network access stay off.
   */
  ownStatementsOnly?: boolean;
}

/** A statement an analyst session refuses: it would write or read a file, attach a database, or change a setting. */
export class QueryRefusedError extends UsageError {}

/** Opens dbPath for reading only, locked down as above. The caller checks the file exists. */
export async function openAnalystSession(dbPath: string, opts: AnalystSessionOptions = {}): Promise<Store> {
  return openLocked({ dbPath }, opts, opts.writableDir ? [opts.writableDir] : []);
}

/**
 * A session locked down as above, on a file or a lake; `allowed`: the folders it may still read and write (external
 * access off but for them). A lake attaches its catalog first, so its access goes off after the open.
 */
async function openLocked(where: { dbPath: string; lake?: LakeOptions }, opts: AnalystSessionOptions, allowed: string[]): Promise<Store> {
  const tempDir = mkdtempSync(path.join(os.tmpdir(), 'cbp-analyst-'));
  const instanceOptions: Record<string, string> = {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    temp_directory: tempDir,
  };
  const initStatements: string[] = [];
  if (allowed.length) {
    // allowed_directories can only be set while external access is on: set it, then turn access off.
    // A folder, or an s3:// prefix (its objects only), each with its trailing separator.
    const dirs = allowed.map((d) => (/^[a-z][a-z0-9+.-]*:\/\//i.test(d) ? `${d.replace(/\/+$/, '')}/` : path.resolve(d) + path.sep));
    initStatements.push(`SET allowed_directories = [${dirs.map(sqlText).join(', ')}]`, 'SET enable_external_access = false');
  } else if (where.lake) {
    initStatements.push('SET enable_external_access = false');
  } else {
    instanceOptions.enable_external_access = 'false';
  }
  let store: Store;
  try {
    store = await openStore({
      dbPath: where.dbPath, lake: where.lake, readOnly: true, migrate: false, memoryLimit: opts.memoryLimit, threads: opts.threads, instanceOptions, initStatements,
      lockConfiguration: !opts.ownStatementsOnly,
    });
  } catch (e) {
    rmSync(tempDir, { recursive: true, force: true });
    throw e;
  }
  const close = store.close.bind(store);
  store.close = () => {
    try {
      close();
    } finally {
      rmSync(tempDir, { recursive: true, force: true });
    }
  };
  return store;
}

/** One file under two names: a symlink, `..`, or a hard link (same device and inode), which a realpath misses. */
function sameFile(a: string, b: string): boolean {
  try {
    const [sa, sb] = [statSync(a, { bigint: true }), statSync(b, { bigint: true })];
    if (sa.dev === sb.dev && sa.ino === sb.ino) return true;
  } catch {
    // One of them does not exist (no store yet): compare the names.
  }
  const real = (p: string) => {
    try {
      return realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return real(a) === real(b);
}

/**
 * The published snapshot (or any file given as one), opened as an analyst session. A clear error when there
 * is none yet; a usage error when the file is the working store, whose lock a reader would hold.
 */
export async function openSnapshotSession(snapshotPath: string, opts: AnalystSessionOptions & { workingStore?: string } = {}): Promise<Store> {
  if (!existsSync(snapshotPath)) {
    throw new NoSnapshotError(
      `No snapshot at ${snapshotPath} yet: run a load first (e.g. \`cbp load chargebacks FILE\`), which publishes one.`,
    );
  }
  if (opts.workingStore && sameFile(snapshotPath, opts.workingStore)) {
    throw new UsageError(
      `${snapshotPath} is the working store, not a snapshot: reading it would hold its lock and stop the pipeline. ` +
        'Read the published snapshot (CBP_SNAPSHOT_PATH; `cbp db snapshot` publishes one now).',
    );
  }
  return openAnalystSession(snapshotPath, opts);
}

/**
 * A lake opened for an analyst: read-only, its latest committed snapshot, with no file access but its data path's
 * and no network but its catalog's; the configuration locked as in a file session.
 */
export async function openLakeAnalystSession(lake: LakeOptions, opts: AnalystSessionOptions = {}): Promise<Store> {
  const store = await openLocked({ dbPath: 'lake', lake }, opts, [lake.dataPath, ...(opts.writableDir ? [opts.writableDir] : [])]);
  // Its schema is made in one commit (store/migrate.ts): a reader finds all of it or none.
  const [made] = await store.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM duckdb_tables() WHERE database_name = current_database() AND table_name = 'schema_migrations'");
  if (!made?.n) {
    store.close();
    throw new NotFoundError(lakeWithoutSchema(lake));
  }
  return store;
}

/**
 * Runs a read of many statements on one committed version: on a lake, in one transaction (its first read fixes the
 * snapshot); a file store's reading session reads one version already (a snapshot file, or a store no other process writes).
 */
export async function onOneSnapshot<T>(store: Pick<Store, 'lake' | 'run'>, fn: () => Promise<T>): Promise<T> {
  if (!store.lake) return fn();
  await store.run('BEGIN TRANSACTION');
  try {
    const out = await fn();
    await store.run('COMMIT');
    return out;
  } catch (e) {
    await store.run('ROLLBACK').catch(() => undefined);
    throw e;
  }
}

/** Where a reading command reads: the published snapshot, else the store itself (read-only); or the lake. */
export interface ReadingPaths {
  snapshotPath: string;
  dbPath: string;
  /** the configured lake: read in place (no snapshot file) */
  lake?: LakeOptions;
  memoryLimit?: string;
  /** DuckDB threads (default: the core count) */
  threads?: number;
  /** see AnalystSessionOptions.ownStatementsOnly */
  ownStatementsOnly?: boolean;
}

/**
 * The session `cbp ratios` and `cbp report` read: the snapshot when one is published (or named), else the store
 * itself, read-only; either way an analyst session. Both read views and tables of this cbp's schema, which a
 * read-only session cannot create: a snapshot published by an older cbp (or a store no writer of this one
 * opened yet) is refused with what to run (NotFoundError), instead of a catalog error from deep in a query.
 */
export async function openReadingSession(paths: ReadingPaths, snapshot?: string): Promise<Store> {
  const snap = snapshot ?? paths.snapshotPath;
  const onLake = paths.lake !== undefined && snapshot === undefined;
  const fromSnapshot = !onLake && (snapshot !== undefined || existsSync(snap));
  if (!onLake && !fromSnapshot && !existsSync(paths.dbPath)) throw new NotFoundError(`Neither a snapshot (${snap}) nor a store (${paths.dbPath}) exists yet: load some reports first.`);
  const opts = { memoryLimit: paths.memoryLimit, threads: paths.threads, ownStatementsOnly: paths.ownStatementsOnly };
  const store = onLake
    ? await openLakeAnalystSession(paths.lake!, opts)
    : fromSnapshot
      ? await openSnapshotSession(snap, { ...opts, workingStore: paths.dbPath })
      : await openAnalystSession(paths.dbPath, opts);
  try {
    const need = Math.max(0, ...readMigrations(DEFAULT_MIGRATIONS_DIR).map((m) => m.version));
    const [row] = await store.all<{ v: number | null }>('SELECT max(version)::INTEGER AS v FROM schema_migrations').catch(() => [{ v: null }]);
    const has = row?.v ?? 0;
    if (has < need) {
      throw new NotFoundError(fromSnapshot
        ? `The snapshot ${snap} was published by an older cbp (its schema is at migration ${has}; this cbp reads ${need}): ` +
          'publish it again with `cbp db snapshot` (it brings the store up to date first), or let the next run do it, then run this again.'
        : `The store ${store.dbPath} is not up to date with this cbp (its schema is at migration ${has}; this cbp reads ${need}): ` +
          'run `cbp db migrate` (or any run, which migrates on opening), then run this again.');
    }
  } catch (e) {
    store.close();
    throw e;
  }
  return store;
}

/** The SQL with comments, string literals and quoted names blanked, so keywords are found only as keywords. */
function keywordsOnly(sql: string): string {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\/|'(?:[^']|'')*'|"(?:[^"]|"")*"/g, ' ');
}

const PREFIX = 'cbp sql reads the snapshot only';
const EXPORT_HINT = 'to write files use `cbp export --format parquet|csv --out DIR`';

/** DuckDB's refusals (external access off, configuration locked) said as what to do instead; undefined for other errors. */
export function explainRefusal(error: unknown, sql: string): QueryRefusedError | undefined {
  const msg = error instanceof Error ? error.message : String(error);
  const kw = keywordsOnly(sql);
  const locked = /configuration has been locked/i.exec(msg);
  if (locked) {
    const option = /configuration option "([^"]+)"/i.exec(msg)?.[1];
    return new QueryRefusedError(
      `${PREFIX}: settings cannot be changed (SET, RESET or PRAGMA${option ? ` of ${option}` : ''}); ` +
        'the session is read-only, in UTC, without file or network access, and stays so.',
    );
  }
  if (/attached in read-only mode/i.test(msg)) {
    return new QueryRefusedError(`${PREFIX}: it cannot change data (INSERT, UPDATE, DELETE, CREATE, DROP); temp tables work: CREATE TEMP TABLE t AS SELECT ...`);
  }
  if (!/disabled (by|through) configuration/i.test(msg)) return undefined;
  if (/\bATTACH\b/i.test(kw)) {
    return new QueryRefusedError(`${PREFIX}: ATTACH is not allowed; to query another snapshot file use \`cbp sql --snapshot FILE\`.`);
  }
  if (/\b(INSTALL|LOAD)\b/i.test(kw) || /extension/i.test(msg)) {
    return new QueryRefusedError(
      `${PREFIX}: INSTALL and LOAD of extensions are not allowed; json, parquet and icu (time zones) are built in.`,
    );
  }
  if (/\bEXPORT\s+DATABASE\b/i.test(kw)) return new QueryRefusedError(`${PREFIX}: EXPORT DATABASE is not allowed; ${EXPORT_HINT}.`);
  if (/\bCOPY\b[\s\S]*\bTO\b/i.test(kw)) return new QueryRefusedError(`${PREFIX}: COPY ... TO is not allowed; ${EXPORT_HINT}.`);
  return new QueryRefusedError(
    `${PREFIX}: reading other files (read_csv, read_text, read_parquet, glob, COPY ... FROM, IMPORT DATABASE) is not allowed; ` +
      'load reports with `cbp load KIND FILE`, or open your own files with your own DuckDB client.',
  );
}

/**
 * PRAGMAs and table functions that change the session although its configuration is locked (DuckDB 1.5 checks
 * the lock for settings only): profiling (plan trees printed into the query's output, or a file to write),
 * logging (a file storage fails every later statement and aborts the process at exit), the optimizer,
 * verification, progress bars, the object cache, checkpoint on shutdown, Parquet keys, the parser. Found in
 * `duckdb_functions()` (types pragma and table); test/analyst-session.test.ts lists every PRAGMA and table
 * function DuckDB has as either refused here or only reading, so an upgrade that adds one fails that test.
 */
const SESSION_CHANGING = new RegExp(
  '\\b(' +
    [
      '(?:enable|disable)_(?:profiling|profile|optimizer|verification|progress_bar|print_progress_bar|object_cache|checkpoint_on_shutdown|logging|peg_parser)',
      '(?:disable_)?verify_(?:external|parallelism|serializer|fetch_row)',
      'truncate_duckdb_logs',
      'add_parquet_key',
    ].join('|') +
    ')\\b',
  'i',
);

/** What to use instead of a session-changing function, by what it changes. */
function sessionChangeHint(name: string): string {
  if (/profil/i.test(name)) return 'to see how a query runs use EXPLAIN ANALYZE <query>, whose plan with timings comes back as its result';
  if (/log/i.test(name)) return 'the session keeps no log';
  return "the session's settings are fixed";
}

export interface AnalystQueryOptions {
  /** Told (one line, no prefix) when statements before the last returned rows that are not in the result. */
  notice?: (message: string) => void;
}

/**
 * Runs an analyst's SQL on a session from openAnalystSession: DuckDB itself refuses what the lock-down forbids,
 * and the refusal comes back as a QueryRefusedError saying what to use instead. Several statements run in
 * order and the result is the last one's (as `psql -c` does), so `SET VARIABLE ...; SELECT ...` and
 * `CREATE TEMP TABLE ...; SELECT ...` work; earlier statements that returned rows are named through notice.
 */
export async function runAnalystQuery(store: Store, sql: string, opts: AnalystQueryOptions = {}): Promise<DuckDBResultReader> {
  const changing = SESSION_CHANGING.exec(keywordsOnly(sql));
  if (changing) {
    const name = changing[1].toLowerCase();
    throw new QueryRefusedError(`${PREFIX}: ${name} is not allowed, it would change the session; ${sessionChangeHint(name)}.`);
  }
  if (!sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\/|;/g, '').trim()) throw new UsageError('the query holds no SQL statement');
  try {
    let statements;
    try {
      statements = await store.conn.extractStatements(sql);
    } catch (e) {
      // The parser's own message, without the "Failed to extract statements:" node-api puts in front.
      throw new Error((e instanceof Error ? e.message : String(e)).replace(/^Failed to extract statements:\s*/, ''));
    }
    const unprinted: number[] = [];
    for (let i = 0; i < statements.count - 1; i++) {
      const prepared = await statements.prepare(i);
      try {
        if ((await prepared.run()).returnType === ResultReturnType.QUERY_RESULT) unprinted.push(i + 1);
      } finally {
        prepared.destroySync();
      }
    }
    const last = await statements.prepare(statements.count - 1);
    let reader: DuckDBResultReader;
    try {
      reader = await last.runAndReadAll();
    } finally {
      last.destroySync();
    }
    if (unprinted.length) {
      const which = unprinted.length === 1 ? `statement ${unprinted[0]}` : `statements ${unprinted.join(', ')}`;
      opts.notice?.(
        `printed the result of the last statement (${statements.count} of ${statements.count}) only; ${which} also returned rows: run ${unprinted.length === 1 ? 'it' : 'each'} on its own to see them`,
      );
    }
    return reader;
  } catch (e) {
    throw explainRefusal(e, sql) ?? outOfMemory(e, store.memoryLimit) ?? queryError(e);
  }
}

/** Any other DuckDB failure of the query as a coded error (cbp's own errors pass as they are). */
function queryError(e: unknown): unknown {
  if (e instanceof CbpError || !(e instanceof Error)) return e;
  return new QueryError(e.message, { cause: e });
}

/**
 * DuckDB's "Out of Memory Error" as the store's own error: the limit the query ran under, and what to do. DuckDB's own
 * advice (SET memory_limit, SET threads) is left out: the session cannot take it (its configuration is locked), the
 * setting CBP_STORE_MEMORY_LIMIT can. How to make a query smaller: the ratio views compute what they are asked for from
 * the sources, every month of every MID for mart_ratios itself, a range of months through their macros, a range of
 * MIDs where the query filters on mid (pushed down to the scans). Undefined for any other error.
 */
function outOfMemory(e: unknown, memoryLimit: string): StoreUnavailableError | undefined {
  if (!isOutOfMemory(e)) return undefined;
  const first = (e instanceof Error ? e.message : String(e)).split('\n')[0].trim();
  const twice = sizeBytes(memoryLimit) * 2;
  const more = !Number.isFinite(twice) ? 'a larger size' : twice >= 1e9 ? `${Number((twice / 1e9).toFixed(1))}GB` : `${Math.ceil(twice / 1e6)}MB`;
  return new StoreUnavailableError(
    `the query needs more memory than the store's limit allows (${memoryLimit}, CBP_STORE_MEMORY_LIMIT): raise it for this run ` +
      `(e.g. CBP_STORE_MEMORY_LIMIT=${more}), or narrow it: mart_ratios_between(DATE '2026-01-01', DATE '2026-06-01') computes ` +
      "the ratios of those months only (first days of the first and the last month), and a WHERE on mid (mid = '...', " +
      `mid BETWEEN '...' AND '...') is read from the scans. (DuckDB: ${first})`,
    { cause: e },
  );
}
