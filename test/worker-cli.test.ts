// `cbp worker` as a user runs it, against a real Temporal dev server: it says which server, namespace and task
// queue it serves, and SIGTERM stops it cleanly (exit 0, "stopped"). Skipped, with the reason in its title, on
// a machine without a `temporal` CLI unless CBP_REQUIRE_TEMPORAL=1 (then a missing server fails).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOW_TO_GET_TEMPORAL, findTemporalCli } from '../lib/temporal-cli.ts';
import { startDevServer, type DevServer } from '../cli/temporal-dev.ts';
import { cbp, rmrf, tempDir } from './activities-fixtures.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const cli = findTemporalCli();
const required = process.env.CBP_REQUIRE_TEMPORAL === '1';
const title = cli
  ? `cbp worker on a real Temporal dev server (${cli})`
  : required
    ? 'cbp worker on a real Temporal dev server (CBP_REQUIRE_TEMPORAL=1, and no temporal CLI was found)'
    : 'cbp worker on a real Temporal dev server (skipped: no temporal CLI on PATH or in .tools/; npm run temporal:install)';

const dir = tempDir();
afterAll(() => rmrf(dir));

describe('cbp worker options', () => {
  it('refuses a --grace that is not a duration, with exit 2', async () => {
    const r = await cbp(['worker', '--grace', 'soon']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--grace must be a duration such as 30s/);
  });
});

describe.skipIf(!cli && !required)(title, { timeout: 180_000 }, () => {
  let server: DevServer | undefined;

  beforeAll(async () => {
    if (!cli) throw new Error(`CBP_REQUIRE_TEMPORAL=1 but there is no temporal CLI. ${HOW_TO_GET_TEMPORAL}`);
    server = await startDevServer({ cli, headless: true });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('prints the server, namespace and task queue it serves, and exits 0 on SIGTERM', async () => {
    const base = cleanEnv();
    const env = { ...base, TEMPORAL_ADDRESS: server!.address, TEMPORAL_TASK_QUEUE: 'cbp-worker-cli-test', CBP_DATA_DIR: path.join(dir, 'data'), CBP_WORKER_METRICS_ADDR: '127.0.0.1:0' };
    // The kill timer only stops a hung child from hanging the suite; no assertion depends on time.
    const child = spawn(process.execPath, [cbpEntry(), 'worker', '--grace', '5s'], { cwd: dir, env, timeout: 170_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    const banner = new Promise<void>((resolve) => {
      child.stderr.on('data', (d) => {
        stderr += d;
        if (/cbp worker: serving/.test(stderr)) resolve();
      });
    });
    const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
    await Promise.race([banner, ended]);
    expect(stderr).toMatch(new RegExp(`cbp worker: serving task queue cbp-worker-cli-test in namespace default at ${server!.address.replace(/\./g, '\\.')} .*running activities get 5 s`));
    child.kill('SIGTERM');
    const end = await ended;
    // The pino log line says the same, as data (read once the process has ended: stdout and stderr are two pipes).
    expect(stdout + stderr).toMatch(/"address":"127\.0\.0\.1:\d+","namespace":"default","taskQueue":"cbp-worker-cli-test"/);
    expect({ end, stderr: stderr.slice(-2000) }).toMatchObject({ end: { code: 0, signal: null } });
    expect(stderr).toMatch(/cbp worker: stopped/);
    expect(stdout + stderr).toMatch(/"msg":"cbp worker stopped"/);
    // Gone: signal 0 to its pid fails.
    expect(() => process.kill(child.pid!, 0)).toThrow();
  });
});
