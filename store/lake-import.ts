// Moving a DuckDB file store into a lake (`cbp db import-file FILE`, with CBP_STORE naming the lake): every table's
// rows copied in one lake transaction, so the lake holds all of the file or none of it. The file is only read.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NotFoundError, UsageError } from '../lib/errors.ts';
import { DEFAULT_MIGRATIONS_DIR, type Store } from './db.ts';
import { readMigrations } from './migrate.ts';

/** Tables of the lake's own (its schema and its counter) that are not copied. */
const OWN = new Set(['schema_migrations', 'schema_views', 'store_generation']);
const SRC = 'cbp_import_src';

export interface ImportResult {
  from: string;
  into: string;
  tables: Array<{ table: string; rows: number }>;
  rows: number;
}

export async function importFileStore(lake: Store, file: string): Promise<ImportResult> {
  if (!lake.lake) throw new UsageError('the store is not a lake: set CBP_STORE=ducklake:postgres:… (and CBP_LAKE_DATA_PATH) to the lake to move the file into');
  const from = path.resolve(file);
  if (!existsSync(from)) throw new NotFoundError(`${from} does not exist: name the DuckDB file of the store to move (CBP_DB_PATH, by default data/cbp.duckdb)`);
  await lake.run(`ATTACH '${from.replace(/'/g, "''")}' AS ${SRC} (READ_ONLY)`);
  try {
    const need = Math.max(0, ...readMigrations(DEFAULT_MIGRATIONS_DIR).map((m) => m.version));
    const [v] = await lake.all<{ v: number | null }>(`SELECT max(version)::INTEGER AS v FROM ${SRC}.main.schema_migrations`).catch(() => [{ v: null }]);
    if ((v?.v ?? 0) !== need) {
      throw new UsageError(`${from} is at migration ${v?.v ?? 'none'}, this cbp at ${need}: run \`cbp db migrate\` on it first (CBP_STORE unset, CBP_DB_PATH=${from}), then import it`);
    }
    const tables = (await lake.all<{ t: string }>(
      `SELECT table_name AS t FROM duckdb_tables() WHERE database_name = '${SRC}' AND schema_name = 'main' ORDER BY 1`,
    )).map((r) => r.t).filter((t) => !OWN.has(t));
    return await lake.transaction(async (s) => {
      const nonEmpty: string[] = [];
      for (const t of tables) {
        const [{ n }] = await s.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM (SELECT 1 FROM main."${t}" LIMIT 1)`);
        if (n > 0) nonEmpty.push(t);
      }
      if (nonEmpty.length) throw new UsageError(`the lake already holds rows (${nonEmpty.slice(0, 5).join(', ')}${nonEmpty.length > 5 ? ', …' : ''}): import a file only into a new lake`);
      const out: ImportResult['tables'] = [];
      for (const t of tables) {
        await s.run(`INSERT INTO main."${t}" BY NAME SELECT * FROM ${SRC}.main."${t}"`);
        const [{ n }] = await s.all<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM main."${t}"`);
        out.push({ table: t, rows: n });
      }
      return { from, into: lake.dbPath, tables: out, rows: out.reduce((a, x) => a + x.rows, 0) };
    });
  } finally {
    await lake.run(`DETACH ${SRC}`).catch(() => undefined);
  }
}
