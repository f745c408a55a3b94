// The lake's writers take turns (store/lake-lock.ts): a second process's write transaction begins only after the
// first's commit, upkeep waits for a writer's commit, and a turn held too long ends the wait with words to act on.
import net from 'node:net';
import os from 'node:os';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../store/db.ts';
import { LAKE_WRITER_KEYS, lakeWriterLock, pgClientConfig } from '../store/lake-lock.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { recordRun } from '../store/runs.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';

let pgs: Postgres;
const run = (id: string) => ({ runId: id, workflow: 'ingest', status: 'ok' as const, startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), summary: {} });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(skipLake)(lakeTitle('lake writers take turns'), { timeout: 300_000 }, () => {
  let lake: { catalog: string; dataPath: string; turnWait?: number };
  let a: Store;
  let b: Store;
  beforeAll(async () => {
    pgs = await startPostgres();
    pgs.createDb('turns');
    lake = { catalog: pgs.dsn('turns'), dataPath: tempDir('cbp-lake-data-') };
    a = await openStore({ dbPath: 'lake', lake });
    b = await openStore({ dbPath: 'lake', lake });
  }, 120_000);
  afterAll(async () => {
    a?.close();
    b?.close();
    await pgs?.stop();
  });

  it("begins a second process's write only after the first's commit, and upkeep after both", async () => {
    const events: string[] = [];
    let inside!: () => void;
    const entered = new Promise<void>((r) => { inside = r; });
    const first = a.transaction(async (s) => {
      events.push('a begins');
      await recordRun(s, run('turn-a'));
      inside();
      await sleep(1500);
      events.push('a ends');
    }).then(() => events.push('a committed'));
    await entered;
    const second = b.transaction(async (s) => {
      events.push('b begins');
      await recordRun(s, run('turn-b'));
    });
    const upkeep = sleep(200).then(() => maintainStore(b)).then(() => events.push('upkeep done'));
    await Promise.all([first, second, upkeep]);
    expect(events.indexOf('b begins')).toBeGreaterThan(events.indexOf('a ends'));
    expect(events.indexOf('upkeep done')).toBeGreaterThan(events.indexOf('a ends'));
    // Each saw the other's rows: no write was made on a snapshot missing a commit before it.
    const [{ n }] = await a.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM runs WHERE run_id LIKE 'turn-%'");
    expect(n).toBe(2);
  });

  it('gives up a wait on a turn held too long, saying what to do, and writes nothing', async () => {
    const { sslmode: _, ...cfg } = pgClientConfig(lake.catalog);
    const holder = new pg.Client({ ...cfg, ssl: false });
    holder.on('error', () => undefined);
    await holder.connect();
    await holder.query('SELECT pg_advisory_lock($1, $2)', [...LAKE_WRITER_KEYS]);
    const short = await openStore({ dbPath: 'lake', lake: { ...lake, turnWait: 2 }, migrate: false });
    try {
      const t0 = Date.now();
      await expect(short.transaction((s) => recordRun(s, run('turn-late')))).rejects.toThrow(/Another process has been writing to the lake .* for 2 s without finishing: this step did not start/s);
      expect(Date.now() - t0).toBeLessThan(30_000);
    } finally {
      short.close();
      await holder.end();
    }
    const [{ n }] = await a.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM runs WHERE run_id = 'turn-late'");
    expect(n).toBe(0);
  });

  it('runs a step again when its catalog went away, whatever its failing statement said; while PostgreSQL is down, says so', async () => {
    const own = await startPostgres();
    own.createDb('gone');
    const s = await openStore({ dbPath: 'lake', lake: { catalog: own.dsn('gone'), dataPath: tempDir('cbp-lake-data-') } });
    try {
      // PostgreSQL up: a failure is the step's own, given as it was, the step run once.
      let tries = 0;
      const own1 = await s.transaction(async (t) => { tries++; await recordRun(t, run('gone-0')); throw new Error('the step itself failed'); }).catch((x: Error) => x);
      expect([tries, own1.message]).toEqual([1, 'the step itself failed']);
      // The catalog crashed under the step, whose statement said only that its transaction was aborted.
      tries = 0;
      const e = await s.transaction(async (t) => {
        tries++;
        await recordRun(t, run('gone-1'));
        await own.crash();
        throw new Error('TransactionContext Error: Current transaction is aborted (please ROLLBACK)');
      }).catch((x: Error & { code?: string }) => x);
      expect(tries).toBe(1);
      expect(e.code).toBe('CBP_ERR_STORE_UNAVAILABLE');
      expect(e.message).toMatch(/The lake's catalog \(PostgreSQL, .*\) stopped answering \(Connection refused.*run the command again/);
    } finally {
      s.close();
      await own.stop();
    }
  });

  it('reads the libpq string as libpq does: quoted values, escapes, the port as a number', () => {
    expect(pgClientConfig("host=db.example.com port=6543 dbname=cbp user=cbp password='a b\\'c' sslmode=require connect_timeout=3")).toMatchObject({
      host: 'db.example.com', port: 6543, database: 'cbp', user: 'cbp', password: "a b'c", connectionTimeoutMillis: 3000, ssl: { rejectUnauthorized: false, servername: 'db.example.com' },
    });
    // What the string leaves out comes from PG* variables as libpq reads them; the string wins over them.
    const env = { PGHOST: '10.0.0.7', PGPORT: '5433', PGUSER: 'envuser', PGSSLMODE: 'verify-full', PGPASSWORD: 'from-env' };
    expect(pgClientConfig('dbname=cbp', env)).toMatchObject({ host: '10.0.0.7', port: 5433, user: 'envuser', password: 'from-env', ssl: { rejectUnauthorized: true } });
    expect(pgClientConfig('dbname=cbp sslmode=disable user=u', env)).toMatchObject({ user: 'u', ssl: false });
    // No host: the Unix socket where there is one, and no TLS over it; no user: the OS user; no password: ~/.pgpass, asked when needed.
    const bare = pgClientConfig('dbname=cbp', {});
    expect(bare.host === 'localhost' || (String(bare.host).startsWith('/') && bare.ssl === false)).toBe(true);
    expect(bare.user).toBe(os.userInfo().username);
    expect(typeof bare.password).toBe('function');
  });
});

describe('the writer lock on a catalog that refuses', () => {
  it('says the catalog stopped answering, without the password in any spelling', async () => {
    const port = await new Promise<number>((r) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => r(p)); }); });
    const lock = lakeWriterLock({ catalog: `host=127.0.0.1 port=${port} dbname=x user=u password='Leak Me\\'Now-42'`, dataPath: '/nowhere', turnWait: 5 });
    const e = await lock.acquire().then(() => null, (x: Error & { code?: string }) => x);
    await lock.close();
    expect(e?.code).toBe('CBP_ERR_STORE_UNAVAILABLE');
    expect(e?.message).toMatch(/stopped answering \(Connection refused.*run the command again/);
    expect(e?.message).not.toMatch(/Leak|Now-42/);
  });
});
