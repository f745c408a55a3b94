// A throwaway PostgreSQL server for the lake suite: initdb into a temp folder, `postgres` on a free loopback port,
// trust authentication, stopped (and its folder removed) by the caller. PostgreSQL refuses to run as root: as root,
// the server runs as the `postgres` user (setpriv). Skipped where PostgreSQL or the lake's DuckDB extensions are
// missing, unless CBP_REQUIRE_LAKE=1 (CI), where that is a failure.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import net from 'node:net';
import path from 'node:path';
import { DEFAULT_LAKE_EXTENSIONS_DIR } from '../../store/lake.ts';
import { tempDir } from './tmp.ts';

/** The folder of initdb and postgres: on PATH, or Debian's /usr/lib/postgresql/<v>/bin. */
function pgBin(): string | undefined {
  // The folder the binaries really live in (a link on PATH points there): createdb and pg_isready sit beside them.
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'))) return path.dirname(realpathSync(path.join(dir, 'initdb')));
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin');
  return undefined;
}

const BIN = pgBin();
const EXTENSIONS = ['ducklake', 'postgres_scanner'];
const extensionsInstalled = (() => {
  const v = path.join(DEFAULT_LAKE_EXTENSIONS_DIR, 'v1.5.5');
  if (!existsSync(v)) return false;
  return readdirSync(v).some((p) => EXTENSIONS.every((e) => existsSync(path.join(v, p, `${e}.duckdb_extension`))));
})();
export const lakeAvailable = BIN !== undefined && extensionsInstalled;
export const lakeRequired = process.env.CBP_REQUIRE_LAKE === '1';
export const skipLake = !lakeAvailable && !lakeRequired;

export function lakeTitle(what: string): string {
  if (lakeAvailable) return `${what} (PostgreSQL of ${BIN})`;
  const why = BIN === undefined ? 'no PostgreSQL (initdb, postgres)' : 'no lake extensions: npm run lake:install';
  return lakeRequired ? `${what} (CBP_REQUIRE_LAKE=1, and ${why})` : `${what} (skipped: ${why})`;
}

export interface Postgres {
  port: number;
  /** The libpq string of a database on this server. */
  dsn(db: string): string;
  createDb(name: string): void;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const asRoot = process.getuid?.() === 0;
/** A command of PostgreSQL's as the user it runs as (postgres, when we are root). */
function pgCommand(cmd: string, args: string[]): [string, string[]] {
  // setpriv execs the command itself: a signal to the child reaches PostgreSQL (runuser would stand between).
  return asRoot ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', path.join(BIN!, cmd), ...args]] : [path.join(BIN!, cmd), args];
}

export async function startPostgres(): Promise<Postgres> {
  if (!BIN) throw new Error('CBP_REQUIRE_LAKE=1 but there is no PostgreSQL here (initdb, postgres): apt-get install postgresql');
  if (!extensionsInstalled) throw new Error(`CBP_REQUIRE_LAKE=1 but the lake's DuckDB extensions are not in ${DEFAULT_LAKE_EXTENSIONS_DIR}: npm run lake:install`);
  const root = tempDir('cbp-pg-');
  chmodSync(root, 0o755);
  const data = path.join(root, 'data');
  mkdirSync(data);
  if (asRoot) {
    // The postgres user must reach its folder: the test run's temp folder (private to us) lets it pass through.
    for (let d = path.dirname(root); d.startsWith(os.tmpdir()) && d !== path.dirname(d); d = path.dirname(d)) chmodSync(d, statSync(d).mode | 0o711);
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
    chownSync(data, uid, gid);
  }
  const [initdb, initArgs] = pgCommand('initdb', ['-D', data, '-U', 'cbp', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  execFileSync(initdb, initArgs, { stdio: 'ignore' });
  const port = await freePort();
  const [pg, pgArgs] = pgCommand('postgres', ['-D', data, '-p', String(port), '-k', root, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200']);
  const child: ChildProcess = spawn(pg, pgArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr?.on('data', (d) => { log = (log + String(d)).slice(-4000); });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const until = Date.now() + 30_000;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const sock = net.connect(port, '127.0.0.1', () => { sock.destroy(); r(true); });
      sock.once('error', () => r(false));
    });
    if (ok) {
      try {
        execFileSync(path.join(BIN, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
        break;
      } catch { /* starting up */ }
    }
    if (child.exitCode !== null || Date.now() > until) throw new Error(`PostgreSQL did not start: ${log}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port,
    dsn: (db) => `dbname=${db} host=127.0.0.1 port=${port} user=cbp`,
    createDb(name) {
      execFileSync(path.join(BIN, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'cbp', name], { stdio: 'ignore' });
    },
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT'); // fast shutdown
        await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
    },
  };
}
