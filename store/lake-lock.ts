// Writers to one lake take turns: a PostgreSQL advisory lock in the catalog's database, taken before a write
// transaction begins and given back after it ends, on a connection of this process's own (docs/lake.md "Writers").
import pg from 'pg';
import { parseLibpq } from '../lib/lake-setting.ts';
import { StoreUnavailableError } from './errors.ts';
import { catalogGone, lakeLabel, type LakeOptions } from './lake.ts';

/** The lock's two keys (pg_advisory_lock(int, int)): "cbp" and "writer" as numbers, one lock per catalog database. */
export const LAKE_WRITER_KEYS = [0x636270, 0x77726974] as const;

/** libpq keys a pg client takes under other names; the others it reads from PG* variables and ~/.pgpass as libpq does. */
export function pgClientConfig(catalog: string): pg.ClientConfig {
  const kv = new Map(parseLibpq(catalog));
  const sslmode = kv.get('sslmode') ?? process.env.PGSSLMODE;
  const timeout = Number(kv.get('connect_timeout') ?? 10);
  return {
    host: kv.get('host') ?? kv.get('hostaddr'),
    port: kv.has('port') ? Number(kv.get('port')) : undefined,
    database: kv.get('dbname'),
    user: kv.get('user'),
    password: kv.get('password'),
    application_name: 'cbp writer lock',
    connectionTimeoutMillis: timeout > 0 ? timeout * 1000 : 0,
    keepAlive: true,
    ssl: sslmode === undefined || ['disable', 'allow', 'prefer'].includes(sslmode) ? undefined
      : { rejectUnauthorized: sslmode === 'verify-ca' || sslmode === 'verify-full' },
  };
}

export interface LakeWriterLock {
  /** Waits for the lock (at most `waitSeconds`, 0: for ever), telling `onWait` once when another process holds it. */
  acquire(onWait?: () => void): Promise<void>;
  /** Whether the lock is still held: false once its connection broke (PostgreSQL then gave it back). */
  intact(): boolean;
  release(): Promise<void>;
  close(): Promise<void>;
}

export function lakeWriterLock(l: LakeOptions, waitSeconds: number): LakeWriterLock {
  const label = lakeLabel(l);
  // libpq's words for a refused connection, as DuckLake's own errors say it.
  const unavailable = (e: unknown) => catalogGone(l, String((e as Error)?.message ?? e).split('\n')[0].replace(/^connect ECONNREFUSED/, 'Connection refused:'));
  let client: pg.Client | undefined;
  let broken = false;
  let held = false;
  const connect = async (): Promise<pg.Client> => {
    if (client && !broken) return client;
    await client?.end().catch(() => undefined);
    broken = false;
    // A catalog frozen mid-answer: given up a little after PostgreSQL's own lock_timeout would have.
    const c = new pg.Client({ ...pgClientConfig(l.catalog), ...(waitSeconds > 0 ? { query_timeout: (waitSeconds + 10) * 1000 } : {}) });
    c.on('error', () => { broken = true; });
    c.on('end', () => { broken = true; });
    try {
      await c.connect();
      await c.query(`SET lock_timeout = ${Math.max(0, Math.round(waitSeconds * 1000))}`);
    } catch (e) {
      await c.end().catch(() => undefined);
      throw unavailable(e);
    }
    return (client = c);
  };
  return {
    async acquire(onWait) {
      const c = await connect();
      try {
        const [{ ok }] = (await c.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [...LAKE_WRITER_KEYS])).rows as Array<{ ok: boolean }>;
        if (!ok) {
          onWait?.();
          await c.query('SELECT pg_advisory_lock($1, $2)', [...LAKE_WRITER_KEYS]);
        }
        held = true;
      } catch (e) {
        if ((e as { code?: string }).code === '55P03') {
          throw new StoreUnavailableError(`Another process has been writing to the lake (${label}) for ${waitSeconds} s without finishing: this step did `
            + 'not start. Run the command again when it is done; a process stopped mid-write (frozen, not killed) holds the lake until it ends. '
            + 'CBP_LAKE_STATEMENT_TIMEOUT sets the wait.');
        }
        broken = true;
        throw unavailable(e);
      }
    },
    intact: () => held && !broken,
    async release() {
      if (!held) return;
      held = false;
      if (!broken) await client?.query('SELECT pg_advisory_unlock($1, $2)', [...LAKE_WRITER_KEYS]).catch(() => { broken = true; });
    },
    async close() {
      held = false;
      await client?.end().catch(() => undefined);
      client = undefined;
    },
  };
}
