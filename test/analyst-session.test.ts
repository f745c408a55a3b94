// Analysts read only: a `cbp sql` session (and every reader of the snapshot) cannot write or read other
// files, attach the working store, load extensions, or change the settings that keep it so.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { loadReport } from '../store/load.ts';
import { publishSnapshot } from '../store/snapshot.ts';
import { QueryRefusedError, openAnalystSession, openSnapshotSession, runAnalystQuery } from '../store/analyst.ts';
import type { Store } from '../store/db.ts';
import type { Ctx } from '../cli/context.ts';
import { ROOT, chargeback, tmpDir, writeJson } from './store-fixtures.ts';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let dir: string;
let dbPath: string;
let snapshotPath: string;

function cbp(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const childEnv = {
    ...process.env,
    CBP_DATA_DIR: path.join(dir, 'data'),
    CBP_DB_PATH: dbPath,
    CBP_SNAPSHOT_PATH: snapshotPath,
    CBP_LOG_LEVEL: 'silent',
    ...env,
  };
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'cbp.js'), ...args], { cwd: dir, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;

beforeAll(async () => {
  dir = tmpDir();
  dbPath = path.join(dir, 'data', 'cbp.duckdb');
  snapshotPath = path.join(dir, 'data', 'published', 'cbp.duckdb');
  const store = await openStore({ dbPath });
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
    const s = await openStore({ dbPath: other });
    s.close();
    const r = await cbp(['sql', '--snapshot', other, `COPY (SELECT 1) TO ${q(path.join(dir, 'x.csv'))}`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/COPY \.\.\. TO is not allowed/);
    expect(existsSync(path.join(dir, 'x.csv'))).toBe(false);
    const store = await cbp(['sql', '--snapshot', dbPath, 'SELECT 1']);
    expect(store.code).toBe(2);
    expect(store.stderr).toMatch(/is the working store, not a snapshot/);
  });
});
