// Structured logs (pino) on stderr, so stdout stays free for data (--json). Secrets are redacted twice:
// by key (any field named like a credential, at any of the first levels) and by value (every secret
// setting's value is scrubbed from messages and strings).
import pino, { type Logger } from 'pino';

const SECRET_KEYS = [
  'authorization', 'Authorization', 'password', 'apiSecret', 'api_secret', 'token', 'authorization_key',
  'reportingKey', 'companyToken', 'company_token', 'dataPassword', 'webhookPassword', 'secret', 'key',
];
const paths = SECRET_KEYS.flatMap((k) => [k, `*.${k}`, `*.*.${k}`, `headers.${k}`, `req.headers.${k}`]);

let secrets: string[] = [];

/** Registers values (API secret, passwords, keys) that must never be printed. */
export function registerSecrets(values: Iterable<string | undefined>): void {
  for (const v of values) if (v && v.length >= 4 && !secrets.includes(v)) secrets.push(v);
  secrets.sort((a, b) => b.length - a.length);
}

/** Replaces every registered secret inside a string by [REDACTED]. */
export function scrub(text: string): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join('[REDACTED]');
  return out;
}

export function createLogger(opts: { level?: string; name?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  return pino(
    {
      name: opts.name ?? 'cbp',
      level: opts.level ?? process.env.CBP_LOG_LEVEL ?? 'info',
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths, censor: '[REDACTED]' },
      hooks: {
        logMethod(args, method) {
          method.apply(this, args.map((a) => (typeof a === 'string' ? scrub(a) : a)) as Parameters<typeof method>);
        },
      },
      formatters: {
        log(obj) {
          return JSON.parse(scrub(JSON.stringify(obj)));
        },
      },
    },
    (opts.destination as pino.DestinationStream | undefined) ?? pino.destination(2),
  );
}

let root: Logger | undefined;
export function log(): Logger {
  root ??= createLogger();
  return root;
}
export function setLogger(l: Logger): void {
  root = l;
}
