// The cbp command through its real boundary: a child process, its exit code, stdout and stderr.
import { afterAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseDay, parseInstant } from '../cli/options.ts';
import { HEAVY_PACKAGES, traceImports } from './helpers/import-trace.ts';
import { COMMANDS, commandsFor } from '../cli/commands/index.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-cli-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fresh working folder, with a .env holding the given text if any. */
function workdir(dotenv?: string): string {
  const d = fs.mkdtempSync(path.join(tmp, 'cwd-'));
  if (dotenv !== undefined) fs.writeFileSync(path.join(d, '.env'), dotenv);
  return d;
}
const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `cbp ...args` (test/helpers/cbp-cli.ts cbpEntry) with only the given cbp settings in its
 * environment, from an empty folder or the given working folder. closedStdout: the reader of stdout has gone before cbp writes (`cbp ... | head`).
 */
function cbp(args: string[], env: Record<string, string> = {}, opts: { cwd?: string; closedStdout?: boolean } = {}): Promise<Run> {
  const base = cleanEnv();
  return new Promise((resolve, reject) => {
    // The kill timer only stops a hung child from hanging the suite; no assertion depends on time.
    // An empty working folder by default: a developer's own .env in the repo must not change what a test sees.
    const child = spawn(process.execPath, [cbpEntry(), ...args], { cwd: opts.cwd ?? tmp, env: { ...base, ...env }, timeout: 170_000 });
    // Destroyed before the child has even loaded: its first write meets a closed pipe, every time.
    if (opts.closedStdout) child.stdout.destroy();
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

// concurrent: each test is its own process, and start-up (tsx, imports) dominates the time.
// The generous timeout is for a loaded CI machine (each run starts tsx; commands load their modules when they run).
describe.concurrent('cbp command', { timeout: 180_000 }, () => {
  it('--help exits 0 and lists the commands', async () => {
    const r = await cbp(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('Usage: cbp');
    expect(r.stdout).toMatch(/Commands:[\s\S]*\bconfig\b[\s\S]*\bdemo\b/);
  });

  it("--version prints package.json's version", async () => {
    const r = await cbp(['--version']);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(pkg.version);
  });

  it('exits 2 on an unknown command', async () => {
    const r = await cbp(['no-such-command']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown command 'no-such-command'");
  });

  it('exits 2 on an unknown option of a subcommand', async () => {
    const r = await cbp(['config', 'show', '--no-such-flag']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--no-such-flag');
  });

  it('exits 2 on a configuration error, naming the setting on stderr, and never prints a secret', async () => {
    const r = await cbp(['config', 'show'], { CBP_WEBHOOK_PORT: 'eighty', CBP_API_SECRET: 'supersecretvalue' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('CBP_WEBHOOK_PORT');
    expect(r.stderr).toContain('CBP_ERR_CONFIG');
    expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    expect(r.stdout + r.stderr).not.toContain('supersecretvalue');
  });

  // The demo itself runs end to end in test/demo.test.ts, in a temp data dir.
  it('`cbp demo --help` exits 0 and describes the demo', async () => {
    const r = await cbp(['demo', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: cbp demo \[options\]/);
    expect(r.stdout).toMatch(/end to end against an in-process sandbox/);
    for (const flag of ['--data-dir <dir>', '--start <date>', '--days <n>', '--temporal', '--lake', '--json']) expect(r.stdout).toContain(flag);
  });

  it('`cbp config show --json` prints JSON with secrets hidden', async () => {
    const r = await cbp(['config', 'show', '--json'], { CBP_API_SECRET: 'supersecretvalue', CBP_DATA_USERNAME: 'merchant-1' });
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('supersecretvalue');
    expect(r.stderr).not.toContain('supersecretvalue');
    const rows = JSON.parse(r.stdout) as Array<{ setting: string; value: unknown }>;
    const by = Object.fromEntries(rows.map((x) => [x.setting, x.value]));
    expect(by.CBP_API_SECRET).toBe('(set, hidden)');
    expect(by.CBP_DATA_USERNAME).toBe('merchant-1');
    expect(by.CBP_HTTP_TIMEOUT_MS).toBe(30000);
  });

  it('`cbp config example` prints the .env.example kept in the repo', async () => {
    const r = await cbp(['config', 'example']);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(fs.readFileSync(new URL('../.env.example', import.meta.url), 'utf8'));
  });

  it('`cbp config show` prints every path absolute, the store, snapshot, journal and landing files under CBP_DATA_DIR', async () => {
    const d = workdir();
    const r = await cbp(['config', 'show', '--json'], { CBP_DATA_DIR: 'mydata' }, { cwd: d });
    expect(r.code).toBe(0);
    const rows = JSON.parse(r.stdout) as Array<{ setting: string; value: unknown; source: string | null }>;
    const by = Object.fromEntries(rows.map((x) => [x.setting, x]));
    const data = path.join(fs.realpathSync(d), 'mydata');
    expect(by.CBP_DATA_DIR).toMatchObject({ value: data, source: 'environment' });
    expect(by.CBP_DB_PATH.value).toBe(path.join(data, 'cbp.duckdb'));
    expect(by.CBP_SNAPSHOT_PATH.value).toBe(path.join(data, 'published', 'cbp.duckdb'));
    expect(by.CBP_JOURNAL_DIR.value).toBe(path.join(data, 'journal'));
    expect(by['(landing files)'].value).toBe(path.join(data, 'landing'));
  });

  it('`cbp config show` masks passwords and tokens inside URLs but shows their hosts', async () => {
    const env = {
      CBP_SMTP_URL: 'smtps://mailer:supersecretpw@mail.example.com:465',
      CBP_SLACK_WEBHOOK_URL: 'https://hooks.slack.com/services/T0AAA1111/B0BBB2222/XsupersecretToken9',
      CBP_REPORTING_BASE_URL: 'https://rep.example.com/?key=supersecretkey',
      // A Zapier-style hook: its token is in the path, as a Slack hook's.
      CBP_ALERT_WEBHOOK_URL: 'https://hooks.zapier.com/hooks/catch/123456/Tok3nSecretValue/',
    };
    const r = await cbp(['config', 'show', '--json'], env);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).not.toMatch(/supersecret|T0AAA1111|B0BBB2222|Tok3nSecretValue|123456/);
    const by = Object.fromEntries((JSON.parse(r.stdout) as Array<{ setting: string; value: unknown }>).map((x) => [x.setting, x.value]));
    expect(by.CBP_SMTP_URL).toBe('smtps://mailer:****@mail.example.com:465');
    expect(by.CBP_SLACK_WEBHOOK_URL).toBe('https://hooks.slack.com/services/****/****/****');
    expect(by.CBP_REPORTING_BASE_URL).toBe('https://rep.example.com/?key=****');
    expect(by.CBP_ALERT_WEBHOOK_URL).toBe('https://hooks.zapier.com/hooks/catch/****/****/');
    const human = await cbp(['config', 'show'], env);
    expect(human.stdout).toMatch(/^CBP_SMTP_URL +smtps:\/\/mailer:\*\*\*\*@mail\.example\.com:465 +\(environment\)$/m);
    expect(human.stdout).not.toMatch(/supersecret|Tok3nSecretValue/);
  });

  it('reads a .env in the working folder, under the environment, and says where each value came from', async () => {
    const d = workdir('# cbp\nCBP_DATA_DIR=from-dotenv\nCBP_HTTP_RETRIES=2\nCBP_LOG_LEVEL=warn\n');
    const r = await cbp(['config', 'show', '--json'], { CBP_LOG_LEVEL: 'error' }, { cwd: d });
    expect(r.code).toBe(0);
    const by = Object.fromEntries((JSON.parse(r.stdout) as Array<{ setting: string; value: unknown; source: string }>).map((x) => [x.setting, x]));
    expect(by.CBP_DATA_DIR).toMatchObject({ value: path.join(fs.realpathSync(d), 'from-dotenv'), source: '.env' });
    expect(by.CBP_HTTP_RETRIES).toMatchObject({ value: 2, source: '.env' });
    expect(by.CBP_LOG_LEVEL).toMatchObject({ value: 'error', source: 'environment' });
  });

  it('refuses a malformed .env with exit 2, naming its line and never its text', async () => {
    const r = await cbp(['config', 'show'], {}, { cwd: workdir('CBP_HTTP_RETRIES=2\nCBP_API_SECRET supersecretvalue\n') });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('.env line 2 is not KEY=value');
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stdout + r.stderr).not.toContain('supersecretvalue');
  });

  it('ends quietly with exit 0 when the reader of its output has gone (`cbp ... | head`)', async () => {
    for (const args of [['config', 'example'], ['config', 'show', '--json'], ['--help']]) {
      const r = await cbp(args, {}, { closedStdout: true });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
    }
  });

  it('still reports a failure by its exit code when stderr has gone', async () => {
    const r = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(process.execPath, [cbpEntry(), 'no-such-command'], { cwd: root, timeout: 170_000 });
      child.stderr.destroy();
      child.on('error', reject);
      child.on('close', resolve);
    });
    expect(r).toBe(2);
  });

  it('shows a report file in an error as it was typed, not joined to the working folder', async () => {
    const d = workdir();
    const bad = path.join(d, 'not-chargebacks.csv');
    fs.writeFileSync(bad, 'foo,bar\n1,2\n');
    const abs = await cbp(['load', 'chargebacks', bad], {}, { cwd: d });
    expect(abs.code).toBe(1);
    expect(abs.stderr).toContain(`cbp: ${bad} is not a chargebacks CSV report`);
    const rel = await cbp(['load', 'chargebacks', 'not-chargebacks.csv'], {}, { cwd: d });
    expect(rel.stderr).toContain('cbp: not-chargebacks.csv is not a chargebacks CSV report');
  });

  it('`cbp config show --help` exits 0 without needing any setting', async () => {
    const r = await cbp(['config', 'show', '--help'], { CBP_WEBHOOK_PORT: 'eighty' });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--json');
  });
});

// The settings a run needs, every one valid except where a test spoils one. Nothing listens on 127.0.0.1:1: a
// run that got as far as a request would fail there with exit 1, not 2.
const RUN_ENV: Record<string, string> = {
  CBP_AUTH_BASE_URL: 'http://127.0.0.1:1/auth/v1',
  CBP_EVENTS_BASE_URL: 'http://127.0.0.1:1/events/v1',
  CBP_DATA_BASE_URL: 'http://127.0.0.1:1/data/stage',
  CBP_REPORTING_BASE_URL: 'http://127.0.0.1:1/reporting',
  CBP_API_SECRET: 'api-secret-1',
  CBP_DATA_USERNAME: 'merchant',
  CBP_DATA_PASSWORD: 'data-password-1',
  CBP_REPORTING_KEY: 'reporting-key-1',
  CBP_COMPANY_TOKEN: 'company-token-1',
  CBP_WEBHOOK_USERNAME: 'hook',
  CBP_WEBHOOK_PASSWORD: 'hook-password-1',
  CBP_WEBHOOK_PUBLIC_URL: 'https://hooks.merchant.example/events',
  CBP_SUBSCRIPTION_EMAIL: 'ops@merchant.example',
  CBP_LOG_LEVEL: 'error',
};

describe.concurrent('settings checked before any work', { timeout: 180_000 }, () => {
  const cases: Array<{ name: string; args: string[]; spoil: Record<string, string>; named: string }> = [
    { name: 'backfill, plain http events URL', args: ['run', 'backfill', '--from', '2026-01-01', '--to', '2026-01-14'], spoil: { CBP_EVENTS_BASE_URL: 'http://example.com/v1' }, named: 'CBP_EVENTS_BASE_URL' },
    { name: 'nightly, plain http Slack webhook', args: ['run', 'nightly', '--as-of', '2026-01-14'], spoil: { CBP_SLACK_WEBHOOK_URL: 'http://hooks.slack.example/services/T0/B0/XX' }, named: 'CBP_SLACK_WEBHOOK_URL' },
    { name: 'orders, plain http order data URL', args: ['run', 'orders', '--source', 'orders.ndjson'], spoil: { CBP_DATA_BASE_URL: 'http://data.example.com/v1' }, named: 'CBP_DATA_BASE_URL' },
    { name: 'subscriptions, SMTP without TLS', args: ['run', 'subscriptions'], spoil: { CBP_SMTP_URL: 'smtp://mail.example.com:25' }, named: 'CBP_SMTP_URL' },
  ];
  for (const c of cases) {
    it(`refuses with exit 2, naming the setting, before fetching or writing anything: ${c.name}`, async () => {
      const d = workdir();
      fs.writeFileSync(path.join(d, 'orders.ndjson'), '');
      const r = await cbp(c.args, { ...RUN_ENV, ...c.spoil }, { cwd: d });
      expect(r.stderr).toContain(c.named);
      expect(r.stderr).toContain('CBP_ERR_CONFIG');
      expect(r.code).toBe(2);
      expect(fs.readdirSync(d)).toEqual(['orders.ndjson']); // no data folder: no store, no landing file
    });
  }
});

describe('cbp start-up', { timeout: 180_000 }, () => {
  // `cbp --version` and `--help` were slow when every command imported DuckDB, fastify, undici... at the top.
  // Commands load those in their actions (cli/commands/index.ts); bench/startup.bench.ts measures the start.
  it(`\`cbp --version\` and \`--help\` load none of ${HEAVY_PACKAGES.join(', ')}`, async () => {
    for (const args of [['--version'], ['--help'], ['run', 'nightly', '--help'], ['schedule', 'apply', '--help']]) {
      const r = await traceImports(path.join(root, 'bin', 'cbp-dev.js'), args, { cwd: tmp });
      expect({ args, code: r.code }).toEqual({ args, code: 0 });
      expect(r.packages).toContain('commander'); // the trace did see the CLI's imports
      expect({ args, heavy: r.packages.filter((p) => (HEAVY_PACKAGES as readonly string[]).includes(p)) }).toEqual({ args, heavy: [] });
    }
  });

  it('`cbp --version` loads commander and nothing else; a command loads its own module, not the other commands\'', async () => {
    const v = await traceImports(path.join(root, 'bin', 'cbp-dev.js'), ['--version'], { cwd: tmp });
    expect({ code: v.code, out: v.stdout.trim() }).toEqual({ code: 0, out: pkg.version });
    expect(v.packages.filter((p) => p !== 'tsx' && p !== 'esbuild' && p !== 'get-tsconfig' && p !== 'resolve-pkg-maps')).toEqual(['commander']);
    expect(v.files.filter((f) => f.startsWith('cli/commands/') && f !== 'cli/commands/index.ts')).toEqual([]);
    const sql = await traceImports(path.join(root, 'bin', 'cbp-dev.js'), ['--config', 'none.json', 'sql', '--help'], { cwd: tmp });
    expect(sql.code).toBe(0);
    expect(sql.files).toContain('cli/commands/sql.ts');
    expect(sql.files.filter((f) => /^cli\/commands\/(report|demo|ratios|run|worker)\.ts$/.test(f))).toEqual([]);
    expect(commandsFor(['--version'])).toEqual([]);
    expect(commandsFor(['-c', 'x.yaml', 'status', '--json'])).toEqual(['status']);
    expect(commandsFor(['--help'])).toEqual(Object.keys(COMMANDS));
    expect(commandsFor(['sqll'])).toEqual(Object.keys(COMMANDS));
    expect(commandsFor([])).toEqual(Object.keys(COMMANDS));
  });

  it('sees a heavy package a command does load (the check above means something)', async () => {
    const r = await traceImports(path.join(root, 'bin', 'cbp-dev.js'), ['db', 'migrate', '--json'], { cwd: workdir(), env: { CBP_DATA_DIR: 'data', CBP_LOG_LEVEL: 'error' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.packages).toContain('@duckdb/node-api');
  });

  it('reads dates strictly: real calendar days only, UTC when no offset is given', () => {
    expect(parseDay('--from', ' 2024-02-29 ')).toBe('2024-02-29');
    for (const bad of ['2026-02-29', '2026-02-30', '2026-13-01', '2026-1-01', '2026-01-01x', '01/01/2026']) {
      expect(() => parseDay('--from', bad), bad).toThrow(/--from must be a date YYYY-MM-DD/);
    }
    expect(parseInstant('--as-of', '2026-02-01')).toBe('2026-02-01T00:00:00.000Z');
    expect(parseInstant('--as-of', '2026-02-01T10:30')).toBe('2026-02-01T10:30:00.000Z');
    expect(parseInstant('--as-of', '2026-02-01T10:30:00+02:00')).toBe('2026-02-01T08:30:00.000Z');
    for (const bad of ['yesterday', '2026-02-30', '2026-02-30T00:00:00Z', 'Feb 1 2026', '2026-02-01T25:00:00Z']) {
      expect(() => parseInstant('--as-of', bad), bad).toThrow(/--as-of must be an ISO 8601 date or date-time in UTC/);
    }
  });
});
