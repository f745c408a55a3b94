// A store's log (WAL) left by a process that ended before its checkpoint (killed, or out of memory first) is replayed
// into memory at open: a store opens under room for it, folds it into the file, then works under its own limit.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { sizeBytes } from '../lib/size.ts';
import { tempDir } from './helpers/tmp.ts';

/** A store whose log of deleted rows takes more memory to replay than the limit the tests below open it under. */
async function storeWithLog(): Promise<string> {
  const dbPath = path.join(tempDir(), 'cbp.duckdb');
  (await openStore({ dbPath, memoryLimit: '96MB', threads: 2 })).close();
  const db = await DuckDBInstance.create(dbPath, { memory_limit: '96MB', threads: '2' });
  try {
    const c = await db.connect();
    try {
      await c.run("CREATE TABLE t AS SELECT i FROM range(6000000) r(i); CHECKPOINT; SET checkpoint_threshold = '1TB'; PRAGMA disable_checkpoint_on_shutdown");
      for (let k = 0; k < 20; k++) await c.run('DELETE FROM t WHERE rowid < (SELECT min(rowid) FROM t) + 250000');
    } finally {
      c.closeSync();
    }
  } finally {
    db.closeSync();
  }
  return dbPath;
}

const limitOf = async (s: Awaited<ReturnType<typeof openStore>>) => sizeBytes((await s.all<{ m: string }>("SELECT current_setting('memory_limit') AS m"))[0]!.m);

describe('a large log left in a store', () => {
  it('is folded into the file at open, and the store then works under its own memory limit', async () => {
    const dbPath = await storeWithLog();
    expect(statSync(`${dbPath}.wal`).size).toBeGreaterThan(24e6);
    const store = await openStore({ dbPath, memoryLimit: '24MB', threads: 2 });
    try {
      expect(existsSync(`${dbPath}.wal`) ? statSync(`${dbPath}.wal`).size : 0).toBeLessThan(1e6);
      expect(Math.abs((await limitOf(store)) - 24e6)).toBeLessThan(1e6);
      expect(await store.all('SELECT count(*)::INTEGER AS n, min(i)::INTEGER AS lo FROM t')).toEqual([{ n: 1_000_000, lo: 5_000_000 }]);
      await store.run('CREATE TABLE u AS SELECT i * 2 AS j FROM t');
    } finally {
      store.close();
    }
  });

  it('is read by a read-only open under room for it, which cannot fold it', async () => {
    const dbPath = await storeWithLog();
    const store = await openStore({ dbPath, memoryLimit: '24MB', threads: 2, readOnly: true });
    try {
      expect(await limitOf(store)).toBeGreaterThan(24e6);
      expect(await store.all('SELECT count(*)::INTEGER AS n FROM t')).toEqual([{ n: 1_000_000 }]);
      expect(store.memoryLimit).not.toBe('24MB');
    } finally {
      store.close();
    }
  });
});
