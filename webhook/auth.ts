// HTTP Basic check for event pushes: the only scheme the service supports, compared in constant time.
import { sameSecret, secretDigest } from '../lib/secrets.ts';

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

/** Builds a checker bound to the expected credentials; digests of the expected values are computed once. */
export function basicAuthChecker(expected: BasicCredentials): (header: string | undefined) => boolean {
  const user = secretDigest(expected.username);
  const pass = secretDigest(expected.password);
  return (header) => {
    const got = parseBasic(header);
    // Compare both even when the first differs, so timing does not reveal which one was wrong.
    const u = sameSecret(got?.username ?? '', user);
    const p = sameSecret(got?.password ?? '', pass);
    return got !== null && u && p;
  };
}

export const WWW_AUTHENTICATE = 'Basic realm="cbp events", charset="UTF-8"';

export const PASSWORD_MIN_LENGTH = 16;

/**
 * What makes the receiver's Basic credentials too weak to put on a network, one line each (empty when they
 * are fine). Never quotes the password.
 */
export function weakCredentialProblems(expected: BasicCredentials): string[] {
  const make = `make one with \`openssl rand -base64 24\` and give the same one to the service's subscriptions (cbp run subscriptions)`;
  const out: string[] = [];
  const length = [...expected.password].length;
  if (length < PASSWORD_MIN_LENGTH) {
    out.push(`CBP_WEBHOOK_PASSWORD is too short (${length} characters, at least ${PASSWORD_MIN_LENGTH}): anyone who can reach the receiver may guess it; ${make}`);
  }
  if (expected.password.toLowerCase() === expected.username.toLowerCase()) {
    out.push(`CBP_WEBHOOK_PASSWORD is the same as CBP_WEBHOOK_USERNAME: the password must be a secret of its own; ${make}`);
  }
  return out;
}
