// Opening the analytics store: one DuckDB file, one writer. Opening applies the numbered migrations and makes the
// views when their files changed, so every caller sees the same schema without a separate step.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance, type DuckDBConnection, type DuckDBValue } from '@duckdb/node-api';
import { fastColumn, rowObjects } from './db-chunks.ts';
import { applySchema, type MigrateResult } from './migrate.ts';
import { storeThreads } from './threads.ts';
import { attachLake, isLakeConflict, lakeInstanceOptions, lakeLabel, lakeOpenError, lakeRuntimeError, lakeWatch, retryLakeRace, type LakeOptions } from './lake.ts';
import { StoreHeldError, StoreUnavailableError } from './errors.ts';
import { isOutOfMemory } from '../lib/errors.ts';
import { lakeWriterLock } from './lake-lock.ts';
import { BUMP_GENERATION_SQL, hasGenerationTable } from './generation.ts';
import { serialQueue } from '../lib/serial.ts';
import { PACKAGE_ROOT } from '../lib/package-root.ts';
import { DEFAULT_STORE_MEMORY } from '../lib/size.ts';
import { foldLog, memoryControls, replayLimit } from './db-memory.ts';

export const DEFAULT_MIGRATIONS_DIR = path.join(PACKAGE_ROOT, 'sql', 'migrations');
export const DEFAULT_VIEWS_DIR = path.join(PACKAGE_ROOT, 'sql', 'views');

export type Params = DuckDBValue[] | Record<string, DuckDBValue>;
export type Row = Record<string, unknown>;

/** An observer of every store's statements: `begin` as one starts, its return as it ends (the lake and ratio engine benches). */
export const statementWatch: { begin?: (sql: string) => () => void } = {};

export interface StoreOptions {
  dbPath: string;
  readOnly?: boolean;
  /** Apply migrations and views on open (default: true for a writer, false read-only). */
  migrate?: boolean;
  migrationsDir?: string;
  viewsDir?: string;
  /** Make the views again even when their files have not changed since the store took them (`cbp db migrate`). */
  remakeViews?: boolean;
  /**
   * DuckDB memory_limit (default DEFAULT_STORE_MEMORY, 192MB, setting CBP_STORE_MEMORY_LIMIT; lib/size.ts says why).
   * DuckDB keeps it only roughly: a higher limit raises a load's peak memory for no speed (bench/load.bench.ts).
   */
  memoryLimit?: string;
  /** DuckDB threads (default: the process's, store/threads.ts). */
  threads?: number;
  /**
   * How long to wait for the file lock when another process holds it, in ms (default 5000). A short reader
   * (`cbp status` opening the store read-only for a moment) then delays a run instead of failing it; a writer
   * that holds it for good (a worker) still gets the lock message after the wait.
   */
  lockWaitMs?: number;
  /** More DuckDB instance options set at open (store/analyst.ts: external access and extensions off). */
  instanceOptions?: Record<string, string>;
  /**
   * Statements run once right after open, after the session's UTC time zone is set and before the store is
   * handed out.
   */
  initStatements?: string[];
  /** Locks the session's configuration after initStatements (an analyst session's): capMemory and releaseMemory then set nothing. */
  lockConfiguration?: boolean;
  /** A DuckLake lake instead of the file (store/lake.ts): dbPath is then only its label. */
  lake?: LakeOptions;
}

/** A result read column by column (Store.columns). */
export interface ColumnsResult {
  length: number;
  /** the named column's values (an empty list when the result has no such column) */
  column(name: string): readonly unknown[];
}

export interface TransactionOptions {
  /** Raise the store's generation on COMMIT (default true). */
  generation?: boolean;
}

export interface Store {
  /** The DuckDB file; for a lake, its setting with the password masked. */
  readonly dbPath: string;
  /** The lake this store is (undefined: a DuckDB file). */
  readonly lake?: LakeOptions;
  readonly readOnly: boolean;
  readonly instance: DuckDBInstance;
  readonly conn: DuckDBConnection;
  /** What opening did to the schema (undefined when migrate was off). */
  readonly migration?: MigrateResult;
  run(sql: string, params?: Params): Promise<void>;
  /** Rows as JSON-safe objects (BIGINT and DECIMAL as strings or numbers, timestamps as text). */
  all<T = Row>(sql: string, params?: Params): Promise<T[]>;
  /**
   * The result column by column, values as DuckDB's reader gives them (VARCHAR a string, DOUBLE and INTEGER a number,
   * BIGINT a bigint, DATE a value whose String() is YYYY-MM-DD): far fewer objects than all's rows, for results of
   * many thousand rows.
   */
  columns(sql: string, params?: Params): Promise<ColumnsResult>;
  /**
   * Each row of the result made into a T, chunk by chunk: `prepare` is given each chunk's columns by name (`column`:
   * the chunk's values of that column as columns gives them; none for a column the result lacks) and returns the
   * maker of the chunk's row i. For results of tens of thousands of rows read into objects: no list of the whole
   * result per column, and no call per value.
   */
  mapRows<T>(sql: string, params: Params | undefined, prepare: (column: (name: string) => readonly unknown[]) => (row: number) => T): Promise<T[]>;
  /**
   * Runs fn inside BEGIN/COMMIT; ROLLBACK on any throw. A transaction takes the connection's lane (see
   * exclusive): one made from inside another, or inside an exclusive section, joins it; one from any other
   * caller waits for it. Before COMMIT it raises the store's generation (store/generation.ts), so the
   * snapshot's publish step knows the store changed; `{ generation: false }` is only for bookkeeping the
   * snapshot need not wait for (the run log). On a lake, it runs in the writers' turn (writerTurn) instead, and a
   * commit another process's changes still conflict with is run again whole (fn must be safe to run twice).
   */
  transaction<T>(fn: (store: Store) => Promise<T>, opts?: TransactionOptions): Promise<T>;
  /**
   * On a lake opened to write: fn in this process's turn among the lake's writers (store/lake-lock.ts), waiting for
   * another process's turn to end first. Elsewhere: fn. Transactions take it themselves; fn must not start one (the
   * lane is taken before the turn, never after).
   */
  writerTurn<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs fn alone on the connection's lane, the one serialising queue of this connection: other callers'
   * transactions and sections wait until it settles, in call order. Transactions and sections started inside
   * fn (anywhere in its async calls) join it instead of waiting. For work that spans more than one transaction
   * and shares the connection's temp tables (a report load: staging, then its transaction). Plain run/all
   * calls do not queue.
   */
  exclusive<T>(fn: (store: Store) => Promise<T>): Promise<T>;
  /**
   * Gives the system back the memory DuckDB keeps from finished work. 'all' (the default): the blocks it caches up
   * to memory_limit, and what its allocator holds on to: for the end of big work in a process that lives on (a
   * worker's nightly evaluation), whose resident memory would otherwise stay at the high-water mark; the next query
   * reads its blocks from the file again. 'allocator': only what the allocator holds on to of memory queries
   * freed (hundreds of megabytes after a big refresh), the cache kept: cheap, for between the steps of big work.
   * It sets the limit (lowered for a moment and restored, for 'all'), in one call: no statement of another caller
   * runs in between. Nothing happens inside a transaction, nor on a store whose configuration is locked (an analyst
   * session): false then.
   */
  releaseMemory(what?: 'all' | 'allocator'): Promise<boolean>;
  /**
   * Runs fn with DuckDB's memory limit lowered to `bytes` (when below the store's), then restores it: for reads that
   * scan each block once, whose cache would only raise the process's peak. Where the limit cannot be set (a locked
   * session, blocks held) or inside a transaction (a statement out of memory would end it), fn runs under the limit as
   * it is; releaseMemory inside restores the lowered one. A cap inside one lowers it further only. fn runs alone on the
   * connection's lane (see exclusive). `rerun`: fn only reads, and runs once more under the limit outside the cap when
   * it ran out of memory under it.
   */
  capMemory<T>(bytes: number, fn: () => Promise<T>, opts?: { rerun?: boolean }): Promise<T>;
  /** DuckDB's memory_limit as the store was opened with it ("192MB"): what work sized to memory reads. */
  readonly memoryLimit: string;
  /** Closes the store; with queries in flight, interrupts them and closes once they have ended. */
  close(): void;
}

/** DuckDB's refusal of a file another process holds ("Could not set lock on file … Conflicting lock is held"), not any "block". */
const isLockHeld = (e: unknown) => /could not set lock|conflicting lock/i.test(String((e as Error)?.message ?? e));

async function createWaitingForLock(dbPath: string, options: Record<string, string>, waitMs: number): Promise<DuckDBInstance> {
  const until = Date.now() + waitMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 500)) {
    try {
      return await DuckDBInstance.create(dbPath, options);
    } catch (e) {
      if (!isLockHeld(e) || Date.now() + delay > until) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}

/** The writers' lock was lost mid-transaction (its connection broke): the step is rolled back and run again. */
class LakeTurnLost extends Error {
  constructor() { super("the lake's writer lock was lost mid-step (its connection to PostgreSQL broke)"); }
}

export async function openStore(opts: StoreOptions): Promise<Store> {
  const readOnly = opts.readOnly ?? false;
  const lake = opts.lake;
  if (!readOnly && !lake && opts.dbPath !== ':memory:') mkdirSync(path.dirname(path.resolve(opts.dbPath)), { recursive: true });
  const options: Record<string, string> = {
    memory_limit: opts.memoryLimit ?? DEFAULT_STORE_MEMORY,
    // Memory a query freed goes back to the system at its end once above this (DuckDB's default, 128MB, left a
    // full alert evaluation holding more between its batches).
    allocator_flush_threshold: '8MB',
    // ... and any large free (a finished query's hash tables) at once: DuckDB's default, 512MB, left a refresh of
    // every month's ratio inputs holding more at its peak.
    allocator_bulk_deallocation_flush_threshold: '1MB',
    // Loads never rely on insertion order; dropping it lets DuckDB stream big inserts with less memory.
    preserve_insertion_order: 'false',
  };
  const threads = opts.threads ?? storeThreads();
  if (threads) options.threads = String(threads);
  // A lake's instance is in memory (its catalog is PostgreSQL, its data Parquet files): read-only is the ATTACH's.
  if (readOnly && !lake) options.access_mode = 'READ_ONLY';
  Object.assign(options, opts.instanceOptions, lake ? lakeInstanceOptions(lake) : {});
  let instance: DuckDBInstance;
  const replay = lake ? undefined : replayLimit(opts.dbPath, options.memory_limit);
  try {
    instance = lake ? await DuckDBInstance.create(':memory:', options)
      : await createWaitingForLock(opts.dbPath, replay ? { ...options, memory_limit: replay } : options, opts.lockWaitMs ?? 5_000);
  } catch (e) {
    if (lake) throw lakeOpenError(lake, e);
    const msg = (e as Error).message;
    if (isLockHeld(e)) throw new StoreHeldError(`The store ${opts.dbPath} is held by another process (DuckDB allows one writer). Stop it, or query the published snapshot with \`cbp sql\`. (${msg})`, { cause: e });
    const more = isOutOfMemory(e) ? ' within its memory limit: raise CBP_STORE_MEMORY_LIMIT' : '';
    throw new StoreUnavailableError(`Cannot open the store ${opts.dbPath}${more}: ${msg}`, { cause: e });
  }
  const conn = await instance.connect();
  try {
    // UTC everywhere (ICU loads only after open, so this cannot be an open option).
    await conn.run("SET TimeZone = 'UTC'");
    if (replay && !readOnly) await foldLog(conn, options.memory_limit, replay);
    if (lake) {
      await attachLake((sql) => conn.run(sql), lake, readOnly);
    }
    for (const sql of opts.initStatements ?? []) await conn.run(sql);
    if (opts.lockConfiguration) await conn.run('SET lock_configuration = true');
  } catch (e) {
    conn.closeSync();
    instance.closeSync();
    throw e;
  }
  // (a read-only store keeps the room its replayed log takes: it cannot fold it)
  const limit = replay && readOnly ? replay : options.memory_limit;
  let inTx = false;
  let bumpOnCommit = false;
  // Known once seen: stores opened with other migrations (tests) may lack the table.
  let generationTable = false;
  // One connection, one lane: a transaction's statements must not interleave with another caller's, and a
  // caller inside the lane is known by its async context (a flag on the store would let any concurrent
  // caller join an open transaction, and see its writes rolled back with it). A section's mark is cleared
  // when it ends, so work it left running (a timer, a stream) queues like any other caller afterwards.
  const lane = serialQueue();
  const section = new AsyncLocalStorage<{ open: boolean }>();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    if (section.getStore()?.open) return fn();
    return lane(() => {
      const mark = { open: true };
      return section.run(mark, fn).finally(() => {
        mark.open = false;
      });
    });
  };

  // Queries in flight: closing the connection under one deadlocks the thread running it (DuckDB destroys the client
  // context there, under its own lock) and the process never exits. close() interrupts them and closes after.
  const inflight = new Set<Promise<unknown>>();
  let closing = false;
  const q = <T>(start: () => Promise<T>, sql: string): Promise<T> => {
    if (closing) return Promise.reject(new Error('the store is closed'));
    const ended = statementWatch.begin?.(sql);
    const p = lake ? lakeWatch(lake, start(), () => conn.interrupt()).catch((e: unknown) => Promise.reject(lakeRuntimeError(lake, e))) : start();
    inflight.add(p);
    const done = () => { inflight.delete(p); ended?.(); };
    void p.then(done, done);
    return p;
  };
  const run = (sql: string, params?: Params) => q(() => conn.run(sql, params), sql);
  const writer = lake && !readOnly ? lakeWriterLock(lake) : undefined;
  // One turn at a time in this process too (a session's advisory lock is re-entrant); one inside a turn joins it.
  const turns = serialQueue();
  const inTurn = new AsyncLocalStorage<{ open: boolean }>();
  const writerTurn = <T>(fn: () => Promise<T>): Promise<T> => {
    if (!writer || inTurn.getStore()?.open) return fn();
    return turns(async () => {
      await writer.acquire();
      const mark = { open: true };
      try {
        return await inTurn.run(mark, fn);
      } finally {
        mark.open = false;
        await writer.release();
      }
    });
  };

  const store: Store = {
    dbPath: lake ? lakeLabel(lake) : opts.dbPath,
    lake,
    readOnly,
    instance,
    conn,
    async run(sql, params) {
      await run(sql, params);
    },
    async all<T = Row>(sql: string, params?: Params) {
      return rowObjects(await run(sql, params)) as T[];
    },
    async columns(sql: string, params?: Params) {
      const reader = await q(() => conn.runAndReadAll(sql, params), sql);
      const names = reader.columnNames();
      const cols = reader.getColumns();
      return { length: reader.currentRowCount, column: (name: string) => cols[names.indexOf(name)] ?? [] };
    },
    async mapRows<T>(sql: string, params: Params | undefined, prepare: (column: (name: string) => readonly unknown[]) => (row: number) => T): Promise<T[]> {
      const result = await run(sql, params);
      const index = new Map(result.columnNames().map((name, i) => [name, i]));
      const types = result.columnTypes();
      const out: T[] = new Array(result.rowCount);
      let n = 0;
      for (let c = 0; c < result.chunkCount; c++) {
        const chunk = result.getChunk(c);
        const rows = chunk.rowCount;
        // Each column read whole when asked for: straight from its memory where its type allows (fastColumn), else
        // through its vector.
        const make = prepare((name) => {
          const i = index.get(name);
          if (i === undefined) return [];
          const fast = fastColumn(chunk, i, types[i], rows);
          if (fast) return fast;
          const vector = chunk.getColumnVector(i);
          const values: unknown[] = new Array(rows);
          for (let r = 0; r < rows; r++) values[r] = vector.getItem(r);
          return values;
        });
        for (let r = 0; r < rows; r++) out[n++] = make(r);
      }
      out.length = n;
      return out;
    },
    transaction<T>(fn: (s: Store) => Promise<T>, txOpts?: TransactionOptions): Promise<T> {
      return exclusive(async () => {
        if (inTx) {
          if (!lake && txOpts?.generation !== false) bumpOnCommit = true;
          return fn(store);
        }
        inTx = true;
        try {
          // On a lake, a commit another process's commit conflicts with is run again whole (store/lake.ts).
          return await retryLakeRace(() => writerTurn(async () => {
            // A lake has no snapshot to publish, and its writers take turns: no generation to raise.
            bumpOnCommit = !lake && txOpts?.generation !== false;
            await run('BEGIN TRANSACTION');
            try {
              const out = await fn(store);
              if (bumpOnCommit && !readOnly && (generationTable ||= await hasGenerationTable(store))) await run(BUMP_GENERATION_SQL);
              if (writer && !writer.intact()) throw new LakeTurnLost();
              await run('COMMIT');
              return out;
            } catch (e) {
              await run('ROLLBACK').catch(() => undefined);
              // A statement that met the catalog gone mid-step may say only that its transaction was aborted: run it again.
              if (writer && !closing && !(e instanceof LakeTurnLost) && !(e instanceof StoreUnavailableError) && !(await writer.answers())) throw new LakeTurnLost();
              throw e;
            }
          }), (e) => lake !== undefined && !closing && (isLakeConflict(e) || e instanceof LakeTurnLost));
        } finally {
          inTx = false;
        }
      });
    },
    exclusive<T>(fn: (s: Store) => Promise<T>): Promise<T> {
      return exclusive(() => fn(store));
    },
    writerTurn,
    memoryLimit: limit,
    ...memoryControls({ run, exclusive, inTx: () => inTx, locked: opts.lockConfiguration === true, limit }),
    close() {
      if (closing) return;
      closing = true;
      void writer?.close();
      const shut = () => {
        conn.closeSync();
        instance.closeSync();
      };
      if (inflight.size === 0) return shut();
      conn.interrupt();
      void Promise.allSettled([...inflight]).then(shut);
    },
  };

  if (opts.migrate ?? !readOnly) {
    try {
      const dirs = { migrations: opts.migrationsDir ?? DEFAULT_MIGRATIONS_DIR, views: opts.viewsDir ?? DEFAULT_VIEWS_DIR };
      (store as { migration?: MigrateResult }).migration = await applySchema(store, dirs, { force: opts.remakeViews === true });
    } catch (e) {
      store.close();
      throw e;
    }
  }
  return store;
}
