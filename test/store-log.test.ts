// A store's log (WAL) left by a process that could not checkpoint (killed, or out of memory first) is replayed into
// memory at open: a store opens under room for it, folds it into the file, then works under its own limit.
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { tempDir } from './helpers/tmp.ts';

describe('a large log left in a store', () => {
  it('is folded into the file at open, and the store then works under its own memory limit', async () => {
    const dbPath = path.join(tempDir(), 'cbp.duckdb');
    (await openStore({ dbPath, memoryLimit: '96MB' })).close();
    // A process deletes 5,000,000 rows and ends before its checkpoint: each deleted row is 8 bytes of memory at replay.
    const db = await DuckDBInstance.create(dbPath, { memory_limit: '96MB' });
    const c = await db.connect();
    await c.run("CREATE TABLE t AS SELECT i FROM range(6000000) r(i); CHECKPOINT; SET checkpoint_threshold = '1TB'; PRAGMA disable_checkpoint_on_shutdown");
    for (let k = 0; k < 20; k++) await c.run('DELETE FROM t WHERE rowid < (SELECT min(rowid) FROM t) + 250000');
    c.closeSync();
    db.closeSync();
    expect(statSync(`${dbPath}.wal`).size).toBeGreaterThan(24e6); // more than the limit below
    const store = await openStore({ dbPath, memoryLimit: '24MB' });
    try {
      expect(existsSync(`${dbPath}.wal`) ? statSync(`${dbPath}.wal`).size : 0).toBeLessThan(1e6);
      expect(await store.all("SELECT current_setting('memory_limit') AS m")).toEqual([{ m: '22.8 MiB' }]);
      expect(await store.all('SELECT count(*)::INTEGER AS n, min(i)::INTEGER AS lo FROM t')).toEqual([{ n: 1_000_000, lo: 5_000_000 }]);
      await store.run('CREATE TABLE u AS SELECT i * 2 AS j FROM t');
    } finally {
      store.close();
    }
  });
});
