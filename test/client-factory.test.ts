import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClients, ServiceHttpError } from '../client/index.ts';
import { loadConfig } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';
import { createLogger } from '../lib/log.ts';
import { fakeJwt, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

let srv: ScriptedServer;
let dir: string;
const lines: string[] = [];
const logger = createLogger({ level: 'debug', destination: { write: (s: string) => lines.push(s) } as unknown as NodeJS.WritableStream });
const sleeps: number[] = [];
const retry = { sleep: async (ms: number) => void sleeps.push(ms), random: () => 1 };

const SECRETS = {
  CBP_API_SECRET: 'factory-api-secret-1234',
  CBP_DATA_PASSWORD: 'factory-data-password-5678',
  CBP_REPORTING_KEY: 'factory-reporting-key-9012',
  CBP_COMPANY_TOKEN: 'factory-company-token-3456',
};
const TOKEN = fakeJwt({ exp: Math.floor(Date.now() / 1000) + 3600, sub: 'factory' });
const AUTH_KEY = 'factory-authorization-key-7890';

const fullEnv = () => ({
  CBP_AUTH_BASE_URL: `${srv.url}/auth/v1`,
  CBP_EVENTS_BASE_URL: `${srv.url}/events/v1`,
  CBP_DATA_BASE_URL: `${srv.url}/data/stage`,
  CBP_REPORTING_BASE_URL: `${srv.url}/reporting`,
  CBP_DATA_USERNAME: 'merchant',
  CBP_HTTP_RETRIES: '2',
  ...SECRETS,
});

beforeAll(async () => {
  srv = await startScriptedServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
});
afterAll(async () => {
  await srv.close();
  fs.rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => {
  srv.reset();
  lines.length = 0;
  sleeps.length = 0;
});

describe('createServiceClients', () => {
  it('builds each interface from its own settings, on first use', async () => {
    const cfg = loadConfig({ env: { CBP_REPORTING_BASE_URL: `${srv.url}/reporting`, CBP_REPORTING_KEY: 'only-reporting-key', CBP_COMPANY_TOKEN: 'only-company' } });
    const clients = createServiceClients(cfg, { logger, retry });
    srv.script('POST', '/reporting/prevention', { status: 200 });
    const got = await clients.reporting.fetchReport({ kind: 'prevention', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest: path.join(dir, 'p.json') });
    expect(got.empty).toBe(true);
    const e = (() => {
      try {
        return clients.events;
      } catch (x) {
        return x;
      }
    })();
    expect(e).toBeInstanceOf(ConfigError);
    expect((e as Error).message).toContain('CBP_API_SECRET');
    expect((e as Error).message).toContain('CBP_EVENTS_BASE_URL');
    expect(() => clients.data).toThrow(/CBP_DATA_PASSWORD/);
    await clients.close();
  });

  it('sends every interface to its own base URL, with CBP_HTTP_RETRIES retries', async () => {
    const clients = createServiceClients(loadConfig({ env: fullEnv() }), { logger, retry });
    srv.script('POST', '/auth/v1/auth', { body: { token: TOKEN } });
    srv.script('GET', '/events/v1/ping/rdr.new', { status: 503 }, { status: 503 }, { status: 503 });
    srv.script('POST', '/data/stage/auth', { body: { authorization_key: AUTH_KEY } });
    srv.script('POST', '/data/stage/order', { body: { id: 'o-1' } });
    await expect(clients.events.ping('rdr.new')).rejects.toBeInstanceOf(ServiceHttpError);
    expect(srv.requestsTo('GET', '/events/v1/ping/rdr.new')).toHaveLength(3);
    expect(await clients.data.pushOrder({ order_id: 'A-1' })).toEqual({ id: 'o-1' });
    expect(clients.token).toBe(clients.token);
    await clients.close();
  });

  it('never writes a secret, the token or the authorization key into a log line or an error', async () => {
    const clients = createServiceClients(loadConfig({ env: fullEnv() }), { logger, retry });
    const echo = `echo ${Object.values(SECRETS).join(' ')} ${TOKEN} ${AUTH_KEY}`;
    srv.script('POST', '/auth/v1/auth', { body: { token: TOKEN } });
    srv.script('GET', '/events/v1/subscribe', { status: 500, body: { error: true, message: echo } });
    srv.script('POST', '/data/stage/auth', { body: { authorization_key: AUTH_KEY } });
    srv.script('POST', '/data/stage/order', { status: 500, body: echo }, { status: 422, body: { error: true, message: echo } });
    srv.script('POST', '/reporting/mid_report', { status: 502, body: echo }, { status: 401, body: echo });
    const errors: unknown[] = [];
    errors.push(await clients.events.listSubscriptions().catch((x: unknown) => x));
    errors.push(await clients.data.pushOrder({ order_id: 'A-2' }).catch((x: unknown) => x));
    errors.push(
      await clients.reporting
        .fetchReport({ kind: 'mid_report', start: '2026-11-01T00:00:00Z', end: '2026-11-02T00:00:00Z', dest: path.join(dir, 'm.json') })
        .catch((x: unknown) => x),
    );
    await clients.close();
    expect(lines.length).toBeGreaterThan(0); // the retries were logged
    const text = [...lines, ...errors.map((e) => `${(e as Error).message} ${JSON.stringify((e as ServiceHttpError).toJSON())}`)].join('\n');
    expect(text).toContain('[REDACTED]');
    for (const s of [...Object.values(SECRETS), TOKEN, AUTH_KEY]) expect(text).not.toContain(s);
  });
});
