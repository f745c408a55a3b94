// The token interface: POST {authBaseUrl}/auth with the API secret as bearer, no body → {token} (a JWT).
// The token is cached and refreshed REFRESH_MARGIN_MS before its exp; concurrent callers share one request.
import { TokenResponseSchema } from '../contract/index.ts';
import { bearer, ServiceHttp, untilAborted, type ClientOptions } from './http.ts';
import { registerSecrets } from '../lib/log.ts';

/** Refresh this long before exp, so a token never expires between fetch and use. */
export const REFRESH_MARGIN_MS = 60_000;
/** Lifetime assumed for a token without a readable exp (the spec does not give one). */
export const ASSUMED_LIFETIME_MS = 300_000;

export interface TokenClientConfig {
  authBaseUrl: string;
  apiSecret: string;
}

export interface TokenClient {
  /** A valid bearer token, from the cache or a fresh request. */
  getToken(opts?: { signal?: AbortSignal }): Promise<string>;
  /** Drops the cached token if it is this one (a 401 proved it bad); the next getToken fetches anew. */
  invalidate(token?: string): void;
  /** Secrets this client knows now (the API secret and current token), for scrubbing. */
  secrets(): string[];
  close(): Promise<void>;
}

/** The JWT payload's exp in epoch ms, without checking the signature; undefined if unreadable. */
export function jwtExpiry(token: string): number | undefined {
  const parts = token.split('.');
  if (parts.length < 2) return undefined;
  try {
    const payload = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    const exp = payload && typeof payload === 'object' ? (payload as Record<string, unknown>).exp : undefined;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

export function createTokenClient(cfg: TokenClientConfig, opts: ClientOptions & { now?: () => number } = {}): TokenClient {
  registerSecrets([cfg.apiSecret]);
  const now = opts.now ?? opts.retry?.now ?? Date.now;
  let cached: { token: string; refreshAt: number } | undefined;
  let inFlight: Promise<string> | undefined;
  const http = new ServiceHttp('token', cfg.authBaseUrl, { ...opts, secrets: () => [cfg.apiSecret, cached?.token] });

  async function fetchToken(): Promise<string> {
    const answer = await http.json({
      operation: 'request token',
      method: 'POST',
      path: '/auth',
      headers: bearer(cfg.apiSecret),
      // Asking for a token twice only issues two tokens: safe to retry.
      idempotent: true,
    });
    const { token } = http.parse(TokenResponseSchema, answer, 'request token');
    const obtained = now();
    const lifetime = (jwtExpiry(token) ?? obtained + ASSUMED_LIFETIME_MS) - obtained;
    // A token shorter-lived than twice the margin is refreshed at half its life rather than at once, so
    // short tokens do not cost a token request per call; an already-expired one is used once, then replaced.
    cached = { token, refreshAt: lifetime <= 0 ? obtained : obtained + Math.max(lifetime - REFRESH_MARGIN_MS, lifetime / 2) };
    return token;
  }

  return {
    async getToken(o = {}) {
      if (cached && now() < cached.refreshAt) return cached.token;
      inFlight ??= fetchToken().finally(() => {
        inFlight = undefined;
      });
      return untilAborted(inFlight, o.signal);
    },
    invalidate(token) {
      if (!cached || token === undefined || cached.token === token) cached = undefined;
    },
    secrets: () => [cfg.apiSecret, ...(cached ? [cached.token] : [])],
    close: () => http.close(),
  };
}
