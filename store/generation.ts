// The store's generation: a counter in the store (table store_generation, migration 008) that every write
// transaction raises (Store.transaction does it before COMMIT, so a rolled-back write raises nothing). The
// published snapshot is a copy of the whole store, counter included, so comparing the two numbers says
// whether the snapshot holds every committed change: a run killed between its commit and its publish leaves
// the snapshot behind, and the next publish step sees it (store/snapshot.ts publishIfBehind).
import type { Store } from './db.ts';

export const GENERATION_TABLE = 'store_generation';

const BUMP_SQL = `UPDATE ${GENERATION_TABLE} SET generation = generation + 1, changed_at = current_timestamp::TIMESTAMP`;

/** Whether the connection's current database has the generation table (stores migrated to 008 and later). */
export async function hasGenerationTable(store: Pick<Store, 'all'>, schema = 'main', database?: string): Promise<boolean> {
  const rows = await store.all<{ n: number | string }>(
    `SELECT count(*) AS n FROM duckdb_tables() WHERE table_name = '${GENERATION_TABLE}' AND schema_name = $1
       AND database_name = ${database === undefined ? 'current_database()' : '$2'}`,
    database === undefined ? [schema] : [schema, database],
  );
  return Number(rows[0]?.n ?? 0) > 0;
}

/**
 * Raises the generation by one: for a write made outside Store.transaction (an autocommit statement), whose
 * change the snapshot must also pick up. A store without the table (migrations not applied) is left alone.
 */
export async function bumpGeneration(store: Pick<Store, 'all' | 'run'>): Promise<void> {
  if (await hasGenerationTable(store)) await store.run(BUMP_SQL);
}

/** The statement Store.transaction runs before COMMIT. */
export const BUMP_GENERATION_SQL = BUMP_SQL;

/** The store's generation, or null for a store without the table. */
export async function storeGeneration(store: Pick<Store, 'all'>): Promise<number | null> {
  if (!(await hasGenerationTable(store))) return null;
  const rows = await store.all<{ g: number | string | null }>(`SELECT max(generation) AS g FROM ${GENERATION_TABLE}`);
  return rows[0]?.g === null || rows[0]?.g === undefined ? null : Number(rows[0].g);
}

/** The generation held by an attached database (e.g. a snapshot), or null when it has none. */
export async function attachedGeneration(store: Pick<Store, 'all'>, alias: string): Promise<number | null> {
  if (!(await hasGenerationTable(store, 'main', alias))) return null;
  const rows = await store.all<{ g: number | string | null }>(`SELECT max(generation) AS g FROM "${alias.replace(/"/g, '""')}".main.${GENERATION_TABLE}`);
  return rows[0]?.g === null || rows[0]?.g === undefined ? null : Number(rows[0].g);
}
