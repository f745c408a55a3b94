// One error catalog with stable codes (in the manner of fastify's FST_ERR_* and undici's UND_ERR_*).
// Every error cbp raises on purpose is a CbpError: a stable code, the HTTP status it maps to, whether
// a retry can help (Temporal's nonRetryable is its negation), and a message that says what to do.

export interface CbpErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class CbpError extends Error {
  readonly code: string;
  readonly status: number;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;

  constructor(code: string, message: string, status = 500, retryable = false, opts: CbpErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    this.retryable = retryable;
    this.details = opts.details ?? {};
  }

  toJSON(): Record<string, unknown> {
    return { code: this.code, message: this.message, status: this.status, retryable: this.retryable, ...this.details };
  }
}

/** A setting is missing or invalid. Exit code 2 from the CLI. */
export class ConfigError extends CbpError {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      'CBP_ERR_CONFIG',
      `Configuration problem${problems.length > 1 ? 's' : ''}:\n  - ${problems.join('\n  - ')}\n` +
        'Set them as environment variables, in a .env file in the working folder (see .env.example), or in a config file (--config FILE or CBP_CONFIG).',
      400,
      false,
    );
    this.problems = problems;
  }
}

/** Input (a payload, a file, a flag) does not match what was expected. */
export class ValidationError extends CbpError {
  readonly issues: string[];
  constructor(what: string, issues: string[], opts: CbpErrorOptions = {}) {
    super('CBP_ERR_VALIDATION', `${what} is invalid:\n  - ${issues.join('\n  - ')}`, 422, false, {
      ...opts,
      details: { ...opts.details, issues },
    });
    this.issues = issues;
  }
}

/** A usage mistake on the command line. Exit code 2. */
export class UsageError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_USAGE', message, 400, false);
  }
}

/** Something needed was not found (a file, an entity). */
export class NotFoundError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_NOT_FOUND', message, 404, false, opts);
  }
}

export function isCbpError(e: unknown): e is CbpError {
  return e instanceof CbpError;
}

/** A message safe to print for any thrown value: never a stack trace for CbpErrors. */
export function describeError(e: unknown): string {
  if (e instanceof CbpError) return `${e.message} [${e.code}]`;
  if (e instanceof Error) return e.message;
  return String(e);
}
