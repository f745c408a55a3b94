// Structured logs (pino) on stderr, so stdout stays free for data (--json). Secrets are redacted twice:
// by key (any field named like a credential, at any depth, in any case) and by value (every registered
// secret is scrubbed from messages, interpolated values, objects, errors and child bindings).
import pino, { type Logger } from 'pino';

const SECRET_KEYS = [
  'authorization', 'Authorization', 'password', 'apiSecret', 'api_secret', 'token', 'authorization_key',
  'reportingKey', 'companyToken', 'company_token', 'dataPassword', 'webhookPassword', 'webhookPreviousPassword', 'secret', 'key',
];
const paths = SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`, `headers.${k}`, `req.headers.${k}`]);

let secrets: string[] = [];

/** Registers values (API secret, passwords, keys) that must never be printed. */
export function registerSecrets(values: Iterable<string | undefined>): void {
  for (const v of values) if (v && v.length >= 4 && !secrets.includes(v)) secrets.push(v);
  secrets.sort((a, b) => b.length - a.length);
}

/** Puts the registered secrets back as they are now, when called (a process that runs several cbp commands in turn). */
export function secretsKept(): () => void {
  const kept = [...secrets];
  return () => {
    secrets = kept;
  };
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Replaces every registered secret inside a string by [REDACTED]: values, not words. A secret that is a short
 * lower-case word (under 12 letters, e.g. a too-short password "short") is kept where it stands as a word of a
 * sentence (after a word and a space, before a space, punctuation or the end: "is too short (") and inside longer
 * words; elsewhere (in a URL, quoted, after `=` or `:`, first) it is redacted. Any other secret, everywhere.
 */
export function scrub(text: string): string {
  let out = text;
  for (const s of secrets) {
    if (!out.includes(s)) continue;
    if (!/^[a-z]{4,11}$/.test(s)) {
      out = out.split(s).join('[REDACTED]');
      continue;
    }
    const re = new RegExp(`(?<![A-Za-z0-9_])${escape(s)}(?![A-Za-z0-9_])`, 'g');
    out = out.replace(re, (m, at: number, all: string) =>
      /[A-Za-z] $/.test(all.slice(0, at)) && /^(?:$|[ .,;!?)])/.test(all.slice(at + m.length)) ? m : '[REDACTED]');
  }
  return out;
}

const SECRET_KEY_SET = new Set(SECRET_KEYS.map((k) => k.toLowerCase()));

/**
 * Deep copy fit for printing: credential-named fields (any case, any depth) censored, secret values
 * scrubbed from every string, Errors serialised (pino's own err serializer) before they are walked, since a
 * plain copy of an Error has no message or stack and its message could carry a secret.
 */
function sanitise(v: unknown, ancestors: WeakSet<object> = new WeakSet()): unknown {
  if (typeof v === 'string') return scrub(v);
  if (v === null || typeof v !== 'object') return v;
  if (ancestors.has(v)) return '[Circular]';
  ancestors.add(v);
  try {
    const o = v instanceof Error ? pino.stdSerializers.err(v) : v;
    if (Array.isArray(o)) return o.map((x) => sanitise(x, ancestors));
    if (typeof (o as { toJSON?: unknown }).toJSON === 'function') return sanitise((o as { toJSON(): unknown }).toJSON(), ancestors);
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(o as Record<string, unknown>)) {
      out[k] = SECRET_KEY_SET.has(k.toLowerCase()) && x !== undefined ? '[REDACTED]' : sanitise(x, ancestors);
    }
    return out;
  } finally {
    // Only ancestors count as a cycle: the same object twice side by side is printed twice.
    ancestors.delete(v);
  }
}

/** pino applies the bindings formatter to the root only: sanitise every child's bindings on the way in. */
type ChildFn = (this: unknown, bindings: pino.Bindings, options?: pino.ChildLoggerOptions) => unknown;

function guardChildren(l: Logger, protoChild: ChildFn = l.child as unknown as ChildFn): Logger {
  // protoChild is pino's own method, called on this logger: a child inherits the wrapper of its parent,
  // which would create grandchildren from the parent and lose the child's bindings.
  const wrapped = (bindings: pino.Bindings, options?: pino.ChildLoggerOptions) =>
    guardChildren(protoChild.call(l, sanitise(bindings) as pino.Bindings, options) as unknown as Logger, protoChild);
  l.child = wrapped as unknown as Logger['child'];
  return l;
}

export function createLogger(opts: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const logger = pino(
    {
      name: opts.name ?? 'cbp',
      level: opts.level ?? process.env.CBP_LOG_LEVEL ?? 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths, censor: '[REDACTED]' },
      // sanitise() already serialised the Error; pino's default would re-serialise the copy as type "Object".
      serializers: { err: (e: unknown) => (e instanceof Error ? sanitise(e) : e) },
      hooks: {
        logMethod(args, method) {
          // The merging object (first, if an object) goes through formatters.log; everything else is the
          // message or its interpolation values (%s, %o), which pino prints without any formatter.
          const a: unknown[] = args.map((x, i) => (i === 0 && x !== null && typeof x === 'object' ? x : sanitise(x)));
          // pino takes the message of a logged Error (log.error(err) or {err}) unscrubbed: give it one.
          const first = a[0] as { err?: unknown } | undefined;
          if (first instanceof Error) {
            a[0] = { err: first };
            if (typeof a[1] !== 'string') a.splice(1, 0, scrub(first.message));
          } else if (first && typeof first === 'object' && first.err instanceof Error && typeof a[1] !== 'string') {
            a.splice(1, 0, scrub(first.err.message));
          }
          method.apply(this, a as Parameters<typeof method>);
        },
      },
      formatters: {
        log(obj) {
          return sanitise(obj) as Record<string, unknown>;
        },
        bindings(b) {
          return sanitise(b) as Record<string, unknown>;
        },
      },
    },
    (opts.destination as pino.DestinationStream | undefined) ?? pino.destination(2),
  );
  return guardChildren(logger);
}

let root: Logger | undefined;
export function log(): Logger {
  root ??= createLogger();
  return root;
}
/** Sets the logger log() gives; undefined: the next log() makes a new one. */
export function setLogger(l: Logger | undefined): void {
  root = l;
}
