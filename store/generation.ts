// The store's generation: a counter in the store (table store_generation, migration 008) that every write
// transaction on a DuckDB file raises (Store.transaction does it before COMMIT; a lake has no snapshot). The
// published snapshot is a copy of the whole store, counter included, so comparing the two numbers says
// whether the snapshot holds every committed change: a run killed between its commit and its publish leaves
// the snapshot behind, and the next publish step sees it (store/snapshot.ts publishIfBehind).
//
// A generation alone does not name a store: one started over (deleted, or replaced by another file) counts
// from 1 again, below the snapshot of the old one. So the table also holds the store's id (migration 011, a
// random uuid drawn when the store is created), which the snapshot carries too: the snapshot is current only
// when both are the store's (sameVersion).
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

/** What names the state of a store (or of a snapshot, a copy of one): its id and its generation. */
export interface StoreVersion {
  /** The store's random id (migration 011); null for a store without it. */
  storeId: string | null;
  /** Null for a store without the generation table. */
  generation: number | null;
}

/**
 * The version of the connection's current database, or of an attached one (`database`: its alias). Reads
 * the id only where the column exists (a store not yet migrated to 011 has none). A lake's own is read at once: its
 * writers migrate it at open, and the checks would read every table's entry from its catalog (none: a lake without schema).
 */
export async function storeVersion(store: Pick<Store, 'all' | 'lake'>, database?: string): Promise<StoreVersion> {
  const none = { storeId: null, generation: null };
  if (store.lake && database === undefined) return readVersion(store, GENERATION_TABLE, true).catch(() => none);
  if (!(await hasGenerationTable(store, 'main', database))) return none;
  const table = database === undefined ? GENERATION_TABLE : `"${database.replace(/"/g, '""')}".main.${GENERATION_TABLE}`;
  // The one table's columns (duckdb_columns() would read every table's: on a lake, every table's from the catalog).
  const rows = await store.all<{ n: number | string }>('SELECT count(*) AS n FROM pragma_table_info($1) WHERE name = \'store_id\'', [table]);
  return readVersion(store, table, Number(rows[0]?.n ?? 0) > 0);
}

async function readVersion(store: Pick<Store, 'all'>, table: string, hasId: boolean): Promise<StoreVersion> {
  const [r] = await store.all<{ g: number | string | null; id: string | null }>(
    `SELECT max(generation) AS g, ${hasId ? 'max(store_id)' : 'NULL::VARCHAR'} AS id FROM ${table}`,
  );
  return { storeId: r?.id ?? null, generation: r?.g === null || r?.g === undefined ? null : Number(r.g) };
}

/**
 * Whether a snapshot of version `snap` holds exactly the store of version `store`: the same store id (both
 * null only for a store from before migration 011 and its snapshot) and the same generation. A higher
 * generation is no better than a lower one: it is another state (a snapshot of the store before a backup was
 * put back), not a newer copy of this one.
 */
export function sameVersion(store: StoreVersion, snap: StoreVersion): boolean {
  return store.generation !== null && snap.generation === store.generation && snap.storeId === store.storeId;
}
