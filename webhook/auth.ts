// HTTP Basic check for event pushes: the only scheme the service supports, compared in constant time.
import { sameSecret, secretDigest } from '../lib/secrets.ts';
import { ConfigError } from '../lib/errors.ts';

export interface BasicCredentials {
  username: string;
  password: string;
}

/** Parses an Authorization header of the Basic scheme; null when absent or malformed. */
export function parseBasic(header: string | undefined): BasicCredentials | null {
  if (!header) return null;
  const m = /^\s*basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header);
  if (!m) return null;
  const decoded = Buffer.from(m[1], 'base64').toString('utf8');
  const i = decoded.indexOf(':');
  if (i < 0) return null;
  return { username: decoded.slice(0, i), password: decoded.slice(i + 1) };
}

/** Which password a push carried: the current one, the previous one (during a rotation), or none that fits. */
export type AuthMatch = 'current' | 'previous' | null;

/**
 * Builds a checker bound to the expected credentials and, during a rotation, the previous password; digests of the
 * expected values are computed once.
 */
export function basicAuthChecker(expected: BasicCredentials, previousPassword?: string): (header: string | undefined) => AuthMatch {
  const user = secretDigest(expected.username);
  const pass = secretDigest(expected.password);
  const prev = previousPassword ? secretDigest(previousPassword) : null;
  return (header) => {
    const got = parseBasic(header);
    // Compare every one even when the first differs, so timing does not reveal which one was wrong.
    const u = sameSecret(got?.username ?? '', user);
    const p = sameSecret(got?.password ?? '', pass);
    const q = prev !== null && sameSecret(got?.password ?? '', prev);
    if (got === null || !u) return null;
    return p ? 'current' : q ? 'previous' : null;
  };
}

export const WWW_AUTHENTICATE = 'Basic realm="cbp events", charset="UTF-8"';

export const PASSWORD_MIN_LENGTH = 16;

/**
 * What makes the receiver's Basic credentials too weak to put on a network, one line each (empty when they
 * are fine). Never quotes the password.
 */
export function weakCredentialProblems(expected: BasicCredentials, previousPassword?: string): string[] {
  const make = `make one with \`openssl rand -base64 24\` and give the same one to the service's subscriptions (cbp run subscriptions)`;
  const out: string[] = [];
  const length = [...expected.password].length;
  if (length < PASSWORD_MIN_LENGTH) {
    out.push(`CBP_WEBHOOK_PASSWORD is too short (${length} characters, at least ${PASSWORD_MIN_LENGTH}): anyone who can reach the receiver may guess it; ${make}`);
  }
  if (expected.password.toLowerCase() === expected.username.toLowerCase()) {
    out.push(`CBP_WEBHOOK_PASSWORD is the same as CBP_WEBHOOK_USERNAME: the password must be a secret of its own; ${make}`);
  }
  // The previous password is accepted too while it is set, so it must be as strong.
  if (previousPassword !== undefined && [...previousPassword].length < PASSWORD_MIN_LENGTH) {
    out.push(`CBP_WEBHOOK_PREVIOUS_PASSWORD is too short (${[...previousPassword].length} characters, at least ${PASSWORD_MIN_LENGTH}): it is accepted beside CBP_WEBHOOK_PASSWORD; set it only to the password being rotated out`);
  }
  if (previousPassword !== undefined && previousPassword.toLowerCase() === expected.username.toLowerCase()) {
    out.push('CBP_WEBHOOK_PREVIOUS_PASSWORD is the same as CBP_WEBHOOK_USERNAME: it is accepted beside CBP_WEBHOOK_PASSWORD; set it only to the password being rotated out');
  }
  return out;
}

/**
 * Throws ConfigError when the Basic credentials are missing or too weak to put on a network: a receiver is
 * only as safe as its password, and a short one falls to guessing.
 */
export function assertReceiverCredentials(username: string | undefined, password: string | undefined, previousPassword?: string): void {
  const problems = weakCredentialProblems({ username: username ?? '', password: password ?? '' }, previousPassword);
  if (problems.length) throw new ConfigError(problems);
}
