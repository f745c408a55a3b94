// HS256 JSON Web Tokens with node:crypto: the token interface signs them, the events interface checks them.
// The lifetime runs on REAL time (not the sandbox clock), so a client meets a real expiry and must refresh.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

const b64url = (b: Buffer | string) => Buffer.from(b).toString('base64url');

export interface JwtSigner {
  sign(claims?: Record<string, unknown>): string;
  /** 'ok', or why the token is refused. */
  verify(token: string): { ok: true; claims: Record<string, unknown> } | { ok: false; reason: string };
}

export function createJwtSigner(opts: { ttlSeconds: number; key?: Buffer; nowSeconds?: () => number }): JwtSigner {
  // A fresh key per sandbox instance: tokens of an earlier run are refused, as a rotated secret would be.
  const key = opts.key ?? randomBytes(32);
  const nowS = opts.nowSeconds ?? (() => Math.floor(Date.now() / 1000));
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const mac = (data: string) => createHmac('sha256', key).update(data).digest();

  return {
    sign(claims = {}) {
      const iat = nowS();
      const payload = b64url(JSON.stringify({ sub: 'sandbox', iat, exp: iat + opts.ttlSeconds, jti: randomBytes(8).toString('hex'), ...claims }));
      return `${header}.${payload}.${b64url(mac(`${header}.${payload}`))}`;
    },
    verify(token) {
      const parts = token.split('.');
      if (parts.length !== 3) return { ok: false, reason: 'the bearer token is not a JWT' };
      const [h, p, s] = parts;
      const expected = mac(`${h}.${p}`);
      const given = Buffer.from(s, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        return { ok: false, reason: 'the bearer token signature is not valid; request a new token' };
      }
      let claims: Record<string, unknown>;
      try {
        claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
      } catch {
        return { ok: false, reason: 'the bearer token payload is not JSON' };
      }
      if (typeof claims.exp !== 'number' || claims.exp <= nowS()) {
        return { ok: false, reason: 'the bearer token has expired; request a new token from the token interface' };
      }
      return { ok: true, claims };
    },
  };
}
