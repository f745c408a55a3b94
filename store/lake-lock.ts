// Writers to one lake take turns: a PostgreSQL advisory lock in the catalog's database, taken before a write
// transaction begins and given back after it ends, on a connection of this process's own (docs/lake.md "Writers").
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import type pg from 'pg';
import { ConfigError } from '../lib/errors.ts';
import { parseLibpq } from '../lib/lake-setting.ts';
import { StoreUnavailableError } from './errors.ts';
import { within } from '../lib/within.ts';
import { catalogGone, lakeLabel, mask, type LakeOptions } from './lake.ts';

// pg and pgpass, loaded on a lake's first write: a command on a DuckDB file never loads them.
const require = createRequire(import.meta.url);
const pgClient = (): typeof pg.Client => (require('pg') as typeof pg).Client;
const pgpass = (c: object, cb: (password?: string) => void): void => (require('pgpass') as (c: object, cb: (password?: string) => void) => void)(c, cb);

/** How long answers() waits for the lock's connection. */
const ANSWER_WAIT_MS = 5_000;

/** The lock's two keys (pg_advisory_lock(int, int)): "cbp" and "writ" as numbers, one lock per catalog database. */
export const LAKE_WRITER_KEYS = [0x636270, 0x77726974] as const;

/** The longest wait for another writer's turn: the longest step, an activity's 30 minutes (workflows/activity-options.ts). */
export const LAKE_TURN_WAIT_SECONDS = 1800;

/** Set on the lock's session: no server timeout ends a turn, and a writer gone without a word frees it within a minute. */
const SESSION = ['statement_timeout = 0', 'idle_session_timeout = 0', 'tcp_keepalives_idle = 30', 'tcp_keepalives_interval = 10', 'tcp_keepalives_count = 3'];

/** A pg client's settings from the libpq string as libpq reads it (its keys, then PG* variables, ~/.pgpass, the OS user, the socket). */
export function pgClientConfig(catalog: string, env: NodeJS.ProcessEnv = process.env): pg.ClientConfig & { sslmode: string } {
  const kv = new Map(parseLibpq(catalog));
  const get = (k: string, v?: string) => (kv.get(k) ?? (v ? env[v] : undefined))?.split(',')[0] || undefined;
  const socket = ['/var/run/postgresql', '/tmp'].find((d) => existsSync(d));
  const host = get('hostaddr', 'PGHOSTADDR') ?? get('host', 'PGHOST') ?? socket ?? 'localhost';
  const port = Number(get('port', 'PGPORT') ?? 5432);
  const database = get('dbname', 'PGDATABASE');
  const user = get('user', 'PGUSER') ?? os.userInfo().username;
  const sslmode = get('sslmode', 'PGSSLMODE') ?? 'prefer';
  const file = (k: string, v: string) => { const f = get(k, v); return f ? readFileSync(f) : undefined; };
  const verify = sslmode === 'verify-ca' || sslmode === 'verify-full';
  // No TLS on a Unix socket, as libpq; a server name only where the host is one (not an address).
  const name = get('host', 'PGHOST');
  const ssl: pg.ClientConfig['ssl'] = ['disable', 'allow'].includes(sslmode) || host.startsWith('/') ? false : {
    rejectUnauthorized: verify, ca: file('sslrootcert', 'PGSSLROOTCERT'), cert: file('sslcert', 'PGSSLCERT'), key: file('sslkey', 'PGSSLKEY'),
    ...(name && !/^[\d.:]+$/.test(name) ? { servername: name } : {}), ...(sslmode === 'verify-ca' ? { checkServerIdentity: () => undefined } : {}),
  };
  const timeout = Number(get('connect_timeout', 'PGCONNECT_TIMEOUT') ?? 10);
  const given = get('password', 'PGPASSWORD');
  const password = given ?? (() => new Promise<string>((r) => pgpass({ host, port, database, user }, (p) => r(p ?? ''))));
  return { host, port, database, user, password, ssl, sslmode, application_name: 'cbp writer turn', connectionTimeoutMillis: timeout > 0 ? timeout * 1000 : 0, keepAlive: true };
}

export interface LakeWriterLock {
  /** Waits for the lock (at most the lake's turnWait, 0: for ever). */
  acquire(): Promise<void>;
  /** Whether the lock is still held: false once its connection broke (PostgreSQL then gave it back). */
  intact(): boolean;
  /** Whether the lock is held and its connection answers a query now (a crash may not have been noticed yet). */
  answers(): Promise<boolean>;
  release(): Promise<void>;
  close(): Promise<void>;
}

export function lakeWriterLock(l: LakeOptions): LakeWriterLock {
  const waitSeconds = l.turnWait ?? LAKE_TURN_WAIT_SECONDS;
  const failed = (e: unknown) => {
    const msg = String((e as Error)?.message ?? e).split('\n')[0];
    // Refused by PostgreSQL itself (authentication, no such database or role): a setting to fix, not a host to wait for.
    if (/^(28|3D)/.test((e as { code?: string }).code ?? '')) return new ConfigError([`the lake's catalog (${lakeLabel(l)}) refused cbp's writer connection: ${mask(l, msg)}`]);
    return catalogGone(l, msg.replace(/^connect ECONNREFUSED/, 'Connection refused:'));
  };
  let client: pg.Client | undefined;
  let held = false;
  let closed = false;
  const broken = new WeakSet<pg.Client>();
  const drop = (c: pg.Client | undefined) => { if (c) { broken.add(c); void c.end().catch(() => undefined); } if (c === client) client = undefined; };
  const open = async (cfg: pg.ClientConfig): Promise<pg.Client> => {
    const c = new (pgClient())({ ...cfg, ...(waitSeconds > 0 ? { query_timeout: (waitSeconds + 10) * 1000 } : {}) });
    c.on('error', () => broken.add(c));
    c.on('end', () => broken.add(c));
    try {
      await c.connect();
      for (const set of SESSION) await c.query(`SET ${set}`).catch(() => undefined);
      await c.query(`SET lock_timeout = ${Math.round(waitSeconds * 1000)}`);
      return c;
    } catch (e) {
      drop(c);
      throw e;
    }
  };
  const connect = async (): Promise<pg.Client> => {
    if (client && !broken.has(client)) return client;
    drop(client);
    const { sslmode, ...cfg } = pgClientConfig(l.catalog);
    let c: pg.Client;
    try {
      c = await open(cfg);
    } catch (e) {
      // sslmode prefer: libpq falls back to a plain connection where the server has no TLS.
      if (sslmode !== 'prefer' || cfg.ssl === false || !/does not support SSL/i.test((e as Error).message)) throw failed(e);
      c = await open({ ...cfg, ssl: false }).catch((x: unknown) => Promise.reject(failed(x)));
    }
    if (closed) {
      drop(c);
      throw new StoreUnavailableError('the store is closed');
    }
    return (client = c);
  };
  return {
    async acquire() {
      if (closed) throw new StoreUnavailableError('the store is closed');
      const c = await connect();
      try {
        const [{ ok }] = (await c.query('SELECT pg_try_advisory_lock($1, $2) AS ok', [...LAKE_WRITER_KEYS])).rows as Array<{ ok: boolean }>;
        if (!ok) await c.query('SELECT pg_advisory_lock($1, $2)', [...LAKE_WRITER_KEYS]);
        held = true;
      } catch (e) {
        drop(c);
        if ((e as { code?: string }).code === '55P03') {
          throw new StoreUnavailableError(`Another process has been writing to the lake (${lakeLabel(l)}) for ${waitSeconds} s without finishing: this step `
            + 'did not start. Run the command again when it is done; a process stopped mid-write (frozen, not killed) holds the lake until it ends.');
        }
        throw failed(e);
      }
    },
    intact: () => held && client !== undefined && !broken.has(client),
    async answers() {
      const c = client;
      if (!held || !c || broken.has(c)) return false;
      // Its own short wait: the connection's query timeout is the turn's whole wait, which a frozen server would take.
      const ok = await within(c.query('SELECT 1').then(() => true, () => false), ANSWER_WAIT_MS, () => false);
      if (!ok) drop(c);
      return ok;
    },
    async release() {
      if (!held) return;
      held = false;
      const c = client;
      if (c && !broken.has(c)) await c.query('SELECT pg_advisory_unlock($1, $2)', [...LAKE_WRITER_KEYS]).catch(() => drop(c));
    },
    async close() {
      closed = true;
      held = false;
      const c = client;
      drop(c);
    },
  };
}
