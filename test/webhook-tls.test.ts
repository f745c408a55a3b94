import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { Agent, request } from 'undici';
import { startReceiver, type RunningReceiver } from '../webhook/start.ts';
import { tempDir } from './helpers/tmp.ts';

const tmp = () => tempDir();
const PASS = 'p4ssword-for-tls-tests';
const hasOpenssl = spawnSync('openssl', ['version']).status === 0;
if (!hasOpenssl) console.warn('webhook-tls: openssl is not installed here, so the self-signed certificate test is skipped');

describe('webhook receiver over https', () => {
  let rx: RunningReceiver | undefined;
  afterAll(async () => {
    await rx?.close();
  });

  it.skipIf(!hasOpenssl)('serves https itself when given a certificate and key (the service pushes to https only)', async () => {
    const dir = tmp();
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], {
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    rx = await startReceiver({
      username: 'u',
      password: PASS,
      journalDir: path.join(dir, 'journal'),
      https: { cert: fs.readFileSync(cert), key: fs.readFileSync(key) },
    });
    expect(rx.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/events$/);
    const dispatcher = new Agent({ connect: { ca: fs.readFileSync(cert), rejectUnauthorized: true} });
    const res = await request(rx.url, {
      method: 'POST',
      dispatcher,
      headers: { authorization: `Basic ${Buffer.from(`u:${PASS}`).toString('base64')}`, 'content-type': 'application/json' },
      body: JSON.stringify({ event_guid: 'ev_tls', event_type: 'chargeback.new' }),
    });
    expect(res.statusCode).toBe(200);
    expect(await res.body.json()).toEqual({ received: true, event_guid: 'ev_tls' });
    await dispatcher.close();
  });
});
