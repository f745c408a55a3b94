import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry } from './helpers/cbp-cli.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CBP = cbpEntry();

function cbp(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('CBP_')) delete base[k];
  return spawnSync(process.execPath, [CBP, ...args], { cwd: ROOT, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
}

describe('cbp webhook', () => {
  it('refuses to start without Basic credentials, naming both settings (exit 2)', () => {
    const dir = tempDir();
    const r = cbp(['webhook', '--port', '0', '--journal', path.join(dir, 'j')], { CBP_WEBHOOK_USERNAME: 'only-user' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('CBP_WEBHOOK_USERNAME');
    expect(r.stderr).toContain('CBP_WEBHOOK_PASSWORD');
    expect(r.stderr).toContain('[CBP_ERR_CONFIG]');
    expect(fs.existsSync(path.join(dir, 'j'))).toBe(false);
  });

  it.each([
    ['shorter than 16 characters', 'svc', 'p4ss-w0rd-15chr', /too short \(15 characters/],
    ['equal to the username', 'svc-hook-user-name', 'svc-hook-user-name', /same as CBP_WEBHOOK_USERNAME/],
  ])('refuses a Basic password %s, saying how to make one (exit 2), without printing it', (_name, user, password, why) => {
    const dir = tempDir();
    const r = cbp(['webhook', '--port', '0', '--journal', path.join(dir, 'j')], { CBP_WEBHOOK_USERNAME: user, CBP_WEBHOOK_PASSWORD: password });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(why);
    expect(r.stderr).toContain('openssl rand -base64 24');
    expect(r.stderr).toContain('[CBP_ERR_CONFIG]');
    expect(r.stdout + r.stderr.replace(/CBP_WEBHOOK_USERNAME/g, '')).not.toContain(password);
    expect(fs.existsSync(path.join(dir, 'j'))).toBe(false);
  });

  it('refuses plain http on an address other than loopback without TLS or --behind-tls-proxy (exit 2)', () => {
    const dir = tempDir();
    const r = cbp(['webhook', '--host', '0.0.0.0', '--port', '0', '--journal', path.join(dir, 'j')], {
      CBP_WEBHOOK_USERNAME: 'svc',
      CBP_WEBHOOK_PASSWORD: 'a-good-long-hook-password',
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('0.0.0.0');
    expect(r.stderr).toContain('CBP_WEBHOOK_TLS_CERT');
    expect(r.stderr).toContain('--behind-tls-proxy');
    expect(fs.existsSync(path.join(dir, 'j'))).toBe(false);
  });

  it('refuses a bad --port as a usage error (exit 2)', () => {
    const r = cbp(['webhook', '--port', '70000'], { CBP_WEBHOOK_USERNAME: 'u', CBP_WEBHOOK_PASSWORD: 'p4ss' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--port 70000/);
  });

  it('never prints its Basic password, in its start line (text or --json) or its logs', async () => {
    const dir = tempDir();
    const password = 'webhook-pass-9f3k2';
    for (const json of [false, true]) {
      const base = { ...process.env };
      for (const k of Object.keys(base)) if (k.startsWith('CBP_')) delete base[k];
      const child = spawn(process.execPath, [CBP, 'webhook', '--port', '0', '--journal', path.join(dir, `j${json}`), ...(json ? ['--json'] : [])], {
        cwd: ROOT,
        env: { ...base, CBP_WEBHOOK_USERNAME: 'svc', CBP_WEBHOOK_PASSWORD: password, CBP_LOG_LEVEL: 'debug' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      await new Promise<void>((resolve, reject) => {
        child.stdout!.on('data', (c: Buffer) => {
          stdout += c.toString();
          if (stdout.includes('\n')) resolve();
        });
        child.on('exit', (code) => reject(new Error(`cbp webhook exited (${code}) before its start line: ${stderr}`)));
      });
      child.kill('SIGTERM');
      expect(await exited, stderr).toBe(0);
      expect(stdout).toMatch(json ? /^\{"url":"http:\/\/127\.0\.0\.1:\d+\/events"/ : /receiving events at http:\/\/127\.0\.0\.1:\d+\/events/);
      expect(stdout + stderr).not.toContain(password);
    }
  }, 60_000);

  it('reports that nothing is sealed yet when run ingest finds an empty journal', () => {
    const dir = tempDir();
    const r = cbp(['run', 'ingest', '--journal', path.join(dir, 'j')], { CBP_DB_PATH: path.join(dir, 'cbp.duckdb') });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/no sealed journal segments/);
  });
});
