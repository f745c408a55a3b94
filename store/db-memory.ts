// The store's memory controls (Store.releaseMemory, Store.capMemory): DuckDB's memory_limit set on the store's one
// connection, on its lane, never inside a transaction nor on a session whose configuration is locked.
import { statSync } from 'node:fs';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Store } from './db.ts';
import { isOutOfMemory } from '../lib/errors.ts';
import { sizeBytes } from '../lib/size.ts';
import { log } from '../lib/log.ts';

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
      if (m.inTx() || m.locked || !/^[\w. ]+$/.test(limitNow)) return false;
      try {
        // Setting the limit makes DuckDB hand its allocator's unused memory back to the system. Evicting down to a
        // few megabytes first frees every cached block no query holds; the limit is then what it was.
        const evict = what === 'all' ? "SET memory_limit = '16MB'; " : '';
        await m.run(`${evict}SET memory_limit = '${limitNow}'`);
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
          await m.run(`SET memory_limit = '${cap}'`);
        } catch {
          return fn(); // locked configuration, or blocks held beyond the cap
        }
        [limitNow, capped] = [cap, true];
        try {
          return await fn();
        } finally {
          limitNow = outer;
          // (a failed restore must not hide what failed: the next releaseMemory sets the limit again)
          await m.run(`SET memory_limit = '${limitNow}'`).catch(() => undefined);
        }
      }).catch((e: unknown) => {
        if (!opts?.rerun || !capped || !isOutOfMemory(e)) throw e;
        return m.exclusive(fn);
      });
    },
  };
}

/** A log (WAL) from this size on is folded into the file at open: DuckDB's own checkpoint_threshold. */
const FOLD_LOG_BYTES = 16e6;

/**
 * The memory limit a file store opens under when its log is large (left by a process killed or out of memory before its
 * checkpoint): DuckDB replays the log into memory, where it stays until a checkpoint, so a log near the limit leaves room
 * for no query, nor for that checkpoint, and no later process gets further. Room for it; else undefined (the store's own).
 */
export function replayLimit(dbPath: string, limit: string, readOnly: boolean): string | undefined {
  const wal = readOnly || dbPath === ':memory:' ? 0 : (statSync(`${dbPath}.wal`, { throwIfNoEntry: false })?.size ?? 0);
  const bytes = sizeBytes(limit);
  return wal >= FOLD_LOG_BYTES && Number.isFinite(bytes) ? `${Math.ceil((bytes + 2 * wal) / 1e6)}MB` : undefined;
}

/** The replayed log folded into the file, then the store's own limit (`limit`, a size) set. */
export async function foldLog(conn: DuckDBConnection, limit: string): Promise<void> {
  try {
    await conn.run('CHECKPOINT');
  } catch (e) {
    log().warn({ err: String((e as Error)?.message ?? e) }, "the store's log could not be folded into the file at open; the next close tries again");
  }
  await conn.run(`SET memory_limit = '${limit}'`);
}
