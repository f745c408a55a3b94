import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildSandbox } from '../sandbox/server.ts';
import { createJwtSigner } from '../sandbox/jwt.ts';
import { tinyWorld } from './sandbox-fixtures.ts';

describe('sandbox token interface', () => {
  let app: FastifyInstance;
  let realNow = Math.floor(Date.parse('2026-01-10T00:00:00Z') / 1000);

  beforeAll(async () => {
    app = await buildSandbox({ world: tinyWorld(), tokenTtlSeconds: 300, tokenClock: () => realNow });
  });
  afterAll(async () => {
    await app.close();
  });

  const token = (auth?: string) =>
    app.inject({ method: 'POST', url: '/auth/v1/auth', headers: auth === undefined ? {} : { authorization: auth } });

  it('answers {token}, a signed JWT with exp, for the right API secret', async () => {
    const res = await token('Bearer sandbox-api-secret');
    expect(res.statusCode).toBe(200);
    const { token: t } = res.json();
    const [h, p] = t.split('.');
    expect(JSON.parse(Buffer.from(h, 'base64url').toString())).toMatchObject({ alg: 'HS256', typ: 'JWT' });
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString());
    expect(claims.exp - claims.iat).toBe(300);
  });

  it('also answers on the path with a trailing slash (/auth/)', async () => {
    const res = await app.inject({ method: 'POST', url: '/auth/v1/auth/', headers: { authorization: 'Bearer sandbox-api-secret' } });
    expect(res.statusCode).toBe(200);
  });

  it('answers 400 {error, message} for a missing or malformed Authorization header', async () => {
    for (const h of [undefined, 'sandbox-api-secret', 'Basic abc']) {
      const res = await token(h);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: true, message: expect.stringMatching(/Authorization/) });
    }
  });

  it('answers 401 {error, message} for a wrong API secret', async () => {
    const res = await token('Bearer wrong-secret');
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toBe(true);
  });

  it('the events interface accepts a valid token, refuses an expired one (401) and a missing header (400)', async () => {
    const { token: t } = (await token('Bearer sandbox-api-secret')).json();
    const get = (auth?: string) => app.inject({ method: 'GET', url: '/events/v1/subscribe', headers: auth ? { authorization: auth } : {} });
    expect((await get(`Bearer ${t}`)).statusCode).toBe(200);
    // A bare token without the Bearer scheme is accepted too (the spec reads both ways).
    expect((await get(t)).statusCode).toBe(200);
    expect((await get()).statusCode).toBe(400);
    expect((await get('Token abc')).statusCode).toBe(400);
    expect((await get('Bearer not.a.jwt')).statusCode).toBe(401);
    realNow += 301;
    const expired = await get(`Bearer ${t}`);
    expect(expired.statusCode).toBe(401);
    expect(expired.json().message).toMatch(/expired/);
  });

  it('refuses a token signed by another key', () => {
    const other = createJwtSigner({ ttlSeconds: 60 }).sign();
    expect(createJwtSigner({ ttlSeconds: 60 }).verify(other).ok).toBe(false);
  });
});
