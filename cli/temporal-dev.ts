// A Temporal dev server (`temporal server start-dev`: the whole server in one process, SQLite and the web UI)
// as a child process of cbp: started on free loopback ports, waited for until its frontend answers, and
// stopped (SIGTERM, then SIGKILL) by whoever started it. `cbp demo --temporal` and the tests use it.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { TemporalUnavailableError } from './temporal.ts';

export interface DevServerOptions {
  /** The `temporal` binary (findTemporalCli()). */
  cli: string;
  /** SQLite file of the server's state; default in memory (lost when the server stops). */
  dbFile?: string;
  /** How long the server gets to answer. Default 90 s (a first start on a busy machine takes a while). */
  readyTimeoutMs?: number;
  /** Without the web UI (tests). Default: with it. */
  headless?: boolean;
  /** Aborting it while the server starts stops the server, and the start fails. */
  signal?: AbortSignal;
}

export interface DevServer {
  /** host:port of the frontend (gRPC). */
  address: string;
  namespace: 'default';
  /** http://127.0.0.1:<port> of the web UI, unless headless. */
  uiUrl?: string;
  pid: number;
  /** Stops the server: SIGTERM, then SIGKILL after `graceMs` (default 10 s). Resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export { freePort } from '../lib/free-port.ts';
import { freePort } from '../lib/free-port.ts';

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let pdeathsig: boolean | undefined;
/**
 * Whether `setpriv --pdeathsig` (util-linux, Linux) works here: through it the kernel sends the server
 * SIGTERM when this process dies, even by SIGKILL, which no handler of ours sees.
 */
function canDieWithParent(): boolean {
  if (pdeathsig === undefined) {
    pdeathsig = process.platform === 'linux' && spawnSync('setpriv', ['--pdeathsig', 'TERM', '--', 'true'], { stdio: 'ignore' }).status === 0;
  }
  return pdeathsig;
}

/** Starts `temporal server start-dev` on free ports of 127.0.0.1 and resolves once its frontend answers. */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const port = await freePort();
  let uiPort = await freePort();
  while (uiPort === port) uiPort = await freePort();
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'warn'];
  if (opts.headless) args.push('--headless');
  else args.push('--ui-port', String(uiPort), '--ui-disable-news-fetch');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  // Its own process group is not wanted: Ctrl-C in a terminal reaches it with cbp, and cbp stops it anyway.
  // setpriv execs the server (same pid) with its parent-death signal set.
  const child = canDieWithParent()
    ? spawn('setpriv', ['--pdeathsig', 'TERM', '--', opts.cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(opts.cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString('utf8')).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  let spawnError: Error | undefined;
  child.once('error', (e) => (spawnError = e));
  // However this process ends (process.exit on a second Ctrl-C, an uncaught error), the server goes with it.
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const done = exited(child).then(() => {
    process.off('exit', killOnExit);
  });
  const address = `127.0.0.1:${port}`;

  const stop = async (graceMs = 10_000) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await done;
    clearTimeout(timer);
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 90_000);
  let lastError: unknown;
  for (;;) {
    if (opts.signal?.aborted) {
      await stop(2000);
      throw new TemporalUnavailableError('the Temporal dev server was stopped while it started (interrupted)');
    }
    if (spawnError || child.exitCode !== null || child.signalCode !== null) {
      await stop(1000);
      const why = spawnError ? spawnError.message : `it exited with ${child.exitCode ?? child.signalCode}`;
      throw new TemporalUnavailableError(`the Temporal dev server (${opts.cli} ${args.join(' ')}) did not start: ${why}${output.trim() ? `\n${output.trim()}` : ''}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2000 });
      try {
        // The frontend answers before the default namespace exists: wait for the namespace too.
        await connection.workflowService.describeNamespace({ namespace: 'default' });
      } finally {
        await connection.close().catch(() => undefined);
      }
      break;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      await stop(2000);
      throw new TemporalUnavailableError(
        `the Temporal dev server at ${address} did not answer within ${Math.round((opts.readyTimeoutMs ?? 90_000) / 1000)} s (${(lastError as Error)?.message?.split('\n')[0] ?? 'no answer'})${output.trim() ? `\n${output.trim()}` : ''}`,
        undefined,
        lastError,
      );
    }
    await sleep(250);
  }
  return {
    address,
    namespace: 'default',
    ...(opts.headless ? {} : { uiUrl: `http://127.0.0.1:${uiPort}` }),
    pid: child.pid!,
    stop,
  };
}
