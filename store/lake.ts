// The store as a DuckLake lake (CBP_STORE=ducklake:postgres:…): an in-memory DuckDB that attaches the lake and uses
// it as its default catalog, so every statement cbp runs reads and writes the lake. docs/lake.md says why and how.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, NotFoundError } from '../lib/errors.ts';
import { StoreDamagedError, StoreUnavailableError } from './errors.ts';
import { LAKE_PREFIX, lakeCatalog, lakeSecrets, maskLake } from '../lib/lake-setting.ts';
import { sqlText } from './sql-text.ts';
import { PACKAGE_ROOT } from '../lib/package-root.ts';
import { within } from '../lib/within.ts';
import { log } from '../lib/log.ts';

/** Where a lake is: its PostgreSQL catalog (a libpq string), its data path, and the extensions' folder. */
export interface LakeOptions {
  catalog: string;
  dataPath: string;
  /** default: .tools/duckdb-extensions in the package (npm run lake:install) */
  extensionsDir?: string;
  /** S3 credentials and endpoint of an s3:// data path (none: the AWS credential chain) */
  s3?: { keyId?: string; secret?: string; sessionToken?: string; region?: string; endpoint?: string };
  /** seconds a statement may wait before it is given up (CBP_LAKE_STATEMENT_TIMEOUT; default 300, 0: none) */
  statementTimeout?: number;
  /** seconds a write may wait for another process's turn (default LAKE_TURN_WAIT_SECONDS, store/lake-lock.ts; 0: none) */
  turnWait?: number;
}

/** The name the lake is attached under (the default catalog of a lake store's sessions). */
export const LAKE_ALIAS = 'lake';
export const DEFAULT_LAKE_EXTENSIONS_DIR = path.join(PACKAGE_ROOT, '.tools', 'duckdb-extensions');

/** The lake as shown to people: its setting with the password masked. */
export function lakeLabel(l: LakeOptions): string {
  return maskLake(LAKE_PREFIX + l.catalog);
}

/** DuckDB instance options of a lake session: extensions from the folder only, signed ones only, loaded when named. */
export function lakeInstanceOptions(l: LakeOptions): Record<string, string> {
  return {
    extension_directory: l.extensionsDir ?? DEFAULT_LAKE_EXTENSIONS_DIR,
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_unsigned_extensions: 'false',
    allow_community_extensions: 'false',
  };
}

/** The statements that load the extensions and attach the lake as the default catalog. */
export function lakeAttachStatements(l: LakeOptions, readOnly: boolean): string[] {
  const s3 = /^s3:\/\//i.test(l.dataPath);
  return [
    'LOAD ducklake',
    'LOAD postgres',
    ...(s3 ? ['LOAD httpfs', s3Secret(l.s3 ?? {})] : []),
    `ATTACH ${sqlText(LAKE_PREFIX + withConnectTimeout(l.catalog))} AS ${LAKE_ALIAS} (DATA_PATH ${sqlText(l.dataPath)}${readOnly ? ', READ_ONLY' : ', DATA_INLINING_ROW_LIMIT 0'})`,
    `USE ${LAKE_ALIAS}`,
    `SET disabled_optimizers = '${LAKE_DISABLED_OPTIMIZERS}'`,
  ];
}

/** A join's filter pushed into a lake scan asks the catalog for its files' statistics again: fewer requests without. */
export const LAKE_DISABLED_OPTIMIZERS = 'join_filter_pushdown';

/** The catalog's libpq string with connect_timeout=10 unless it sets one: a host that never answers fails the start. */
export function withConnectTimeout(catalog: string): string {
  return /(^|\s)connect_timeout\s*=/.test(catalog) ? catalog : `${catalog} connect_timeout=10`;
}

/**
 * The session's S3 secret for an s3:// data path: the keys given (AWS_ACCESS_KEY_ID, …), else the AWS credential
 * chain; an endpoint of an S3-compatible server (AWS_ENDPOINT_URL) is addressed path-style, TLS by its scheme.
 */
export function s3Secret(s: NonNullable<LakeOptions['s3']>): string {
  const parts = s.keyId && s.secret
    ? [`KEY_ID ${sqlText(s.keyId)}`, `SECRET ${sqlText(s.secret)}`, ...(s.sessionToken ? [`SESSION_TOKEN ${sqlText(s.sessionToken)}`] : [])]
    : ['PROVIDER credential_chain'];
  if (s.region) parts.push(`REGION ${sqlText(s.region)}`);
  if (s.endpoint) {
    const u = new URL(s.endpoint);
    parts.push(`ENDPOINT ${sqlText(u.host)}`, "URL_STYLE 'path'", `USE_SSL ${u.protocol === 'https:'}`);
  }
  return `CREATE OR REPLACE SECRET cbp_lake_s3 (TYPE s3, ${parts.join(', ')})`;
}

/** What libpq says of a connection the catalog dropped after it answered (plain or over TLS). */
const DROPPED = String.raw`server closed the connection[^\n]*|terminating connection[^\n]*|SSL SYSCALL error: EOF detected|SSL connection has been closed unexpectedly`;

/** What a reader says of a lake no writer has opened yet. */
export const lakeWithoutSchema = (l: LakeOptions) => `The lake ${lakeLabel(l)} has no schema yet: run \`cbp db migrate\` (a writer's first run makes it too), then run this again.`;

/**
 * An error of opening a lake made into what to do, with the password never in it: exit 2 at start, but a catalog that
 * answered and then dropped the connection mid-open stopped answering (exit 1, run again), as it would mid-run.
 */
export function lakeOpenError(l: LakeOptions, e: unknown): ConfigError | NotFoundError | StoreUnavailableError {
  const msg = mask(l, (e as Error).message ?? String(e));
  // Not while connecting ("connection to server … failed:"): a host:port that is no PostgreSQL closes it too.
  const dropped = /connection to server .* failed:/i.test(msg) ? undefined : new RegExp(`(${DROPPED})`, 'i').exec(msg)?.[1];
  if (dropped) return catalogGone(l, dropped);
  // A read-only attach of a catalog DuckLake never initialized.
  if (/creating a new DuckLake is explicitly disabled/i.test(msg)) return new NotFoundError(lakeWithoutSchema(l));
  const madeWith = /does not match existing data path in the catalog "([^"]*)"/.exec(msg)?.[1];
  if (madeWith !== undefined) {
    return new ConfigError([`CBP_LAKE_DATA_PATH (${l.dataPath}) is not the data path the lake ${lakeLabel(l)} was made with, ${madeWith}: set CBP_LAKE_DATA_PATH to it (every host reaches the lake's files by the same path).`]);
  }
  const dir = l.extensionsDir ?? DEFAULT_LAKE_EXTENSIONS_DIR;
  if (/extension/i.test(msg) && /(not found|could not|failed to load|no such file|does not exist)/i.test(msg) && !/ATTACH|connect/i.test(msg)) {
    const hint = existsSync(dir) ? `${dir} lacks them or holds another DuckDB version's` : `${dir} does not exist`;
    return new ConfigError([`CBP_STORE names a lake, but its DuckDB extensions (ducklake, postgres) cannot be loaded: ${hint}. Run \`npm run lake:install\` (or set CBP_LAKE_EXTENSIONS_DIR). DuckDB said: ${msg}`]);
  }
  return new ConfigError([`CBP_STORE: the lake ${lakeLabel(l)} (data ${l.dataPath}) cannot be opened: ${msg}. Check that its PostgreSQL server runs and accepts this connection string, and that the data path exists.`]);
}

/**
 * A lake's error mid-run in words an operator acts on (the catalog gone, its data folder not writable), with no
 * password and no statement of DuckLake's own in it; any other error as it was.
 */
export function lakeRuntimeError(l: LakeOptions, e: unknown): unknown {
  const msg = (e as Error)?.message;
  if (typeof msg !== 'string' || isLakeConflict(e)) return e;
  const cause = mask(l, new RegExp(`(connection to server[^\\n]*|${DROPPED}|Connection refused|timeout expired)`, 'i').exec(msg)?.[1] ?? '');
  if (cause || /unsuccessful query result|Unable to connect to Postgres|no connection to the server|Failed to execute query "?ROLLBACK/i.test(msg)) {
    return catalogGone(l, cause);
  }
  const gone = /No such file or directory/i.test(msg) ? /["']([^"']+\.parquet)["']/.exec(msg)?.[1] : undefined;
  if (gone) {
    return new StoreDamagedError(`The lake lists a data file that is not there (${gone}): a commit whose answer was lost after PostgreSQL `
      + 'had applied it (DuckLake then removes the files of the commit it believes failed), or a file removed by hand. The lake cannot be '
      + 'read whole: restore its catalog and data folder from one backup (docs/lake.md "Under faults").');
  }
  if (/Permission denied|Read-only file system|Could not create directory/i.test(msg) || (/No such file or directory/i.test(msg) && msg.includes(l.dataPath))) {
    return new StoreUnavailableError(`The lake's data folder ${l.dataPath} cannot be written: it must exist and be writable by this user on every host (a read-only mount, a missing folder). Nothing of this step was committed.`);
  }
  return e;
}

/** The catalog gone, in the words every path says it (`cause`: what the connection said, masked). */
export function catalogGone(l: LakeOptions, cause: string): StoreUnavailableError {
  return new StoreUnavailableError(`The lake's catalog (PostgreSQL, ${lakeLabel(l)}) stopped answering${cause ? ` (${mask(l, cause)})` : ''}: this step did not finish. Check that PostgreSQL runs and is reachable, then run the command again (a step runs again whole).`);
}

/**
 * A statement's promise that fails when it waits longer than the lake's statement timeout: a catalog frozen or cut off
 * mid-statement never answers, and libpq waits on it for ever. `interrupt` is asked to stop the statement.
 */
export function lakeWatch<T>(l: LakeOptions, p: Promise<T>, interrupt: () => void): Promise<T> {
  const limit = l.statementTimeout ?? 300;
  if (!(limit > 0)) return p;
  return within(p, limit * 1000, () => {
    interrupt();
    throw new StoreUnavailableError(`A statement on the lake waited ${limit} s without an answer from its catalog (PostgreSQL, ${lakeLabel(l)}): `
      + 'this step did not finish. Check that PostgreSQL runs and answers, then run the command again (a step runs again whole); '
      + 'CBP_LAKE_STATEMENT_TIMEOUT sets the wait.');
  });
}

/** The text with the lake's secrets (password in every spelling, S3 keys) masked. */
export function mask(l: LakeOptions, msg: string): string {
  for (const p of [...lakeSecrets(LAKE_PREFIX + l.catalog), l.s3?.secret, l.s3?.sessionToken]) if (p) msg = msg.split(p).join('***');
  return msg;
}

const ENUM_TYPE = /CREATE\s+TYPE\s+(\w+)\s+AS\s+ENUM\s*\([^)]*\)\s*;/gi;

/**
 * A migration's SQL as a lake takes it: DuckLake has no ENUM types (their columns are VARCHAR; the values cbp
 * writes are the same texts), no PRIMARY KEY or UNIQUE constraints (cbp's writes keep keys unique themselves:
 * MERGE, not ON CONFLICT), and no per-column compression (Parquet chooses its own). `enums`: the ENUM type names
 * the migrations up to this one made (a later one may use an earlier one's).
 */
export function lakeDialect(sql: string, enums: ReadonlySet<string>): string {
  let out = sql.replace(ENUM_TYPE, '');
  if (enums.size) out = out.replace(new RegExp(`\\b(${[...enums].join('|')})\\b(?!\\s*AS\\s+ENUM)`, 'g'), 'VARCHAR');
  return out
    .replace(/\s+USING\s+COMPRESSION\s+\w+/gi, '')
    .replace(/,\s*(PRIMARY\s+KEY|UNIQUE)\s*\([^)]*\)/gi, '')
    .replace(/\s+(PRIMARY\s+KEY|UNIQUE)\b/gi, '');
}

/** The ENUM type names a migration's SQL creates. */
export function enumTypes(sql: string): string[] {
  return [...sql.matchAll(ENUM_TYPE)].map((m) => m[1]);
}

/** The lake the configuration names (CBP_STORE), or undefined for the DuckDB file. */
export function configuredLake(cfg: LakeSettings): LakeOptions | undefined {
  const catalog = lakeCatalog(cfg.store);
  // lib/config.ts refuses a lake without its data path at load.
  if (catalog === null || cfg.lakeDataPath === undefined) return undefined;
  const s3 = { keyId: cfg.awsAccessKeyId, secret: cfg.awsSecretAccessKey, sessionToken: cfg.awsSessionToken, region: cfg.awsRegion, endpoint: cfg.awsEndpointUrl };
  return { catalog, dataPath: cfg.lakeDataPath, extensionsDir: cfg.lakeExtensionsDir, s3, statementTimeout: cfg.lakeStatementTimeout };
}

/** The settings a lake is opened from (lib/config.ts). */
export interface LakeSettings {
  store?: string;
  lakeDataPath?: string;
  lakeExtensionsDir?: string;
  lakeStatementTimeout?: number;
  awsAccessKeyId?: string;
  awsSecretAccessKey?: string;
  awsSessionToken?: string;
  awsRegion?: string;
  awsEndpointUrl?: string;
}

/** openStore's options for the configured store: the DuckDB file, or the lake. */
export function configuredStore(cfg: LakeSettings & { dbPath: string; storeMemoryLimit: string }): {
  dbPath: string; memoryLimit: string; lake?: LakeOptions;
} {
  const lake = configuredLake(cfg);
  return lake ? { dbPath: lakeLabel(lake), memoryLimit: cfg.storeMemoryLimit, lake } : { dbPath: cfg.dbPath, memoryLimit: cfg.storeMemoryLimit };
}

/**
 * How often a lake transaction is tried when DuckLake refuses its commit for another process's changes. Writers take
 * turns (store/lake-lock.ts), so this is for what takes no turn: another program's commit, a lost lock.
 */
export const LAKE_COMMIT_ATTEMPTS = 12;

/** A commit DuckLake refused for another transaction's changes (its own retries spent). */
export function isLakeConflict(e: unknown): boolean {
  return /Transaction conflict|Failed to commit DuckLake transaction|Exceeded the maximum retry count/i.test((e as Error)?.message ?? '');
}

/** Runs fn, again while it fails in a way `raced` says another process's commit caused (LAKE_COMMIT_ATTEMPTS at most). */
export async function retryLakeRace<T>(fn: () => Promise<T>, raced: (e: unknown) => boolean = isLakeConflict): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (!raced(e) || attempt >= LAKE_COMMIT_ATTEMPTS) throw e;
      await new Promise((r) => setTimeout(r, lakeRetryDelay(attempt)));
    }
  }
}

/**
 * Attaches the lake as the session's default catalog. A new lake's first ATTACH makes DuckLake's catalog tables: of
 * two hosts at once, the loser attaches again. Errors come out as lakeOpenError says them.
 */
export async function attachLake(run: (sql: string) => Promise<unknown>, l: LakeOptions, readOnly: boolean): Promise<void> {
  const raced = (e: unknown) => /Failed to initialize DuckLake/i.test((e as Error).message) && /already exists|duplicate key/i.test((e as Error).message);
  await retryLakeRace(async () => {
    await run(`DETACH DATABASE IF EXISTS ${LAKE_ALIAS}`);
    for (const sql of lakeAttachStatements(l, readOnly)) await run(sql);
  }, raced).catch((e: unknown) => {
    throw lakeOpenError(l, e);
  });
}

/** The wait before attempt n+1: 50 ms doubling to 3.2 s, with jitter so that two losers do not meet again. */
export function lakeRetryDelay(attempt: number): number {
  return Math.min(3200, 50 * 2 ** (attempt - 1)) * (0.5 + Math.random());
}

/**
 * Rows per Parquet row group of the lake's files, below DuckLake's default (122,880, DuckDB's): each writing thread
 * holds a row group until it is full, and a large evaluation's writes must fit the store's memory limit.
 */
export const LAKE_ROW_GROUP_ROWS = 20480;

/** What the lake's upkeep of its own settings needs of a store. */
type LakeSession = { all: (sql: string) => Promise<Array<Record<string, unknown>>>; run: (sql: string) => Promise<void> };

/**
 * The lake's options cbp needs, kept in its catalog so that every client writes alike (set in the schema's commit,
 * store/migrate.ts). No inlined rows: flushing them deletes rows readers in flight still read (docs/lake.md "Upkeep").
 */
const LAKE_OPTIONS: Record<string, number> = { parquet_row_group_size: LAKE_ROW_GROUP_ROWS, data_inlining_row_limit: 0 };

export async function ensureLakeOptions(store: LakeSession): Promise<void> {
  const set = await store.all(`SELECT option_name AS name, value FROM ducklake_options('${LAKE_ALIAS}') WHERE scope = 'GLOBAL'`);
  for (const [name, value] of Object.entries(LAKE_OPTIONS)) {
    if (!set.some((o) => o.name === name && String(o.value) === String(value))) await store.run(`CALL ducklake_set_option('${LAKE_ALIAS}', '${name}', ${value})`);
  }
}

/** The index on the catalog's file statistics, by its name there, and the statement that makes it. */
export const STATS_INDEX = 'cbp_file_column_stats_table_column';
const STATS_INDEX_SQL = `CREATE INDEX IF NOT EXISTS ${STATS_INDEX} ON public.ducklake_file_column_stats (table_id, column_id)`;

/**
 * Every filtered read asks the catalog for file statistics by table and column; DuckLake reads them so that an index
 * serves it (its PR #1147) but makes none. Made here in a statement of its own, with a new schema and at upkeep.
 */
export async function ensureLakeIndex(store: LakeSession, lake: LakeOptions): Promise<void> {
  const catalog = sqlText(`__ducklake_metadata_${LAKE_ALIAS}`);
  const made = () => store.all(`SELECT count(*)::INTEGER AS n FROM postgres_query(${catalog},
    ${sqlText(`SELECT 1 FROM pg_indexes WHERE schemaname = 'public' AND indexname = '${STATS_INDEX}'`)})`).then((r) => Number(r[0]?.n) > 0);
  // A catalog gone or frozen fails the command as any statement would; a refusal (not the tables' owner) is a warning.
  const refused = (e: unknown) => { if (e instanceof StoreUnavailableError) throw e; return false; };
  if (await made().catch(refused)) return;
  await store.run(`CALL postgres_execute(${catalog}, ${sqlText(STATS_INDEX_SQL)})`).catch(async (e: unknown) => {
    refused(e);
    // (another host may have made it at the same moment)
    if (!(await made().catch(refused))) log().warn({ err: mask(lake, String((e as Error)?.message ?? e)) }, `the lake's catalog refused an index: reads slow down as files add up; the catalog tables' owner can run: ${STATS_INDEX_SQL}`);
  });
}
