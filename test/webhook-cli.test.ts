import { describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CBP = path.join(ROOT, 'bin', 'cbp.js');

function cbp(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  for (const k of Object.keys(base)) if (k.startsWith('CBP_')) delete base[k];
  return spawnSync(process.execPath, [CBP, ...args], { cwd: ROOT, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
}

describe('cbp webhook', () => {
  it('refuses to start without Basic credentials, naming both settings (exit 2)', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
    const r = cbp(['webhook', '--port', '0', '--journal', path.join(dir, 'j')], { CBP_WEBHOOK_USERNAME: 'only-user' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('CBP_WEBHOOK_USERNAME');
    expect(r.stderr).toContain('CBP_WEBHOOK_PASSWORD');
    expect(r.stderr).toContain('[CBP_ERR_CONFIG]');
    expect(fs.existsSync(path.join(dir, 'j'))).toBe(false);
  });

  it('refuses a bad --port as a usage error (exit 2)', () => {
    const r = cbp(['webhook', '--port', '70000'], { CBP_WEBHOOK_USERNAME: 'u', CBP_WEBHOOK_PASSWORD: 'p4ss' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--port 70000/);
  });

  it('never prints its Basic password, in its start line (text or --json) or its logs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
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
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
    const r = cbp(['run', 'ingest', '--journal', path.join(dir, 'j')], { CBP_DB_PATH: path.join(dir, 'cbp.duckdb') });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/no sealed journal segments/);
  });
});
