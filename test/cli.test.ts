// The cbp command through its real boundary: a child process, its exit code, stdout and stderr.
import { describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { REPORT_KINDS as CONTRACT_KINDS } from '../contract/reporting.ts';
import { REPORT_KINDS, parseDay, parseInstant } from '../cli/options.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/cbp.js ...args` from the repo root with only the given cbp settings in its environment. */
function cbp(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(CBP_|TEMPORAL_)/.test(k)),
  ) as Record<string, string>;
  return new Promise((resolve, reject) => {
    // The kill timer only stops a hung child from hanging the suite; no assertion depends on time.
    const child = spawn(process.execPath, ['bin/cbp.js', ...args], { cwd: root, env: { ...base, ...env }, timeout: 170_000 });
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
    expect(r.stdout).toMatch(/sandbox/);
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

  it('`cbp config show --help` exits 0 without needing any setting', async () => {
    const r = await cbp(['config', 'show', '--help'], { CBP_WEBHOOK_PORT: 'eighty' });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('--json');
  });
});

/** Files `cbp` loads before any action runs: cli/index.ts and what it imports for values (not types), transitively. */
function startupImports(): Map<string, string[]> {
  const seen = new Map<string, string[]>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    const src = fs.readFileSync(file, 'utf8');
    const specs = [...src.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?\sfrom\s+'([^']+)'/gms)].map((m) => m[1]);
    seen.set(file, specs);
    for (const s of specs) if (s.startsWith('.')) visit(path.resolve(path.dirname(file), s));
  };
  visit(path.join(root, 'cli', 'index.ts'));
  return seen;
}

describe('cbp start-up', () => {
  // `cbp --version` and `--help` took ~2 s when every command imported DuckDB, fastify, undici, zod... at the
  // top. Commands now load those inside their actions; this keeps it so without timing anything.
  it('imports nothing heavy before an action runs: only commander, node built-ins, cli/ and lib/errors.ts', () => {
    const offending: string[] = [];
    for (const [file, specs] of startupImports()) {
      for (const s of specs) {
        const ok = s === 'commander' || s.startsWith('node:') || (s.startsWith('.') && (() => {
          const rel = path.relative(root, path.resolve(path.dirname(file), s)).split(path.sep).join('/');
          return rel.startsWith('cli/') || rel === 'lib/errors.ts';
        })());
        if (!ok) offending.push(`${path.relative(root, file)} imports ${s}`);
      }
    }
    expect(offending).toEqual([]);
    expect(startupImports().size).toBeGreaterThan(10); // the walk did reach the command modules
  });

  it("keeps the CLI's list of report kinds equal to the contract's", () => {
    expect([...REPORT_KINDS]).toEqual([...CONTRACT_KINDS]);
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
