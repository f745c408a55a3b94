// Analysts read only: a `cbp sql` session (and every reader of the snapshot) cannot write or read other
// files, attach the working store, load extensions, or change the settings that keep it so.
import { existsSync, linkSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { QueryRefusedError, openAnalystSession, openSnapshotSession, runAnalystQuery } from '../store/analyst.ts';
import type { Store } from '../store/db.ts';
import type { Ctx } from '../cli/context.ts';
import { cbp as runCbp, type CliRun } from './activities-fixtures.ts';
import { chargeback, tmpDir, writeJson } from './store-fixtures.ts';

let dir: string;
let dbPath: string;
let snapshotPath: string;

/** The CLI (test/activities-fixtures.ts), on this test's store and snapshot, in its folder. */
function cbp(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return runCbp(args, { CBP_DATA_DIR: path.join(dir, 'data'), CBP_DB_PATH: dbPath, CBP_SNAPSHOT_PATH: snapshotPath, CBP_LOG_LEVEL: 'silent', ...env }, dir);
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;

beforeAll(async () => {
  dir = tmpDir();
  dbPath = path.join(dir, 'data', 'cbp.duckdb');
  snapshotPath = path.join(dir, 'data', 'published', 'cbp.duckdb');
  const store = await openTestStore({ dbPath });
  try {
    await loadReport(store, writeJson(dir, 'cb.json', [chargeback(), chargeback({ case_number: 'CB-2' })]), { kind: 'chargebacks', seenAt: '2024-03-05T00:00:00Z' });
    await publishSnapshot(store, { snapshotPath });
  } finally {
    store.close();
  }
});


async function refused(session: Store, sql: string): Promise<QueryRefusedError> {
  const e = await runAnalystQuery(session, sql).then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(e, sql).toBeInstanceOf(QueryRefusedError);
  return e as QueryRefusedError;
}

describe('an analyst session', () => {
  it('refuses COPY ... TO any file, naming cbp export, and writes nothing (not a journal segment, not over the store)', async () => {
    const session = await openSnapshotSession(snapshotPath);
    try {
      const target = path.join(dir, 'data', 'journal', 'segment-00000001.ndjson');
      const e = await refused(session, `COPY (SELECT 1 AS x) TO ${q(target)} (FORMAT csv)`);
      expect(e.message).toBe('cbp sql reads the snapshot only: COPY ... TO is not allowed; to write files use `cbp export --format parquet|csv --out DIR`.');
      expect(existsSync(target)).toBe(false);
      const before = readFileSync(dbPath);
      await refused(session, `COPY chargebacks TO ${q(dbPath)} (FORMAT parquet)`);
      await refused(session, `EXPORT DATABASE ${q(path.join(dir, 'dump'))}`);
      expect(readFileSync(dbPath).equals(before)).toBe(true);
      expect(existsSync(path.join(dir, 'dump'))).toBe(false);
    } finally {
      session.close();
    }
  });

  it('refuses to read files: /etc/passwd through read_text and read_csv, an env file, a glob', async () => {
    const envFile = path.join(dir, '.env');
    writeFileSync(envFile, 'CBP_WEBHOOK_PASSWORD=s3cret-not-for-analysts\n');
    const session = await openSnapshotSession(snapshotPath);
    try {
      for (const sql of [
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_csv('/etc/passwd', sep = ':')",
        `SELECT content FROM read_text(${q(envFile)})`,
        `SELECT * FROM read_csv(${q(envFile)})`,
        `SELECT * FROM glob(${q(path.join(dir, '*'))})`,
      ]) {
        const e = await refused(session, sql);
        expect(e.message).toMatch(/^cbp sql reads the snapshot only: reading other files .* is not allowed/);
        expect(e.message).not.toContain('s3cret');
      }
      // A path in FROM is no table here either (replacement scans are off with external access).
      await expect(runAnalystQuery(session, `SELECT * FROM ${q(envFile)}`)).rejects.toThrow(/does not exist/);
    } finally {
      session.close();
    }
  });

  it('refuses ATTACH, and never takes the working store\'s lock: a writer opens it meanwhile', async () => {
    const session = await openSnapshotSession(snapshotPath);
    try {
      const e = await refused(session, `ATTACH ${q(dbPath)} AS w (READ_ONLY)`);
      expect(e.message).toBe('cbp sql reads the snapshot only: ATTACH is not allowed; to query another snapshot file use `cbp sql --snapshot FILE`.');
      await refused(session, `ATTACH ${q(path.join(dir, 'other.duckdb'))} AS o`);
      expect(existsSync(path.join(dir, 'other.duckdb'))).toBe(false);
      // Another process opens the store read-write (as a run would) while the session is still open.
      const writer = await cbp(['db', 'migrate', '--json']);
      expect({ code: writer.code, stderr: writer.stderr }).toEqual({ code: 0, stderr: '' });
    } finally {
      session.close();
    }
  });

  it('refuses INSTALL and LOAD of extensions', async () => {
    const session = await openSnapshotSession(snapshotPath);
    try {
      for (const sql of ['INSTALL httpfs', 'LOAD httpfs', "FORCE INSTALL httpfs FROM 'http://127.0.0.1:9/'"]) {
        expect((await refused(session, sql)).message).toBe(
          'cbp sql reads the snapshot only: INSTALL and LOAD of extensions are not allowed; json, parquet and icu (time zones) are built in.',
        );
      }
    } finally {
      session.close();
    }
  });

  it('cannot SET or RESET its way out: external access, the lock, the time zone and the limits stay', async () => {
    const session = await openSnapshotSession(snapshotPath);
    try {
      for (const sql of [
        'SET enable_external_access = true',
        'RESET enable_external_access',
        'SET GLOBAL enable_external_access = true',
        'SET lock_configuration = false',
        'RESET lock_configuration',
        "SET allowed_directories = ['/']",
        "SET TimeZone = 'America/New_York'",
        "PRAGMA memory_limit = '64GB'",
        "SET profiling_output = '/tmp/profile.json'",
      ]) {
        expect((await refused(session, sql)).message).toMatch(/^cbp sql reads the snapshot only: settings cannot be changed \(SET, RESET or PRAGMA of \w+\)/);
      }
      expect((await refused(session, "CALL enable_logging(storage = 'file', storage_path = '/tmp/logs')")).message).toMatch(/enable_logging.* not allowed/);
      const settings = await session.all<{ name: string; value: string }>(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', 'lock_configuration', 'autoload_known_extensions', 'autoinstall_known_extensions', 'TimeZone', 'access_mode') ORDER BY name",
      );
      expect(Object.fromEntries(settings.map((s) => [s.name, s.value]))).toEqual({
        TimeZone: 'UTC',
        access_mode: 'read_only',
        autoinstall_known_extensions: 'false',
        autoload_known_extensions: 'false',
        enable_external_access: 'false',
        lock_configuration: 'true',
      });
      expect((await refused(session, "SELECT * FROM read_text('/etc/passwd')")).message).toMatch(/reading other files/);
      // Plain analysis still works.
      expect((await runAnalystQuery(session, 'SELECT count(*) AS n FROM mart_chargebacks')).getRowObjectsJson()).toEqual([{ n: '2' }]);
    } finally {
      session.close();
    }
  });

  it('refuses PRAGMAs and functions that change the session despite the lock (profiling, logging, optimizer, verification...), saying what to use', async () => {
    const session = await openSnapshotSession(snapshotPath);
    try {
      const profiling = await refused(session, 'CALL enable_profiling()');
      expect(profiling.message).toBe(
        'cbp sql reads the snapshot only: enable_profiling is not allowed, it would change the session; to see how a query runs use EXPLAIN ANALYZE <query>, whose plan with timings comes back as its result.',
      );
      for (const sql of [
        'PRAGMA enable_profiling',
        "PRAGMA enable_profiling = 'json'",
        "CALL enable_profiling(save_location = 'profile.json')",
        'SELECT * FROM enable_profiling()',
        'CALL disable_profiling()',
        'PRAGMA enable_profile',
        'PRAGMA disable_optimizer',
        'PRAGMA enable_verification',
        'PRAGMA verify_parallelism',
        'PRAGMA disable_verify_external',
        'PRAGMA enable_progress_bar',
        'PRAGMA enable_print_progress_bar',
        'PRAGMA enable_object_cache',
        'PRAGMA disable_checkpoint_on_shutdown',
        "PRAGMA add_parquet_key('k', '0123456789112345')",
        'CALL disable_peg_parser()',
        'CALL truncate_duckdb_logs()',
        '/* a comment */ pragma  ENABLE_PROFILING; SELECT 1',
      ]) {
        expect((await refused(session, sql)).message, sql).toMatch(/^cbp sql reads the snapshot only: \w+ is not allowed, it would change the session; /);
      }
      // The words in a string, a quoted name or a comment are no call.
      expect((await runAnalystQuery(session, "SELECT 'enable_profiling' AS \"disable_optimizer\" -- enable_profiling")).getRowObjectsJson()).toEqual([
        { disable_optimizer: 'enable_profiling' },
      ]);
      const settings = await session.all<{ name: string; value: string | null }>(
        "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_profiling', 'enable_progress_bar', 'enable_object_cache') ORDER BY name",
      );
      expect(settings).toEqual([
        { name: 'enable_object_cache', value: 'false' },
        { name: 'enable_profiling', value: null },
        { name: 'enable_progress_bar', value: 'false' },
      ]);
      const plan = (await runAnalystQuery(session, 'EXPLAIN ANALYZE SELECT count(*) FROM mart_chargebacks')).getRowsJson();
      expect(String(plan[0][1])).toContain('Total Time');
    } finally {
      session.close();
    }
  });

  it('knows every PRAGMA and table function of its DuckDB: each either only reads or is refused before it runs', async () => {
    const session = await openSnapshotSession(snapshotPath);
    try {
      const fns = await session.all<{ name: string }>(
        "SELECT DISTINCT function_name AS name FROM duckdb_functions() WHERE internal AND function_type IN ('pragma', 'table', 'table_macro') ORDER BY 1",
      );
      // Reading the catalog, the session or data; file readers are stopped by external access being off;
      // checkpoints, copy_database and import_database write nothing to a read-only database.
      const readsOnly = new Set([
        'all_profiling_output', 'arrow_scan', 'arrow_scan_dumb', 'check_peg_parser', 'checkpoint', 'collations', 'copy_database',
        'database_list', 'database_size', 'extension_versions', 'force_checkpoint', 'functions', 'generate_series', 'glob', 'histogram',
        'histogram_values', 'icu_calendar_names', 'import_database', 'metadata_info', 'pg_timezone_names', 'platform', 'query',
        'query_table', 'range', 'repeat', 'repeat_row', 'seq_scan', 'show', 'show_databases', 'show_tables', 'show_tables_expanded',
        'sniff_csv', 'sql_auto_complete', 'storage_info', 'summary', 'table_info', 'test_all_types', 'test_vector_types', 'unnest',
        'user_agent', 'version', 'which_secret',
      ]);
      const reading = (n: string) => readsOnly.has(n) || /^(duckdb_|pragma_|read_|parquet_|json_)/.test(n);
      const unknown: string[] = [];
      for (const { name } of fns) {
        if (reading(name)) continue;
        const e = await runAnalystQuery(session, `PRAGMA ${name}`).then(() => undefined, (x: Error) => x);
        if (!(e instanceof QueryRefusedError && /would change the session/.test(e.message))) unknown.push(name);
      }
      expect(unknown, 'functions neither known to only read nor refused: look at what each does').toEqual([]);
    } finally {
      session.close();
    }
  });

  it('runs several statements in order and answers with the last one\'s result, naming earlier results it leaves out', async () => {
    const session = await openSnapshotSession(snapshotPath);
    const run = async (sql: string) => {
      const notices: string[] = [];
      const reader = await runAnalystQuery(session, sql, { notice: (m) => notices.push(m) });
      return { rows: reader.getRowObjectsJson(), notices };
    };
    try {
      expect(await run("SET VARIABLE min_amount = 0; SELECT count(*) AS n FROM mart_chargebacks WHERE amount > getvariable('min_amount')")).toEqual({
        rows: [{ n: '2' }],
        notices: [],
      });
      expect(await run('CREATE TEMP TABLE t AS SELECT 41 AS x; SELECT x + 1 AS y FROM t;')).toEqual({ rows: [{ y: 42 }], notices: [] });
      expect(await run('SELECT 1 AS a; SELECT 2 AS b')).toEqual({
        rows: [{ b: 2 }],
        notices: ['printed the result of the last statement (2 of 2) only; statement 1 also returned rows: run it on its own to see them'],
      });
      expect((await run('SELECT 1 AS a; SELECT 2 AS b; SET VARIABLE z = 1; SELECT 3 AS c')).notices).toEqual([
        'printed the result of the last statement (4 of 4) only; statements 1, 2 also returned rows: run each on its own to see them',
      ]);
      // A syntax error anywhere runs nothing; DuckDB's own message, without node-api's prefix.
      const e = await runAnalystQuery(session, 'SET VARIABLE q = 1; SELEC 2').then(() => undefined, (x: Error) => x);
      expect(e?.message).toMatch(/^Parser Error: syntax error at or near "SELEC"/);
      expect((await run("SELECT getvariable('q') AS q")).rows).toEqual([{ q: null }]);
      await expect(runAnalystQuery(session, '-- nothing here')).rejects.toThrow('the query holds no SQL statement');
    } finally {
      session.close();
    }
  });

  it('leaves no temp folder behind', async () => {
    const session = await openAnalystSession(snapshotPath);
    const [{ dir: temp }] = await session.all<{ dir: string }>("SELECT current_setting('temp_directory') AS dir");
    expect(existsSync(temp)).toBe(true);
    session.close();
    expect(existsSync(temp)).toBe(false);
  });
});

describe('cbp ratios and cbp alerts', () => {
  it('read the snapshot, or the store before any publish, through the same locked session', async () => {
    const { openForReading } = await import('../cli/commands/ratios.ts');
    const ctx = (snapshot: string) => ({ config: () => ({ snapshotPath: snapshot, dbPath, storeMemoryLimit: '256MB' }) }) as unknown as Ctx;
    for (const c of [ctx(snapshotPath), ctx(path.join(dir, 'never-published.duckdb'))]) {
      const session = await openForReading(c);
      try {
        const rows = await session.all<{ name: string; value: string }>(
          "SELECT name, value FROM duckdb_settings() WHERE name IN ('enable_external_access', 'lock_configuration', 'access_mode') ORDER BY name",
        );
        expect(rows).toEqual([
          { name: 'access_mode', value: 'read_only' },
          { name: 'enable_external_access', value: 'false' },
          { name: 'lock_configuration', value: 'true' },
        ]);
      } finally {
        session.close();
      }
    }
  });
});

describe('cbp sql', () => {
  it('exits 2 with what to use instead, for each statement it refuses', async () => {
    const copy = await cbp(['sql', `COPY chargebacks TO ${q(path.join(dir, 'out.csv'))}`]);
    expect(copy.code).toBe(2);
    expect(copy.stderr).toContain('cbp sql reads the snapshot only: COPY ... TO is not allowed; to write files use `cbp export --format parquet|csv --out DIR`');
    expect(copy.stderr).not.toMatch(/\n\s+at /);
    expect(existsSync(path.join(dir, 'out.csv'))).toBe(false);
    const read = await cbp(['sql', "SELECT * FROM read_text('/etc/passwd')"]);
    expect(read.code).toBe(2);
    expect(read.stdout).toBe('');
    expect(read.stderr).toMatch(/reading other files/);
  });

  it('opens any file given as --snapshot the same locked way, and refuses the working store', async () => {
    const other = path.join(dir, 'other-snapshot.duckdb');
    const s = await openTestStore({ dbPath: other });
    s.close();
    const r = await cbp(['sql', '--snapshot', other, `COPY (SELECT 1) TO ${q(path.join(dir, 'x.csv'))}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/COPY \.\.\. TO is not allowed/);
    expect(existsSync(path.join(dir, 'x.csv'))).toBe(false);
    const store = await cbp(['sql', '--snapshot', dbPath, 'SELECT 1']);
    expect(store.code).toBe(2);
    expect(store.stderr).toMatch(/is the working store, not a snapshot/);
    // The same file under another name: a hard link (same inode, another path) and a symlink.
    const hard = path.join(dir, 'hard.duckdb');
    linkSync(dbPath, hard);
    const soft = path.join(dir, 'soft.duckdb');
    symlinkSync(dbPath, soft);
    for (const name of [hard, soft]) {
      const r2 = await cbp(['sql', '--snapshot', name, 'SELECT 1']);
      expect({ code: r2.code, stdout: r2.stdout }, name).toEqual({ code: 2, stdout: '' });
      expect(r2.stderr).toMatch(/is the working store, not a snapshot/);
    }
  });

  it('says a query that needs more memory than the store\'s limit needs more memory, and how to give it or narrow the query', async () => {
    // A list of 40 million numbers (320 MB) is held whole: no limit of 128MB spills it.
    const r = await cbp(['sql', 'SELECT len(list(i)) AS n FROM range(40000000) t(i)'], { CBP_STORE_MEMORY_LIMIT: '128MB' });
    expect({ code: r.code, stdout: r.stdout }).toEqual({ code: 1, stdout: '' });
    expect(r.stderr).toMatch(/^cbp: the query needs more memory than the store's limit allows \(128MB, CBP_STORE_MEMORY_LIMIT\): raise it for this run \(e\.g\. CBP_STORE_MEMORY_LIMIT=256MB\)/);
    expect(r.stderr).toContain("mart_ratios_between(DATE '2026-01-01', DATE '2026-06-01')");
    expect(r.stderr).toContain('(DuckDB: Out of Memory Error:');
    expect(r.stderr).toContain('[CBP_ERR_STORE_UNAVAILABLE]');
    // DuckDB's own advice is what the locked session refuses.
    expect(r.stderr).not.toMatch(/SET memory_limit|SET threads|Possible solutions/);
    const ok = await cbp(['sql', 'SELECT len(list(i)) AS n FROM range(1000) t(i)', '--format', 'csv'], { CBP_STORE_MEMORY_LIMIT: '128MB' });
    expect(ok).toEqual({ code: 0, stdout: 'n\n1000\n', stderr: '' });
    // Another error that quotes the words (the query's text) is left as it is.
    const quoted = await cbp(['sql', "SELECT 'Out of Memory Error: no'::INTEGER AS n"]);
    expect(quoted.code).toBe(1);
    expect(quoted.stderr).toMatch(/^cbp: Conversion Error/);
    expect(quoted.stderr).not.toContain('needs more memory');
  });

  it('ends a failed query (a parser error, an unknown table) with a code, exit 1, and a refused write with one, exit 2', async () => {
    const parse = await cbp(['sql', 'selec 1']);
    expect(parse.code).toBe(1);
    expect(parse.stderr).toMatch(/syntax error[\s\S]*\[CBP_ERR_QUERY\]\n$/);
    const missing = await cbp(['sql', 'select * from no_such_table']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no_such_table[\s\S]*\[CBP_ERR_QUERY\]\n$/);
    const del = await cbp(['sql', 'delete from chargebacks']);
    expect(del.code).toBe(2);
    expect(del.stderr).toMatch(/cannot change data[\s\S]*\[CBP_ERR_USAGE\]\n$/);
    for (const r of [parse, missing, del]) expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('prints the last statement\'s result, and says on stderr which earlier results it left out', async () => {
    const r = await cbp(['sql', 'SELECT 1 AS a; SELECT 2 AS b', '--format', 'csv']);
    expect(r).toEqual({
      code: 0,
      stdout: 'b\n2\n',
      stderr: 'cbp sql: printed the result of the last statement (2 of 2) only; statement 1 also returned rows: run it on its own to see them\n',
    });
    const v = await cbp(['sql', "SET VARIABLE n = 7; SELECT getvariable('n') AS n", '--format', 'csv']);
    expect(v).toEqual({ code: 0, stdout: 'n\n7\n', stderr: '' });
    const p = await cbp(['sql', 'CALL enable_profiling(); SELECT 42 AS x', '--format', 'csv']);
    expect(p.code).toBe(2);
    expect(p.stdout).toBe('');
    expect(p.stderr).toMatch(/enable_profiling is not allowed, it would change the session; to see how a query runs use EXPLAIN ANALYZE/);
  });
});
