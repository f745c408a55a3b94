// URL settings: the transport rules they must meet (https off loopback; SMTP over TLS), how they are shown
// (passwords and secret path tokens masked, host kept), and which of their parts are secrets. One rule for
// the configuration check at start and for the service clients that check again when they are built.

/** Hosts a plain-text URL may name: the machine itself (tests, the local sandbox). Matches URL.hostname. */
const LOOPBACK_HOST = /^(localhost|[a-z0-9-]+\.localhost|127(\.\d{1,3}){3}|\[::1\]|::1|\[0{0,4}(:0{0,4}){0,6}:0{0,3}1\])$/i;

export function isLoopbackHost(hostname: string): boolean {
  return LOOPBACK_HOST.test(hostname.replace(/\.$/, ''));
}

const LOOPBACK_NAMES = 'a loopback host: localhost, 127.x.x.x or ::1';

/**
 * The url as the WHATWG URL parser reads it (what undici and the service's HTTP stack go by), or null when it
 * is unreadable or has no host. Never a hand-written pattern: user info may hold a raw `@` (the host follows the
 * last one) and a backslash ends the host of an http(s) url, so a regex reads another host than the request
 * goes to. URL is one of the globals Temporal's workflow sandbox provides, so the workflow bodies may use it too.
 */
export function parsedUrl(url: string): URL | null {
  try {
    const u = new URL(url.trim());
    return u.host ? u : null;
  } catch {
    return null;
  }
}

/** Host (and port) of a url, lower case, without user info; '?' when unreadable or without a host. */
export function urlHost(url: string): string {
  return parsedUrl(url)?.host ?? '?';
}

/** Urls compare exactly after trimming: how cbp tells its own webhook subscriptions (workflow plan and list activity). */
export const sameUrl = (a: string, b: string): boolean => a.trim() === b.trim();

/** Why an https-only URL is refused (http is allowed only on loopback), or null when it is fine. */
export function httpsProblem(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return 'must be a URL such as https://host/path';
  }
  if (u.protocol === 'https:') return null;
  if (u.protocol === 'http:') return isLoopbackHost(u.hostname) ? null : `must use https:// (plain http:// is allowed only on ${LOOPBACK_NAMES})`;
  return `must be an https:// URL, not ${u.protocol}//`;
}

/**
 * Why an SMTP URL is refused, or null. smtps:// (TLS from the first byte, port 465) anywhere; smtp:// off
 * loopback only with ?requireTLS=true (nodemailer then refuses to send unless STARTTLS succeeds); plain
 * smtp:// on loopback (a local relay, tests).
 */
export function smtpProblem(value: string): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return 'must be a URL such as smtps://user:pass@host:465';
  }
  if (u.protocol === 'smtps:') return null;
  if (u.protocol !== 'smtp:') return `must be an smtps:// URL (or smtp://...?requireTLS=true), not ${u.protocol}//`;
  if (!u.hostname) return 'must name the SMTP host, e.g. smtps://user:pass@host:465';
  if (isLoopbackHost(u.hostname)) return null;
  if (u.searchParams.get('requireTLS') === 'true') return null;
  return `must use TLS off loopback: smtps://host:465, or smtp://host:587?requireTLS=true for STARTTLS (plain smtp:// is allowed only on ${LOOPBACK_NAMES})`;
}

/** Query values that cannot be secrets (flags, numbers): never masked nor scrubbed, or every "true" in a log would go. */
const PLAIN_VALUE = /^(true|false|yes|no|on|off|\d{1,6})$/i;

/**
 * A path segment of a secret URL that holds a token (Slack's T…/B…/XXXX): anything but a short segment or a
 * lowercase word of at most 12 letters such as "services" or "webhooks", which says where the token goes, not
 * what it is (scrubbing such words would garble every log line that uses them).
 */
function isTokenSegment(seg: string): boolean {
  return seg.length >= 4 && !(seg.length <= 12 && /^[a-z]+(-[a-z]+)*$/.test(seg));
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/**
 * The URL as it may be shown: password, token path segments (when secretPath) and query values replaced by
 * ****, scheme, user, host and port kept, so a user can check where it points. A value that is not a URL is
 * returned as null: the caller hides it whole.
 */
export function maskUrl(value: string, opts: { secretPath?: boolean } = {}): string | null {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return null;
  }
  if (!u.host) return null;
  const user = u.username ? `${u.username}${u.password ? ':****' : ''}@` : u.password ? ':****@' : '';
  const pathPart = opts.secretPath
    ? u.pathname
        .split('/')
        .map((seg) => (isTokenSegment(decode(seg)) ? '****' : seg))
        .join('/')
    : u.pathname;
  const query = [...u.searchParams].map(([k, v]) => `${encodeURIComponent(k)}=${PLAIN_VALUE.test(v) ? encodeURIComponent(v) : '****'}`).join('&');
  const shownPath = pathPart === '/' && !value.replace(/[?#].*$/, '').endsWith('/') ? '' : pathPart;
  return `${u.protocol}//${user}${u.host}${shownPath}${query ? `?${query}` : ''}${u.hash ? '#****' : ''}`;
}

/**
 * The secret parts of a URL, as written and decoded: its username and password, every query value that is
 * not a flag or a number, and, when secretPath, each token segment of the path and (when it holds one) the
 * path itself, with and without its leading slash.
 */
export function urlSecrets(value: string, opts: { secretPath?: boolean } = {}): string[] {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return [];
  }
  const out = new Set<string>();
  const add = (raw: string) => {
    if (!raw) return;
    out.add(raw);
    out.add(decode(raw));
  };
  add(u.username);
  add(u.password);
  if (u.username && u.password) add(`${u.username}:${u.password}`);
  for (const [, v] of u.searchParams) if (!PLAIN_VALUE.test(v)) add(v);
  // searchParams decodes; the raw form as written in the URL as well.
  for (const part of u.search.replace(/^\?/, '').split('&')) {
    const v = part.slice(part.indexOf('=') + 1);
    if (part.includes('=') && !PLAIN_VALUE.test(decode(v))) add(v);
  }
  if (opts.secretPath) {
    const tokens = u.pathname.split('/').filter((seg) => isTokenSegment(decode(seg)));
    // The whole path only when it holds a token: a plain "/alerts" scrubbed from every log line would garble it.
    if (tokens.length > 0) {
      add(u.pathname);
      add(u.pathname.replace(/^\/+/, ''));
    }
    for (const seg of tokens) add(seg);
  }
  return [...out].filter(Boolean);
}

/**
 * Everything of a secret URL that must never be shown, stored or logged: the URL itself and urlSecrets with
 * its token path. A secret URL is one that is itself a credential: a notifier's (Slack, Discord, Teams and
 * Zapier hooks carry their token in the path; an SMTP URL its password), i.e. a setting that is both
 * `secret` and a URL in lib/config.ts. The configuration's secretValues and every notifier use this one rule.
 */
export function secretUrlParts(value: string): string[] {
  return [value, ...urlSecrets(value, { secretPath: true })].filter((s) => s.length > 1);
}
