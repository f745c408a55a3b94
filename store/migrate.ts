// Migrations (numbered, applied once, checksummed) and views (made again, in filename order, when their files
// changed). Tables change only through migrations; views are code and are simply replaced, so a view fix needs no
// migration and no data moves.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { DuckDBExtractedStatements } from '@duckdb/node-api';
import type { Store } from './db.ts';
import { MigrationChangedError } from './errors.ts';
import { bumpGeneration } from './generation.ts';
import { readViews } from '../lib/sql-views.ts';
import { brandSql } from './load/typing.ts';
import { enumTypes, ensureLakeIndex, ensureLakeOptions, isLakeConflict, lakeDialect, retryLakeRace } from './lake.ts';

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

/**
 * Migrations whose comments were edited after they landed (measurements moved to the benchmarks, pointers at code that
 * is gone): each keeps the checksum it was applied with, and its statements (comments and blank lines aside) must still
 * be those.
 */
const EDITED: Record<string, { applied: string; statements: string }> = {
  '006_pipeline.sql': { applied: '520ddf89c4bcf4071eff417c39e52e4d0cded508ff5c9eca99926c93aab9e14a', statements: '665c58fb0200431e2a3585294a2dd06c34c1f09cdeef0644cb80e3298e205bbf' },
  '007_enum_columns.sql': { applied: '1c640e0c5652c600bad269f095cdb4670b3e672dbfff316b8d0765d791a31be3', statements: 'e1760b6e543ce0977f8f4c62d82ea143076d896c46d06a012acc85ae1b3ba76e' },
  '013_ratio_marks.sql': { applied: '8b1180975a2de4212bd0131c260284b441c4c8c53bbf1a70822e1b1e48076146', statements: '4e8290e83bbc537f9a1128d1e635d407ec2b59c5fc5a2bc66b96bec5d06ecd02' },
  '014_ratio_rules.sql': { applied: '53b8193599b5ef4ae09b3f7b6b770f1649103050573e8dcfcb6cff045ef755cf', statements: 'c53854987951288f9e1dd70ebe714a9949cadf44761baa4668d35a7813011190' },
  '015_ratio_month_inputs.sql': { applied: '97180c5b94428ff60c527f20dddaa025df1781751a0345cbf4e676e5e77e8315', statements: '242d6bd90a8dc695cc43db7ad800c6767c0747d36e0874ad80d0a4e1bd23ccc8' },
  '016_ratio_digests.sql': { applied: '7557d34a1df51d5fb2ccb3ba2505a36d22a71d0fdd9abd315fc5572cf3810608', statements: '634771382088717132ac47cbf2eb0d8ecadb97155705e5e5efeeb57985338afa' },
  '018_ratio_mart_narrow.sql': { applied: 'd1a3e9c2ca554f3aff2ad011aafc50b85e6b5cf6028a8a5bcfc120ba2078087f', statements: '1282daf7ce15a614d86e115ca1e0a205431177d14a625a4e22fd4a0601689862' },
};
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const statementsOf = (sql: string) => sql.split('\n').map((l) => l.replace(/(^|\s)--.*$/, '').trimEnd()).filter((l) => l !== '').join('\n');

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
    const edited = EDITED[f];
    if (edited && sha256(statementsOf(sql)) !== edited.statements) {
      throw new MigrationChangedError(`Migration ${f} was changed: only its comments may differ from what was applied. Restore it and add a new numbered migration instead.`);
    }
    out.push({ version, name: m[2], file: f, sql, checksum: edited?.applied ?? sha256(sql) });
  }
  return out;
}

/**
 * The store's schema as this cbp's files make it: pending migrations, then the views, in one commit (on a lake in the
 * writers' turn: each DDL's own commit made the next reload the whole catalog; another host that made the schema first
 * is found on the next attempt). A view that fails there rolls it back: the migrations are then applied, the views
 * made piece by piece.
 */
export async function applySchema(store: Store, dirs: { migrations: string; views: string }, opts: { force?: boolean } = {}): Promise<MigrateResult> {
  const files = readMigrations(dirs.migrations);
  const sources = existsSync(dirs.views) ? [{ file: GENERATED, sql: generatedViews() }, ...readViews(dirs.views)] : undefined;
  // A lake takes each migration in its dialect, the ENUM types made up to it read as VARCHAR; the checksum is the file's.
  const sql = new Map<number, string>();
  const enums = new Set<string>();
  for (const m of files) {
    for (const e of enumTypes(m.sql)) enums.add(e);
    sql.set(m.version, store.lake ? lakeDialect(m.sql, enums) : m.sql);
  }
  const commit = <T>(fn: (s: Store) => Promise<T>) => store.transaction(fn, { generation: false });
  const step = <T>(fn: (s: Store) => Promise<T>) => (store.lake ? lakeSchemaStep(() => commit(fn)) : commit(fn));
  const migrations = async (s: Store) => {
    const r = await migrate(s, files, (m) => apply(s, m, sql.get(m.version)!));
    if (store.lake) await ensureLakeOptions(s);
    // A file's snapshot must take the new tables: a migration applied is a change (an open that applies none is not).
    else if (r.applied.length) await bumpGeneration(s);
    return r;
  };
  const whole = await step(async (s) => ({ ...(await migrations(s)), ...(await makeViews(s, sources, opts.force, true)) })).catch(unlessViewFailed);
  const made = whole ?? { ...(await step(migrations)), ...(await makeViews(store, sources, opts.force, false)) };
  if (store.lake && made.applied.length) await ensureLakeIndex(store, store.lake); // (upkeep makes it on lakes made before it)
  return made;
}

/** A migration's statements (sql: the file's, or its lake dialect) and its record. */
async function apply(s: Store, m: MigrationFile, sql: string): Promise<void> {
  await s.run(sql);
  await s.run('INSERT INTO schema_migrations VALUES ($1, $2, $3, current_timestamp::TIMESTAMP)', [m.version, m.name, m.checksum]);
}

/** Checks the applied migrations against the files, then applies the pending ones, in order. */
async function migrate(s: Store, files: MigrationFile[], applyOne: (m: MigrationFile) => Promise<void>): Promise<Pick<MigrateResult, 'applied' | 'alreadyApplied'>> {
  const table = 'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)';
  await s.run(s.lake ? lakeDialect(table, new Set()) : table);
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
  const pending = files.filter((m) => !done.has(m.version));
  for (const m of pending) await applyOne(m);
  return { applied: pending.map((m) => ({ version: m.version, name: m.name })), alreadyApplied: done.size };
}

/** A step of a lake's schema, run again when another host's commit of the same schema won (conflict, or made it first). */
const lakeSchemaStep = <T>(fn: () => Promise<T>): Promise<T> =>
  retryLakeRace(fn, (e) => !(e instanceof ViewFailed) && (isLakeConflict(e) || /already exists/i.test((e as Error)?.message ?? '')));

/** Where the macros made from the contract's tables come from (made before the files, which use them). */
const GENERATED = 'store/migrate.ts generatedViews';

/** stg_card_brand(s): a card brand as the contract reads it (contract/common.ts normaliseBrand), NULL when unknown. */
function generatedViews(): string {
  return `CREATE OR REPLACE MACRO stg_card_brand(s) AS ${brandSql('s')};\n`;
}

/** A view statement failed inside the schema's one commit: the schema is then taken piece by piece. */
class ViewFailed extends Error {}
const unlessViewFailed = (e: unknown): undefined => {
  if (e instanceof ViewFailed) return undefined;
  throw e;
};

/**
 * (Re)creates every view statement of the sources unless the store holds them as it last made them (schema_views:
 * the files' checksum and a digest of the names made), or when `force`d (`cbp db migrate`, also the cure for views an
 * older cbp or a hand edit changed in place). Piece by piece, failures are retried so cross-file order does not
 * matter. DuckDB binds a view when it is read, so a migration needs no remake.
 */
async function makeViews(store: Store, sources: Array<{ file: string; sql: string }> | undefined, force: boolean | undefined, inOneCommit: boolean): Promise<Pick<MigrateResult, 'views' | 'skippedViews'>> {
  if (!sources) return { views: [], skippedViews: [] };
  const step = <T>(fn: () => Promise<T>) => (store.lake && !inOneCommit ? lakeSchemaStep(fn) : fn());
  const filesSum = createHash('sha256').update(sources.map((x) => `${x.file}\n${x.sql}`).join('\n')).digest('hex');
  await step(() => store.run('CREATE TABLE IF NOT EXISTS schema_views (checksum VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL)'));
  const [kept] = await store.all<{ checksum: string }>('SELECT checksum FROM schema_views ORDER BY applied_at DESC LIMIT 1');
  if (kept && !force) {
    const now = await liveSchema(store);
    if (kept.checksum === `${filesSum}:${now.hash}`) return { views: now.views, skippedViews: [] };
  }
  const record = async (s: Store) => {
    const now = await liveSchema(s);
    await s.run('DELETE FROM schema_views');
    await s.run('INSERT INTO schema_views VALUES ($1, current_timestamp::TIMESTAMP)', [`${filesSum}:${now.hash}`]);
    return now.views;
  };
  // In one commit, each file whole; a failure rolls the commit back, and the caller makes the schema piece by piece.
  if (inOneCommit) {
    for (const { sql } of sources) {
      await store.run(sql).catch((e: unknown) => {
        throw isLakeConflict(e) ? e : new ViewFailed((e as Error).message);
      });
    }
    return { views: await record(store), skippedViews: [] };
  }
  const pending: Array<{ file: string; statement: number; extracted: DuckDBExtractedStatements; reason?: string }> = [];
  for (const { file, sql } of sources) {
    // DuckDB's own parser splits the file, once (parsing it again per statement held every parse until the GC ran);
    // its statements are run by index.
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
    const stuck = failed.length === remaining.length;
    remaining = failed;
    if (stuck) break;
  }
  const skippedViews = remaining.map((r) => ({ file: r.file, statement: r.statement + 1, reason: r.reason ?? '' }));
  if (remaining.length) return { views: (await liveSchema(store)).views, skippedViews };
  return { views: await step(() => store.transaction(record, { generation: false })), skippedViews };
}

/**
 * The store's own views (not the in-memory catalog's of a lake session) and a digest of their and its macros' names
 * (their text reads back otherwise than it was written).
 */
async function liveSchema(store: Store): Promise<{ hash: string; views: string[] }> {
  const rows = await store.all<{ d: string }>(
    `SELECT DISTINCT d FROM (SELECT 'v ' || view_name AS d FROM duckdb_views()
      WHERE NOT internal AND schema_name = 'main' AND database_name = current_database()
     UNION ALL
     SELECT 'm ' || function_name FROM duckdb_functions()
      WHERE function_type IN ('macro', 'table_macro') AND NOT internal AND schema_name = 'main' AND database_name = current_database())
     ORDER BY 1`,
  );
  const names = rows.map((r) => r.d);
  return { hash: createHash('sha256').update(names.join('\n')).digest('hex'), views: names.filter((d) => d.startsWith('v ')).map((d) => d.slice(2)) };
}
