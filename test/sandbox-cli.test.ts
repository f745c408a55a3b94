import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { cbpEntry } from './helpers/cbp-cli.ts';

const root = fileURLToPath(new URL('..', import.meta.url));

function firstLine(child: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stdout!.on('data', (c: Buffer) => {
      buf += c.toString('utf8');
      const i = buf.indexOf('\n');
      if (i >= 0) resolve(buf.slice(0, i));
    });
    child.on('exit', (code) => reject(new Error(`cbp sandbox exited (${code}) before printing a line`)));
  });
}

describe('cbp sandbox command', () => {
  it('prints one JSON line with base URLs, admin and credentials, serves, and exits 0 on SIGTERM', async () => {
    const child = spawn(process.execPath, [cbpEntry(), 'sandbox', '--port', '0', '--seed', '42', '--start', '2026-01-01', '--json'], {
      cwd: root,
      env: { ...process.env, CBP_SANDBOX_COMPANY_TOKEN: 'from-env-token' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const info = JSON.parse(await firstLine(child));
      expect(Object.keys(info.baseUrls).sort()).toEqual(['auth', 'events', 'orders', 'ordersStage', 'reporting']);
      expect(info.admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/_sandbox$/);
      expect(info.credentials).toEqual({
        apiSecret: 'sandbox-api-secret',
        dataUsername: 'sandbox-user',
        dataPassword: 'sandbox-password',
        reportingKey: 'sandbox-reporting-key',
        companyToken: 'from-env-token',
      });
      expect(info.baseUrls.ordersStage).toMatch(/\/orders\/stage$/);
      // Its clock, and the call that moves it (reports hold only what happened by this clock).
      expect(info.clock).toEqual({
        now: '2026-01-01T00:00:00Z',
        realtime: false,
        move: { method: 'POST', url: `${info.admin}/clock`, body: { advance: 'P1D' }, or: { to: '<ISO 8601 UTC date-time>' } },
      });
      const r = await request(`${info.baseUrls.auth}/auth`, { method: 'POST', headers: { authorization: 'Bearer sandbox-api-secret' } });
      expect(r.statusCode).toBe(200);
      await r.body.dump();
      const clock = await request(`${info.admin}/clock`);
      expect(((await clock.body.json()) as { now: string }).now).toBe('2026-01-01T00:00:00Z');
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
  });
});
