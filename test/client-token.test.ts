import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ASSUMED_LIFETIME_MS, createTokenClient, jwtExpiry, REFRESH_MARGIN_MS } from '../client/token.ts';
import { ServiceHttpError, ServiceResponseError } from '../client/errors.ts';
import { createLogger } from '../lib/log.ts';
import { fakeJwt, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

let srv: ScriptedServer;
const logger = createLogger({ level: 'silent' });
const retry = { sleep: async () => {}, random: () => 0, retries: 2 };
const SECRET = 'api-secret-0f3b9c2d71';

beforeAll(async () => {
  srv = await startScriptedServer();
});
afterAll(() => srv.close());
beforeEach(() => srv.reset());

describe('token interface', () => {
  it('requests a token with POST {authBaseUrl}/auth, the API secret as bearer and no body', async () => {
    const t = fakeJwt({ exp: Math.floor(Date.now() / 1000) + 3600 });
    srv.script('POST', '/v1/auth', { body: { token: t } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger });
    expect(await c.getToken()).toBe(t);
    const [req] = srv.requestsTo('POST', '/v1/auth');
    expect(req.headers.authorization).toBe(`Bearer ${SECRET}`);
    expect(req.body).toBe('');
    await c.close();
  });

  it('caches the token until shortly before its exp', async () => {
    let now = Date.UTC(2030, 0, 1);
    const exp = now / 1000 + 600;
    srv.script('POST', '/v1/auth', { body: { token: fakeJwt({ exp, n: 1 }) } }, { body: { token: fakeJwt({ exp: exp + 600, n: 2 }) } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger, now: () => now });
    const first = await c.getToken();
    now += 600_000 - REFRESH_MARGIN_MS - 1000;
    expect(await c.getToken()).toBe(first);
    expect(srv.requests).toHaveLength(1);
    now += 1000; // now exactly REFRESH_MARGIN_MS before exp
    const second = await c.getToken();
    expect(second).not.toBe(first);
    expect(srv.requests).toHaveLength(2);
    await c.close();
  });

  it('fetches a new token when the cached one has already expired', async () => {
    const past = Math.floor(Date.now() / 1000) - 10;
    srv.script('POST', '/v1/auth', { body: { token: fakeJwt({ exp: past, n: 1 }) } }, { body: { token: fakeJwt({ exp: past + 7200, n: 2 }) } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger });
    const a = await c.getToken();
    const b = await c.getToken();
    expect(jwtExpiry(a)).toBe(past * 1000);
    expect(jwtExpiry(b)).toBe((past + 7200) * 1000);
    expect(await c.getToken()).toBe(b);
    expect(srv.requests).toHaveLength(2);
    await c.close();
  });

  it('assumes a 300 s lifetime for a token without exp', async () => {
    let now = Date.UTC(2030, 0, 1);
    srv.script('POST', '/v1/auth', { body: { token: 'opaque-token-1' } }, { body: { token: 'opaque-token-2' } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger, now: () => now });
    expect(await c.getToken()).toBe('opaque-token-1');
    now += ASSUMED_LIFETIME_MS - REFRESH_MARGIN_MS - 1;
    expect(await c.getToken()).toBe('opaque-token-1');
    now += 1;
    expect(await c.getToken()).toBe('opaque-token-2');
    await c.close();
  });

  it('shares one in-flight token request among concurrent callers', async () => {
    const t = fakeJwt({ exp: Math.floor(Date.now() / 1000) + 3600 });
    srv.script('POST', '/v1/auth', async (_req, res) => {
      await new Promise((r) => setTimeout(r, 50));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ token: t }));
    });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger });
    const got = await Promise.all(Array.from({ length: 20 }, () => c.getToken()));
    expect(new Set(got)).toEqual(new Set([t]));
    expect(srv.requests).toHaveLength(1);
    await c.close();
  });

  it('invalidate() forgets only the token that was refused', async () => {
    const exp = Math.floor(Date.now() / 1000) + 3600;
    srv.script('POST', '/v1/auth', { body: { token: fakeJwt({ exp, n: 1 }) } }, { body: { token: fakeJwt({ exp, n: 2 }) } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger });
    const a = await c.getToken();
    c.invalidate('some-older-token');
    expect(await c.getToken()).toBe(a);
    c.invalidate(a);
    expect(await c.getToken()).not.toBe(a);
    await c.close();
  });

  it('turns a 401 into an error that names CBP_API_SECRET and never repeats the secret', async () => {
    srv.script('POST', '/v1/auth', { status: 401, body: { error: true, message: `invalid authorization header: Bearer ${SECRET}` } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger });
    const e = (await c.getToken().catch((x: unknown) => x)) as ServiceHttpError;
    expect(e).toBeInstanceOf(ServiceHttpError);
    expect(e.code).toBe('CBP_ERR_SERVICE_UNAUTHORIZED');
    expect(e.message).toContain('CBP_API_SECRET');
    expect(e.message).toContain('invalid authorization header');
    expect(e.message).not.toContain(SECRET);
    expect(JSON.stringify(e.toJSON())).not.toContain(SECRET);
    expect(srv.requests).toHaveLength(1);
    await c.close();
  });

  it('rejects an answer without a token, naming the field', async () => {
    srv.script('POST', '/v1/auth', { body: { jwt: 'x' } });
    const c = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: SECRET }, { retry, logger });
    const e = (await c.getToken().catch((x: unknown) => x)) as ServiceResponseError;
    expect(e).toBeInstanceOf(ServiceResponseError);
    expect(e.issues.join()).toContain('token');
    await c.close();
  });
});
