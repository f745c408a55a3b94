// Migrations (numbered, applied once, checksummed) and views (made again, in filename order, when their files
// changed). Tables change only through migrations; views are code and are simply replaced, so a view fix needs no
// migration and no data moves.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DuckDBExtractedStatements } from '@duckdb/node-api';
import type { Store } from './db.ts';
import { MigrationChangedError } from './errors.ts';
import { readViews } from '../lib/sql-views.ts';
import { brandSql } from './load/typing.ts';
import { enumTypes, ensureLakeOptions, isLakeConflict, lakeDialect, retryLakeRace } from './lake.ts';

export interface MigrationFile {
  version: number;
  name: string;
  file: string;
  sql: string;
  checksum: string;
}

export interface MigrateResult {
  applied: Array<{ version: number; name: string }>;
  alreadyApplied: number;
  views: string[];
  /** View statements that could not be created (e.g. they read events views not migrated yet), with why. */
  skippedViews: Array<{ file: string; statement: number; reason: string }>;
}

const MIGRATION_RE = /^(\d{3,})_([A-Za-z0-9_-]+)\.sql$/;

export function readMigrations(dir: string): MigrationFile[] {
  if (!existsSync(dir)) return [];
  const files = readdirSync(dir).filter((f) => f.endsWith('.sql')).sort();
  const out: MigrationFile[] = [];
  const seen = new Map<number, string>();
  for (const f of files) {
    const m = MIGRATION_RE.exec(f);
    if (!m) throw new MigrationChangedError(`Migration file ${f} must be named NNN_name.sql (e.g. 003_mid_stats.sql).`);
    const version = Number(m[1]);
    if (seen.has(version)) throw new MigrationChangedError(`Migrations ${seen.get(version)} and ${f} share the number ${m[1]}; renumber one.`);
    seen.set(version, f);
    const sql = readFileSync(path.join(dir, f), 'utf8');
    out.push({ version, name: m[2], file: f, sql, checksum: createHash('sha256').update(sql).digest('hex') });
  }
  return out;
}

export async function applyMigrations(store: Store, dir: string): Promise<Pick<MigrateResult, 'applied' | 'alreadyApplied'>> {
  // A lake takes each migration in its dialect (store/lake.ts); the checksum is the file's either way.
  const lake = store.lake !== undefined;
  const enums = new Set<string>();
  const dialect = (sql: string) => {
    if (!lake) return sql;
    for (const e of enumTypes(sql)) enums.add(e);
    return lakeDialect(sql, enums);
  };
  const files = readMigrations(dir);
  const plan = async (s: Store) => {
    await s.run(dialect(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)`));
    const done = new Map((await s.all<{ version: number; checksum: string }>('SELECT version, checksum FROM schema_migrations')).map((r) => [Number(r.version), r]));
    const newest = Math.max(0, ...done.keys());
    const known = Math.max(0, ...files.map((m) => m.version));
    if (newest > known) throw new MigrationChangedError(`This store's schema is at migration ${newest}, newer than this cbp knows (${known}): a newer cbp wrote it. Upgrade cbp here.`);
    for (const m of files) {
      const prior = done.get(m.version);
      if (prior && prior.checksum !== m.checksum) {
        throw new MigrationChangedError(
          `Migration ${m.file} was changed after it was applied to this store (checksum ${prior.checksum.slice(0, 12)}… recorded, ` +
            `${m.checksum.slice(0, 12)}… on disk). Applied migrations are immutable: restore the file and add a new numbered migration instead.`,
        );
      }
    }
    return { pending: files.filter((m) => !done.has(m.version)), alreadyApplied: done.size };
  };
  const apply = async (s: Store, m: MigrationFile) => {
    await s.run(dialect(m.sql));
    await s.run('INSERT INTO schema_migrations VALUES ($1, $2, $3, current_timestamp::TIMESTAMP)', [m.version, m.name, m.checksum]);
  };
  if (lake) {
    // A lake: every pending migration in one commit (each DDL's own commit made the next reload the whole catalog).
    // Two hosts opening a new lake at once: the one that loses finds the schema made, on its next attempt.
    const r = await lakeSchemaStep(() => store.transaction(async (s) => {
      const { pending, alreadyApplied } = await plan(s);
      for (const m of pending) await apply(s, m);
      return { applied: pending.map((m) => ({ version: m.version, name: m.name })), alreadyApplied };
    }, { generation: false }));
    await ensureLakeOptions(store);
    return r;
  }
  const { pending, alreadyApplied } = await plan(store);
  for (const m of pending) await store.transaction((s) => apply(s, m));
  return { applied: pending.map((m) => ({ version: m.version, name: m.name })), alreadyApplied };
}

/** A step of a lake's schema, run again when another host's commit of the same schema won (conflict, or made it first). */
export const lakeSchemaStep = <T>(fn: () => Promise<T>): Promise<T> =>
  retryLakeRace(fn, (e) => isLakeConflict(e) || /already exists/i.test((e as Error)?.message ?? ''));

/** Where the macros made from the contract's tables come from (made before the files, which use them). */
const GENERATED = 'store/migrate.ts generatedViews';

/** stg_card_brand(s): a card brand as the contract reads it (contract/common.ts normaliseBrand), NULL when unknown. */
function generatedViews(): string {
  return `CREATE OR REPLACE MACRO stg_card_brand(s) AS ${brandSql('s')};\n`;
}

/**
 * (Re)creates every view statement of dir/*.sql unless the store holds them as it last made them from these files
 * (schema_views: the files' checksum and a digest of the names made), or when `force`d (`cbp db migrate`, also the
 * cure for views an older cbp or a hand edit changed in place); retries failures so cross-file order does not matter.
 * DuckDB binds a view when it is read, so a migration needs no remake: opening a store as it is costs two reads.
 */
export async function applyViews(store: Store, dir: string, opts: { force?: boolean } = {}): Promise<Pick<MigrateResult, 'views' | 'skippedViews'>> {
  if (!existsSync(dir)) return { views: [], skippedViews: [] };
  const sources = [{ file: GENERATED, sql: generatedViews() }, ...readViews(dir)];
  const filesSum = createHash('sha256').update(sources.map((x) => `${x.file}\n${x.sql}`).join('\n')).digest('hex');
  await lakeSchemaStep(() => store.run('CREATE TABLE IF NOT EXISTS schema_views (checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)'));
  const [kept] = await store.all<{ checksum: string }>('SELECT checksum FROM schema_views ORDER BY applied_at DESC LIMIT 1');
  // A view or macro dropped since (by hand, by an older cbp) changes the digest.
  const current = async (s: Store) => `${filesSum}:${await liveSchemaHash(s)}`;
  if (kept?.checksum === (await current(store)) && !opts.force) return { views: await viewNames(store), skippedViews: [] };
  const pending: Array<{ file: string; statement: number; extracted: DuckDBExtractedStatements; reason?: string }> = [];
  for (const { file, sql } of sources) {
    // DuckDB's own parser splits the file, once (each statement parsed again from the whole file kept tens of
    // megabytes of parsed files until the JS garbage collector ran); its statements are run by index.
    const extracted = await store.conn.extractStatements(sql);
    for (let i = 0; i < extracted.count; i++) pending.push({ file, statement: i, extracted });
  }
  const runOne = async (st: (typeof pending)[number]) => {
    const p = await st.extracted.prepare(st.statement);
    try {
      await p.run();
    } finally {
      p.destroySync();
    }
  };
  if (store.lake) {
    // A lake: every view in one commit, in file order (a commit each made the next reload the whole catalog); the
    // checksum recorded in the same commit. Another host making them at once: the loser finds them made.
    const made = await lakeSchemaStep(() => store.transaction(async (s) => {
      const [kept] = await s.all<{ checksum: string }>('SELECT checksum FROM schema_views ORDER BY applied_at DESC LIMIT 1');
      if (kept?.checksum === (await current(s)) && !opts.force) return true;
      for (const st of pending) await runOne(st);
      await s.run('DELETE FROM schema_views');
      await s.run('INSERT INTO schema_views VALUES ($1, current_timestamp::TIMESTAMP)', [await current(s)]);
      return true;
    }, { generation: false })).catch((e: unknown) => {
      // Other hosts' commits won every try: said, not worked around statement by statement.
      if (isLakeConflict(e)) throw e;
      return false;
    });
    if (made) return { views: await viewNames(store), skippedViews: [] };
  }
  const views: string[] = [];
  let remaining = pending;
  // Bounded: each pass must create at least one view, or we stop.
  for (let pass = 0; pass <= pending.length && remaining.length; pass++) {
    const failed: typeof pending = [];
    for (const st of remaining) {
      try {
        await runOne(st);
      } catch (e) {
        failed.push({ ...st, reason: (e as Error).message.split('\n')[0] });
      }
    }
    if (failed.length === remaining.length) {
      remaining = failed;
      break;
    }
    remaining = failed;
  }
  views.push(...(await viewNames(store)));
  if (remaining.length === 0) {
    await lakeSchemaStep(() => store.transaction(async (s) => {
      await s.run('DELETE FROM schema_views');
      await s.run('INSERT INTO schema_views VALUES ($1, current_timestamp::TIMESTAMP)', [await current(s)]);
    }, { generation: false }));
  }
  return { views, skippedViews: remaining.map((r) => ({ file: r.file, statement: r.statement + 1, reason: r.reason ?? '' })) };
}

/** A digest of the names of the store's own views and macros (their text reads back otherwise than it was written). */
async function liveSchemaHash(store: Store): Promise<string> {
  const rows = await store.all<{ d: string }>(
    `SELECT DISTINCT d FROM (SELECT 'v ' || view_name AS d FROM duckdb_views()
      WHERE NOT internal AND schema_name = 'main' AND database_name = current_database()
     UNION ALL
     SELECT 'm ' || function_name FROM duckdb_functions()
      WHERE function_type IN ('macro', 'table_macro') AND NOT internal AND schema_name = 'main' AND database_name = current_database())
     ORDER BY 1`,
  );
  return createHash('sha256').update(rows.map((r) => r.d).join('\n')).digest('hex');
}

/** The store's own views (not the in-memory catalog's of a lake session). */
async function viewNames(store: Store): Promise<string[]> {
  const names = await store.all<{ view_name: string }>(
    "SELECT view_name FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' AND database_name = current_database() ORDER BY view_name",
  );
  return names.map((r) => r.view_name);
}
