// A PostgreSQL server of cbp's own for a lake on one machine: initdb into a folder, `postgres` on a free loopback port,
// trust authentication for local connections only. Used by the lake suites, the lake benchmark and `cbp demo --lake`.
// PostgreSQL refuses to run as root: as root, it runs as the `postgres` user (setpriv execs it, so signals reach it).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, realpathSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { within } from './within.ts';

/** How long a stop waits for the server to exit before it is killed. */
const STOP_WAIT_MS = 10_000;

/** The folder of initdb and postgres: on PATH (where the links point), or Debian's /usr/lib/postgresql/<v>/bin. */
export function postgresBin(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'))) return path.dirname(realpathSync(path.join(dir, 'initdb')));
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (existsSync(path.join(root, v, 'bin', 'initdb'))) return path.join(root, v, 'bin');
  return undefined;
}

export interface LocalPostgres {
  port: number;
  /** The libpq string of a database on this server. */
  dsn(db: string): string;
  createDb(name: string): void;
  stop(): Promise<void>;
  /** Stops it as `pg_ctl stop -m immediate` does: no checkpoint, as after a crash. */
  crash(): Promise<void>;
  /** Starts it again, on the same port and files, after stop() or crash(). */
  start(): Promise<void>;
  /** Freezes the server and its sessions (SIGSTOP), or lets them go on (SIGCONT): a host that stops answering. */
  freeze(frozen: boolean): void;
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

/** Starts a server whose files go under `root` (made here; the caller removes it after stop()). */
export async function startLocalPostgres(root: string): Promise<LocalPostgres> {
  const bin = postgresBin();
  if (!bin) throw new Error('no PostgreSQL here (initdb, postgres): apt-get install postgresql');
  const asRoot = process.getuid?.() === 0;
  const command = (cmd: string, args: string[]): [string, string[]] =>
    asRoot ? ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', '--', path.join(bin, cmd), ...args]] : [path.join(bin, cmd), args];
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o755);
  const data = path.join(root, 'data');
  mkdirSync(data);
  if (asRoot) {
    // The postgres user must reach its folder: the private temp folders above it let it pass through.
    for (let d = path.dirname(root); d.startsWith(os.tmpdir()) && d !== path.dirname(d); d = path.dirname(d)) chmodSync(d, statSync(d).mode | 0o711);
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
    chownSync(data, uid, gid);
  }
  const [initdb, initArgs] = command('initdb', ['-D', data, '-U', 'cbp', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  execFileSync(initdb, initArgs, { stdio: 'ignore' });
  const port = await freePort();
  let child: ChildProcess;
  let exited: Promise<void>;
  let log = '';
  const stop = async (signal: NodeJS.Signals = 'SIGINT') => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal); // SIGINT: PostgreSQL's fast shutdown; SIGQUIT: immediate (as a crash, recovered at the next start)
      await within(exited, STOP_WAIT_MS, () => undefined);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  };
  const launch = async () => {
    const [pg, pgArgs] = command('postgres', ['-D', data, '-p', String(port), '-k', root, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'max_connections=200']);
    child = spawn(pg, pgArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d) => { log = (log + String(d)).slice(-4000); });
    exited = new Promise<void>((r) => child.once('exit', () => r()));
    const until = Date.now() + 30_000;
    for (;;) {
      try {
        execFileSync(path.join(bin, 'pg_isready'), ['-h', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
        break;
      } catch { /* starting up */ }
      if (child.exitCode !== null || Date.now() > until) {
        await stop();
        throw new Error(`PostgreSQL did not start: ${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await launch();
  return {
    port,
    dsn: (db) => `dbname=${db} host=127.0.0.1 port=${port} user=cbp`,
    createDb(name) {
      execFileSync(path.join(bin, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'cbp', name], { stdio: 'ignore' });
    },
    stop: () => stop(),
    crash: () => stop('SIGQUIT'),
    start: launch,
    freeze(frozen) {
      let sessions: number[] = [];
      try {
        sessions = execFileSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
      } catch { /* none */ }
      for (const pid of [child.pid!, ...sessions]) process.kill(pid, frozen ? 'SIGSTOP' : 'SIGCONT');
    },
  };
}
