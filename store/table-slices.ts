// Emptying a large table a slice of its MIDs at a time, each slice its own commit: one DELETE of tens of millions of
// rows runs out of DuckDB's memory limit (and a failed rollback then ends the process). A file store holds what it
// deleted in memory until a checkpoint, so it checkpoints every 32 slices and at the end. A lake deletes whole files
// in its catalog: one commit.
import type { Store } from './db.ts';
import { sqlText } from './sql-text.ts';

/** Deletes every row of `table` (a `mid` column) in commits of about `rows` rows, by ranges of MIDs. */
export async function deleteInSlices(store: Store, table: string, rows: number): Promise<void> {
  const all = () => store.transaction((s) => s.run(`DELETE FROM ${table}`));
  if (store.lake) return all();
  const [c] = await store.all<{ n: number }>(`SELECT count(*)::DOUBLE AS n FROM ${table}`);
  const slices = Math.ceil(Number(c?.n ?? 0) / Math.max(1, rows));
  if (slices <= 1) return all();
  const ends = await store.all<{ hi: string }>(`SELECT max(mid) AS hi FROM (SELECT mid, ntile(${slices}) OVER (ORDER BY mid) AS b
    FROM (SELECT DISTINCT mid FROM ${table})) GROUP BY b ORDER BY hi`);
  for (const [i, { hi }] of ends.entries()) {
    const lo = ends[i - 1]?.hi;
    await store.transaction((s) => s.run(`DELETE FROM ${table} WHERE mid <= ${sqlText(hi)} ${lo === undefined ? '' : `AND mid > ${sqlText(lo)}`}`));
    if (i % 32 === 31) await store.run('CHECKPOINT');
  }
  await all();
  await store.run('CHECKPOINT');
}
