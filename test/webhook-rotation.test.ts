// Rotating the receiver's password without refusing a push: CBP_WEBHOOK_PREVIOUS_PASSWORD is accepted beside the new
// one until removed, counted (cbp_webhook_previous_password_total) and logged once a minute; it must be as strong.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { buildReceiver } from '../webhook/server.ts';
import { openJournal } from '../webhook/journal.ts';
import { createReceiverMetrics } from '../webhook/metrics.ts';
import { ConfigError } from '../lib/errors.ts';
import { loadConfig, secretValues } from '../lib/config.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry } from './helpers/cbp-cli.ts';

const USER = 'cbp-hook';
const NEW = 'the-new-password-0123456789';
const OLD = 'the-old-password-9876543210';
const auth = (p: string, u = USER) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;
const event = (guid: string) => JSON.stringify({ event_guid: guid, event_type: 'chargeback.new' });

describe('webhook password rotation', () => {
  it('accepts the previous password beside the new one, counts and logs it (never the password), refuses any other', async () => {
    const dir = tempDir();
    const journal = openJournal({ dir, checkIntervalMs: 0 });
    const metrics = createReceiverMetrics({ journalDir: dir, minFreeBytes: 0 });
    let logged = '';
    const logger = pino({ level: 'info' }, new Writable({ write(c, _e, cb) { logged += String(c); cb(); } }));
    const app = buildReceiver({ username: USER, password: NEW, previousPassword: OLD, sink: journal, metrics, logger });
    const push = (authorization: string, guid: string) =>
      app.inject({ method: 'POST', url: '/events', headers: { authorization, 'content-type': 'application/json' }, payload: event(guid) });
    try {
      expect((await push(auth(NEW), 'g1')).statusCode).toBe(200);
      expect((await push(auth(OLD), 'g2')).statusCode).toBe(200);
      expect((await push(auth(OLD), 'g3')).statusCode).toBe(200);
      expect((await push(auth('some-other-password-42'), 'g4')).statusCode).toBe(401);
      // The old password with another username is no credential either.
      expect((await push(auth(OLD, 'someone-else'), 'g5')).statusCode).toBe(401);
      // Let in but not stored (no JSON): not counted as accepted.
      const notJson = await app.inject({ method: 'POST', url: '/events', headers: { authorization: auth(OLD), 'content-type': 'text/plain' }, payload: 'x' });
      expect(notJson.statusCode).toBe(415);
      const text = await metrics.registry.metrics();
      expect(text).toMatch(/^cbp_webhook_previous_password_total 2$/m);
      expect(text).toMatch(/^cbp_webhook_auth_refused_total 2$/m);
      // Logged once for the two (once a minute), naming what to run; no password in the log.
      expect(logged.match(/CBP_WEBHOOK_PREVIOUS_PASSWORD/g)).toHaveLength(1);
      expect(logged).toContain('cbp run subscriptions --force-auth');
      expect(logged).not.toContain(OLD);
      expect(logged).not.toContain(NEW);
    } finally {
      await app.close();
      await journal.close();
    }
  });

  it('without a previous password, the old one is refused', async () => {
    const dir = tempDir();
    const journal = openJournal({ dir, checkIntervalMs: 0 });
    const app = buildReceiver({ username: USER, password: NEW, sink: journal });
    try {
      const res = await app.inject({ method: 'POST', url: '/events', headers: { authorization: auth(OLD), 'content-type': 'application/json' }, payload: event('g1') });
      expect(res.statusCode).toBe(401);
    } finally {
      await app.close();
      await journal.close();
    }
  });

  it('refuses a short previous password at start, and treats it as a secret', () => {
    const dir = tempDir();
    const journal = openJournal({ dir, checkIntervalMs: 0 });
    try {
      expect(() => buildReceiver({ username: USER, password: NEW, previousPassword: 'short-one', sink: journal })).toThrow(ConfigError);
      expect(() => buildReceiver({ username: USER, password: NEW, previousPassword: 'short-one', sink: journal })).toThrow(/CBP_WEBHOOK_PREVIOUS_PASSWORD is too short \(9 characters/);
    } finally {
      void journal.close();
    }
    const cfg = loadConfig({ env: { CBP_WEBHOOK_PREVIOUS_PASSWORD: OLD } });
    expect(cfg.webhookPreviousPassword).toBe(OLD);
    expect(secretValues(cfg)).toContain(OLD);
  });

  it('cbp webhook takes CBP_WEBHOOK_PREVIOUS_PASSWORD beside the new one, and prints neither', async () => {
    const dir = tempDir();
    const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CBP_')));
    const cli = cbpEntry();
    const child = spawn(process.execPath, [cli, 'webhook', '--port', '0', '--json', '--journal', path.join(dir, 'journal'), '--metrics-addr', 'off'], {
      env: { ...base, CBP_WEBHOOK_USERNAME: USER, CBP_WEBHOOK_PASSWORD: NEW, CBP_WEBHOOK_PREVIOUS_PASSWORD: OLD, CBP_LOG_LEVEL: 'debug' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (c: Buffer) => {
          stdout += c.toString();
          if (stdout.includes('\n')) resolve((JSON.parse(stdout.split('\n')[0]!) as { url: string }).url);
        });
        child.on('exit', (code) => reject(new Error(`cbp webhook exited (${code}) before its start line: ${stderr}`)));
      });
      const push = (p: string, guid: string) => fetch(url, { method: 'POST', headers: { authorization: auth(p), 'content-type': 'application/json' }, body: event(guid) });
      expect((await push(OLD, 'c1')).status).toBe(200);
      expect((await push(NEW, 'c2')).status).toBe(200);
      expect((await push('some-other-password-42', 'c3')).status).toBe(401);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).toBe(0);
    expect(stderr).toContain('CBP_WEBHOOK_PREVIOUS_PASSWORD');
    expect(stdout + stderr).not.toContain(OLD);
    expect(stdout + stderr).not.toContain(NEW);
  }, 60_000);
});
