// Opening the analytics store: one DuckDB file, one writer. Opening applies the numbered migrations and
// (re)creates the views, so every caller sees the same schema without a separate step.
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { createRequire } from 'node:module';
import {
  DuckDBEnumType, DuckDBInstance, DuckDBTypeId, JsonDuckDBValueConverter, type DuckDBConnection, type DuckDBDataChunk, type DuckDBMaterializedResult,
  type DuckDBType, type DuckDBValue,
} from '@duckdb/node-api';
import { applyMigrations, applyViews, type MigrateResult } from './migrate.ts';
import { attachLake, isLakeConflict, lakeInstanceOptions, lakeLabel, lakeOpenError, lakeRuntimeError, lakeWatch, retryLakeRace, type LakeOptions } from './lake.ts';
import { StoreUnavailableError } from './errors.ts';
import { BUMP_GENERATION_SQL, hasGenerationTable } from './generation.ts';
import { serialQueue } from '../lib/serial.ts';
import { PACKAGE_ROOT } from '../lib/package-root.ts';
import { DEFAULT_STORE_MEMORY } from '../lib/size.ts';

export const DEFAULT_MIGRATIONS_DIR = path.join(PACKAGE_ROOT, 'sql', 'migrations');
export const DEFAULT_VIEWS_DIR = path.join(PACKAGE_ROOT, 'sql', 'views');

export type Params = DuckDBValue[] | Record<string, DuckDBValue>;
export type Row = Record<string, unknown>;

export interface StoreOptions {
  dbPath: string;
  readOnly?: boolean;
  /** Apply migrations and views on open (default: true for a writer, false read-only). */
  migrate?: boolean;
  migrationsDir?: string;
  viewsDir?: string;
  /**
   * DuckDB memory_limit (default DEFAULT_STORE_MEMORY, 192MB, setting CBP_STORE_MEMORY_LIMIT; lib/size.ts says why).
   * DuckDB keeps it only roughly: a higher limit raises a load's peak memory for no speed (bench/load.bench.ts).
   */
  memoryLimit?: string;
  /** DuckDB threads (default: DuckDB's own, the core count). */
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
   * handed out (store/analyst.ts ends them with `SET lock_configuration = true`).
   */
  initStatements?: string[];
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
   * snapshot need not wait for (the run log). On a lake, that raise makes any two writing transactions of any
   * processes conflict, and the one that loses is run again whole (fn must be safe to run twice: it was rolled back).
   */
  transaction<T>(fn: (store: Store) => Promise<T>, opts?: TransactionOptions): Promise<T>;
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
  /** DuckDB's memory_limit as the store was opened with it ("192MB"): what work sized to memory reads. */
  readonly memoryLimit: string;
  /** Closes the store; with queries in flight, interrupts them and closes once they have ended. */
  close(): void;
}

/**
 * A result's rows as objects keyed by column name (a name repeated gets ":1", ":2"... as DuckDB's reader names it),
 * values as its getRowObjectsJson gives them. Each object is made from one object literal for the result's columns,
 * so that its properties are fast ones: the reader adds them one by one, which for wide rows leaves objects in
 * dictionary mode, which takes far more memory a row. The values are read a chunk and a column at a time. (The result is materialized, not streamed: a streamed
 * result is cut short by any other query on the connection meanwhile, and callers run several at once.)
 */
function rowObjects(result: DuckDBMaterializedResult): Row[] {
  const names = result.deduplicatedColumnNames();
  // JSON.stringify makes any name a string literal: nothing in it runs. "__proto__" as a computed key defines an own
  // property (as a literal key it would set the prototype).
  const key = (n: string) => (n === '__proto__' ? `[${JSON.stringify(n)}]` : JSON.stringify(n));
  const make = new Function('c', 'i', `return {${names.map((n, j) => `${key(n)}: c[${j}][i]`).join(', ')}};`) as (c: unknown[][], i: number) => Row;
  const types = result.columnTypes();
  const out: Row[] = [];
  // One string per distinct text of a column, shared by its rows (a network, a month, a state): the text the converter
  // made for each row is garbage at once instead of held. A mart_ratios row holds 513 bytes so, against 835 with a
  // string of its own in each text column. A column with more than INTERN_MAX distinct texts keeps its rows' own from
  // then on.
  const interned = types.map(() => new Map<string, string>());
  for (let k = 0; k < result.chunkCount; k++) {
    const chunk = result.getChunk(k);
    const n = chunk.rowCount;
    // Numbers, booleans and ENUMs straight from the column's memory (fastColumn; a non-finite DOUBLE as its text, as the
    // JSON converter gives it), any other type through the converter.
    const cols = types.map((type, j) => {
      const fast = fastColumn(chunk, j, type, n);
      if (!fast) return intern(chunk.convertColumnValues(j, JsonDuckDBValueConverter), interned[j]);
      if (type.typeId === DuckDBTypeId.DOUBLE || type.typeId === DuckDBTypeId.FLOAT) {
        for (let i = 0; i < n; i++) if (typeof fast[i] === 'number' && !Number.isFinite(fast[i])) fast[i] = String(fast[i]);
      }
      return fast;
    });
    for (let i = 0; i < n; i++) out.push(make(cols, i));
  }
  return out;
}

const INTERN_MAX = 4096;

/** The column's texts replaced by the map's string of the same text (added while the map holds under INTERN_MAX). */
function intern(values: unknown[], seen: Map<string, string>): unknown[] {
  if (seen.size >= INTERN_MAX) return values;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (typeof v !== 'string') continue;
    const s = seen.get(v);
    if (s !== undefined) values[i] = s;
    else if (seen.size < INTERN_MAX) seen.set(v, v);
  }
  return values;
}

/**
 * DuckDB's C API as @duckdb/node-api itself loads it (its own dependency, resolved from it): the chunks and vectors it
 * hands out are that module's, to be read with that module alone.
 */
const duckdb = createRequire(createRequire(import.meta.url).resolve('@duckdb/node-api'))('@duckdb/node-bindings') as typeof import('@duckdb/node-bindings');

/** Typed arrays of a fixed-width column's memory, by the column's type (or an ENUM's internal type). */
const FIXED: Partial<Record<DuckDBTypeId, { new (buffer: ArrayBufferLike, byteOffset: number, length: number): ArrayLike<number>; BYTES_PER_ELEMENT: number }>> = {
  [DuckDBTypeId.DOUBLE]: Float64Array, [DuckDBTypeId.FLOAT]: Float32Array, [DuckDBTypeId.INTEGER]: Int32Array, [DuckDBTypeId.SMALLINT]: Int16Array,
  [DuckDBTypeId.TINYINT]: Int8Array, [DuckDBTypeId.UINTEGER]: Uint32Array, [DuckDBTypeId.USMALLINT]: Uint16Array, [DuckDBTypeId.UTINYINT]: Uint8Array,
  [DuckDBTypeId.BOOLEAN]: Uint8Array,
};

/**
 * A chunk's column as a list of the values its vector's getItem gives (a number for the numeric types up to INTEGER and
 * DOUBLE, a boolean, an ENUM's text; null where NULL), read straight from the column's memory and validity mask
 * through DuckDB's C API (@duckdb/node-bindings, which @duckdb/node-api reads through too); undefined for any other type,
 * to be read with getItem. getItem is slow a value over a chunk of mixed columns (its validity test makes BigInts);
 * this is not.
 */
export function fastColumn(chunk: DuckDBDataChunk, index: number, type: DuckDBType, n: number): unknown[] | undefined {
  const enumValues = type instanceof DuckDBEnumType ? type.values : null;
  const array = FIXED[enumValues ? (type as DuckDBEnumType).internalTypeId : type.typeId];
  if (!array || !LITTLE_ENDIAN) return undefined;
  const vector = duckdb.data_chunk_get_vector(chunk.chunk, index);
  const data = duckdb.vector_get_data(vector, n * array.BYTES_PER_ELEMENT);
  const items = new array(data.buffer, data.byteOffset, n);
  // The validity mask: a bit a row, 64 a word (little-endian: row i is bit i % 8 of byte i / 8); none when all valid.
  const mask = duckdb.vector_get_validity(vector, Math.ceil(n / 64) * 8) as Uint8Array | null;
  const out: unknown[] = new Array(n);
  const bool = type.typeId === DuckDBTypeId.BOOLEAN;
  for (let i = 0; i < n; i++) {
    if (mask && mask.length && !((mask[i >> 3] >> (i & 7)) & 1)) out[i] = null;
    else out[i] = enumValues ? enumValues[items[i]] : bool ? items[i] !== 0 : items[i];
  }
  return out;
}

const LITTLE_ENDIAN = os.endianness() === 'LE';

/**
 * Frees a fetched chunk's data now (its texts included): DuckDB frees it only when the JS object holding it is
 * collected, and V8 does not see that memory, so it collects late. The chunk is empty after.
 */
export function releaseChunk(chunk: DuckDBDataChunk): void {
  duckdb.data_chunk_reset(chunk.chunk);
}

async function createWaitingForLock(dbPath: string, options: Record<string, string>, waitMs: number): Promise<DuckDBInstance> {
  const until = Date.now() + waitMs;
  for (let delay = 25; ; delay = Math.min(delay * 2, 500)) {
    try {
      return await DuckDBInstance.create(dbPath, options);
    } catch (e) {
      if (!/lock/i.test((e as Error).message) || Date.now() + delay > until) throw e;
      await new Promise((r) => setTimeout(r, delay));
    }
  }
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
  if (opts.threads) options.threads = String(opts.threads);
  // A lake's instance is in memory (its catalog is PostgreSQL, its data Parquet files): read-only is the ATTACH's.
  if (readOnly && !lake) options.access_mode = 'READ_ONLY';
  Object.assign(options, opts.instanceOptions, lake ? lakeInstanceOptions(lake) : {});
  let instance: DuckDBInstance;
  try {
    instance = lake ? await DuckDBInstance.create(':memory:', options) : await createWaitingForLock(opts.dbPath, options, opts.lockWaitMs ?? 5_000);
  } catch (e) {
    if (lake) throw lakeOpenError(lake, e);
    const msg = (e as Error).message;
    throw new StoreUnavailableError(
      /lock/i.test(msg)
        ? `The store ${opts.dbPath} is held by another process (DuckDB allows one writer). Stop it, or query the published snapshot with \`cbp sql\`. (${msg})`
        : `Cannot open the store ${opts.dbPath}: ${msg}`,
      { cause: e },
    );
  }
  const conn = await instance.connect();
  try {
    // UTC everywhere (ICU loads only after open, so this cannot be an open option).
    await conn.run("SET TimeZone = 'UTC'");
    if (lake) {
      await attachLake((sql) => conn.run(sql), lake, readOnly);
    }
    for (const sql of opts.initStatements ?? []) await conn.run(sql);
  } catch (e) {
    conn.closeSync();
    instance.closeSync();
    throw e;
  }
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
  const q = <T>(start: () => Promise<T>): Promise<T> => {
    if (closing) return Promise.reject(new Error('the store is closed'));
    const p = lake ? lakeWatch(lake, start(), () => conn.interrupt()).catch((e: unknown) => Promise.reject(lakeRuntimeError(lake, e))) : start();
    inflight.add(p);
    void p.then(() => inflight.delete(p), () => inflight.delete(p));
    return p;
  };
  const run = (sql: string, params?: Params) => q(() => conn.run(sql, params));

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
      const reader = await q(() => conn.runAndReadAll(sql, params));
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
          if (txOpts?.generation !== false) bumpOnCommit = true;
          return fn(store);
        }
        inTx = true;
        try {
          // On a lake, a commit another process's commit conflicts with is run again whole (store/lake.ts).
          return await retryLakeRace(async () => {
            bumpOnCommit = txOpts?.generation !== false;
            await run('BEGIN TRANSACTION');
            try {
              const out = await fn(store);
              if (bumpOnCommit && !readOnly && (generationTable ||= await hasGenerationTable(store))) await run(BUMP_GENERATION_SQL);
              await run('COMMIT');
              return out;
            } catch (e) {
              await run('ROLLBACK').catch(() => undefined);
              throw e;
            }
          }, (e) => lake !== undefined && isLakeConflict(e));
        } finally {
          inTx = false;
        }
      });
    },
    exclusive<T>(fn: (s: Store) => Promise<T>): Promise<T> {
      return exclusive(() => fn(store));
    },
    memoryLimit: options.memory_limit,
    async releaseMemory(what = 'all') {
      if (inTx || !/^[\w. ]+$/.test(options.memory_limit)) return false;
      try {
        // Setting the limit makes DuckDB hand its allocator's unused memory back to the system. Evicting down to a
        // few megabytes first frees every cached block no query holds; the limit is then what it was.
        const evict = what === 'all' ? "SET memory_limit = '16MB'; " : '';
        await run(`${evict}SET memory_limit = '${options.memory_limit}'`);
        return true;
      } catch {
        // Locked configuration, or blocks a running query holds: the limit stays as it was (the first SET failed).
        return false;
      }
    },
    close() {
      if (closing) return;
      closing = true;
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
      const migrations = await applyMigrations(store, opts.migrationsDir ?? DEFAULT_MIGRATIONS_DIR);
      const views = await applyViews(store, opts.viewsDir ?? DEFAULT_VIEWS_DIR);
      (store as { migration?: MigrateResult }).migration = { ...migrations, ...views };
    } catch (e) {
      store.close();
      throw e;
    }
  }
  return store;
}
