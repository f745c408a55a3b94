// Analyst sessions: the one way cbp opens a DuckDB file for a user to read (`cbp sql`, `cbp ratios`,
// `cbp alerts`, `cbp status`, `cbp export`). The file opens read-only with DuckDB's external access off (no
// file read or written besides the database itself, no ATTACH, no network), extension auto-install and
// auto-load off, and then the configuration locked, so no statement can SET or RESET any of it back. The
// session's time zone is UTC, set before the lock. `cbp export` gets one folder it may write into, its own
// staging folder, through DuckDB's allowed_directories (set before external access goes off).
//
// DuckDB allows its temp directory even with external access off; each session gets a private one (a
// fresh folder under the system temp folder, removed at close) so nothing lands beside the snapshot.
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DuckDBResultReader } from '@duckdb/node-api';
import { UsageError } from '../lib/errors.ts';
import { openStore, type Store } from './db.ts';
import { NoSnapshotError } from './errors.ts';

export interface AnalystSessionOptions {
  /** DuckDB memory_limit (default 256MB, as the store). */
  memoryLimit?: string;
  threads?: number;
  /** The one folder the session may write files into (cbp export's staging folder). None by default. */
  writableDir?: string;
}

/** A statement an analyst session refuses: it would write or read a file, attach a database, or change a setting. */
export class QueryRefusedError extends UsageError {}

const sqlText = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Opens dbPath for reading only, locked down as above. The caller checks the file exists. */
export async function openAnalystSession(dbPath: string, opts: AnalystSessionOptions = {}): Promise<Store> {
  const tempDir = mkdtempSync(path.join(os.tmpdir(), 'cbp-analyst-'));
  const instanceOptions: Record<string, string> = {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    temp_directory: tempDir,
  };
  const initStatements: string[] = [];
  if (opts.writableDir) {
    // allowed_directories can only be set while external access is on: set it, then turn access off.
    const dir = path.resolve(opts.writableDir);
    initStatements.push(`SET allowed_directories = [${sqlText(dir + path.sep)}]`, 'SET enable_external_access = false');
  } else {
    instanceOptions.enable_external_access = 'false';
  }
  initStatements.push('SET lock_configuration = true');
  let store: Store;
  try {
    store = await openStore({
      dbPath, readOnly: true, migrate: false, memoryLimit: opts.memoryLimit, threads: opts.threads, instanceOptions, initStatements,
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

function sameFile(a: string, b: string): boolean {
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
 * Runs an analyst's SQL on a session from openAnalystSession: DuckDB itself refuses what the lock-down forbids,
 * and the refusal comes back as a QueryRefusedError saying what to use instead.
 */
export async function runAnalystQuery(store: Store, sql: string): Promise<DuckDBResultReader> {
  // enable_logging() changes the session's log storage despite the lock (DuckDB 1.5), and a file storage
  // then fails every later statement and aborts the process at exit: refused before DuckDB sees it.
  if (/\b(enable_logging|disable_logging|truncate_duckdb_logs)\s*\(/i.test(keywordsOnly(sql))) {
    throw new QueryRefusedError(`${PREFIX}: enable_logging, disable_logging and truncate_duckdb_logs are not allowed; the session's settings are fixed.`);
  }
  try {
    return await store.conn.runAndReadAll(sql);
  } catch (e) {
    throw explainRefusal(e, sql) ?? e;
  }
}
