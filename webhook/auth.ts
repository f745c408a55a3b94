// HTTP Basic check for event pushes: the only scheme the service supports. Both sides are hashed first so
// timingSafeEqual compares equal-length digests, and the time taken says nothing about the expected values.
import { createHash, timingSafeEqual } from 'node:crypto';

export interface BasicCredentials {
  username: string;
  password: string;
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
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
  const user = digest(expected.username);
  const pass = digest(expected.password);
  return (header) => {
    const got = parseBasic(header);
    // Compare both even when the first differs, so timing does not reveal which one was wrong.
    const u = timingSafeEqual(digest(got?.username ?? ''), user);
    const p = timingSafeEqual(digest(got?.password ?? ''), pass);
    return got !== null && u && p;
  };
}

export const WWW_AUTHENTICATE = 'Basic realm="cbp events", charset="UTF-8"';
