// The store's memory controls (Store.releaseMemory, Store.capMemory): DuckDB's memory_limit set on the store's one
// connection, on its lane, never inside a transaction nor on a session whose configuration is locked.
import { statSync } from 'node:fs';
import { totalmem } from 'node:os';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Store } from './db.ts';
import { isOutOfMemory } from '../lib/errors.ts';
import { sizeBytes } from '../lib/size.ts';
import { log } from '../lib/log.ts';
import { StoreUnavailableError } from './errors.ts';

export interface MemoryLane {
  run: (sql: string) => Promise<unknown>;
  /** the connection's lane (store/db.ts exclusive) */
  exclusive: <T>(fn: () => Promise<T>) => Promise<T>;
  inTx: () => boolean;
  /** the session's configuration is locked (an analyst session's): no SET is tried, its failure would end a read transaction too */
  locked: boolean;
  /** the store's memory_limit */
  limit: string;
}

export function memoryControls(m: MemoryLane): Pick<Store, 'releaseMemory' | 'capMemory'> {
  let limitNow = m.limit; // the limit set now: the store's, or a capMemory's
  return {
    async releaseMemory(what = 'all') {
      if (m.inTx() || m.locked || !Number.isFinite(sizeBytes(limitNow))) return false;
      try {
        // Setting the limit makes DuckDB hand its allocator's unused memory back to the system. Evicting down to a
        // few megabytes first frees every cached block no query holds; the limit is then what it was.
        const evict = what === 'all' ? "SET memory_limit = '16MB'; " : '';
        await m.run(`${evict}${setLimitSql(limitNow)}`);
        return true;
      } catch {
        // Locked configuration, or blocks a running query holds: the limit stays as it was (the first SET failed).
        return false;
      }
    },
    capMemory<T>(bytes: number, fn: () => Promise<T>, opts?: { rerun?: boolean }): Promise<T> {
      // On the lane: no other caller's transaction runs under the lower limit.
      let capped = false;
      return m.exclusive(async () => {
        const [cap, outer] = [`${Math.floor(bytes / 1e6)}MB`, limitNow];
        if (m.locked || m.inTx() || !(bytes < (sizeBytes(outer) || Infinity))) return fn(); // locked, in a transaction, or not below the limit in force
        try {
          await m.run(setLimitSql(cap));
        } catch {
          return fn(); // locked configuration, or blocks held beyond the cap
        }
        [limitNow, capped] = [cap, true];
        try {
          return await fn();
        } finally {
          limitNow = outer;
          // (a failed restore must not hide what failed: the next releaseMemory sets the limit again)
          await m.run(setLimitSql(limitNow)).catch(() => undefined);
        }
      }).catch((e: unknown) => {
        if (!opts?.rerun || !capped || !isOutOfMemory(e)) throw e;
        return m.exclusive(fn);
      });
    },
  };
}

/** A log (WAL) from this size on is folded into the file at open. */
const FOLD_LOG_BYTES = 16 * 2 ** 20;

/** `SET memory_limit` to a size (a number and a unit, lib/size.ts), never other text. */
export function setLimitSql(size: string): string {
  if (!Number.isFinite(sizeBytes(size))) throw new Error(`not a memory size: ${JSON.stringify(size)}`);
  return `SET memory_limit = '${size.trim()}'`;
}

/** Bytes of a store file's log: DuckDB's .wal and what a checkpoint or recovery cut short left beside it. */
const logBytes = (dbPath: string) => ['.wal', '.wal.checkpoint', '.wal.recovery'].reduce((n, x) => {
  try { return n + (statSync(dbPath + x, { throwIfNoEntry: false })?.size ?? 0); } catch { return n; }
}, 0);

/**
 * The limit a file store opens under when a process left it a large log: DuckDB holds a replayed log in memory until a
 * checkpoint, which a log near the limit leaves no room for. Room for it, within half the machine's memory; else undefined.
 */
export function replayLimit(dbPath: string, limit: string): string | undefined {
  const [wal, bytes] = [dbPath === ':memory:' ? 0 : logBytes(dbPath), sizeBytes(limit)];
  if (wal < FOLD_LOG_BYTES || !Number.isFinite(bytes)) return undefined;
  return `${Math.ceil(Math.min(bytes + 2 * wal, Math.max(bytes, totalmem() / 2)) / 1e6)}MB`;
}

/** The replayed log folded into the file under `raised`, then the store's own `limit`; a log that does not fold fails the open. */
export async function foldLog(conn: DuckDBConnection, limit: string, raised: string): Promise<void> {
  log().warn({ memoryLimit: limit, raised }, 'a log left in the store by a process that ended before its checkpoint is folded into the file under a raised memory limit');
  try {
    await conn.run('CHECKPOINT');
    await conn.run(setLimitSql(limit));
  } catch (e) {
    throw new StoreUnavailableError(`The store's log could not be folded into the file at open, under a memory limit of ${raised}: free disk space, or raise CBP_STORE_MEMORY_LIMIT for one run. (${String((e as Error)?.message ?? e)})`, { cause: e });
  }
}
