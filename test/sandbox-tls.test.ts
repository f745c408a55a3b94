import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildSandbox } from '../sandbox/server.ts';
import { tinyWorld } from './sandbox-fixtures.ts';

function selfSigned(): { key: string; cert: string } | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, 'k.pem'), '-out', path.join(dir, 'c.pem'), '-days', '1', '-subj', '/CN=localhost'], { stdio: 'ignore' });
    return { key: fs.readFileSync(path.join(dir, 'k.pem'), 'utf8'), cert: fs.readFileSync(path.join(dir, 'c.pem'), 'utf8') };
  } catch {
    return undefined;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const tls = selfSigned();

describe('sandbox delivery over https on loopback', () => {
  it.skipIf(!tls)('vets and delivers to an https webhook on 127.0.0.1 with a self-signed certificate (skipped without openssl)', async () => {
    const seen: string[] = [];
    const server = https.createServer(tls!, (req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push(`${req.method} ${body ? JSON.parse(body).event_type : ''}`);
        res.statusCode = 200;
        res.end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const app = await buildSandbox({ world: tinyWorld() });
    try {
      const { token } = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json();
      const sub = await app.inject({
        method: 'POST',
        url: '/events/v1/subscribe',
        headers: { authorization: `Bearer ${token}` },
        payload: { email: 'ops@example.com', url, event_type: 'rdr.new', auth: { username: 'u', password: 'p' } },
      });
      expect(sub.statusCode).toBe(200);
      await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P2D' } });
      expect(seen).toEqual(['POST registration.new', 'POST rdr.new']);
    } finally {
      await app.close();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
