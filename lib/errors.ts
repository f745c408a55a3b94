// One error catalog with stable codes (in the manner of fastify's FST_ERR_* and undici's UND_ERR_*).
// Every error cbp raises on purpose is a CbpError: a stable code, the HTTP status it maps to, whether
// a retry can help (Temporal's nonRetryable is its negation), and a message that says what to do.
// ERRORS below is the one table of codes: an error class names its code, and its status and retryable flag
// come from here. Pure data and plain classes, importing nothing: the workflow bundle may load it
// (workflows/activity-options.ts derives its non-retryable types from it). docs/errors.md shows the table.

export interface ErrorDef {
  /** The HTTP status the code maps to (a service error carries the service's own: see `serviceStatus`). */
  status: number;
  /** Whether a later attempt may succeed: Temporal retries it (nonRetryable is its negation). */
  retryable: boolean;
  /** The class that raises it (by name: the classes live in their own layers). */
  class: string;
  /** The error's status is the one the service answered with (status above is the usual one). */
  serviceStatus?: true;
  /** What the operator does about it (docs/errors.md). */
  hint: string;
}

export const ERRORS = {
  // Settings, usage and input (lib/)
  CBP_ERR_CONFIG: { status: 400, retryable: false, class: 'ConfigError', hint: 'Set or fix the settings named (environment, `.env` or config file; see `.env.example`)' },
  CBP_ERR_USAGE: { status: 400, retryable: false, class: 'UsageError', hint: 'Fix the command line (`cbp COMMAND --help` lists its options)' },
  CBP_ERR_VALIDATION: { status: 422, retryable: false, class: 'ValidationError', hint: 'Fix the input named (payload, file, flag); the issues list each field' },
  CBP_ERR_NOT_FOUND: { status: 404, retryable: false, class: 'NotFoundError', hint: 'Check the path or identifier named' },
  // The service clients (client/)
  CBP_ERR_SERVICE_BAD_REQUEST: { status: 400, retryable: false, class: 'ServiceHttpError', hint: 'The service refused the request as it stands (HTTP 400): fix the fields named' },
  CBP_ERR_SERVICE_UNAUTHORIZED: { status: 401, retryable: false, class: 'ServiceHttpError', hint: 'Check the interface\'s credential setting (HTTP 401, after a fresh token was tried)' },
  CBP_ERR_SERVICE_FORBIDDEN: { status: 403, retryable: false, class: 'ServiceHttpError', hint: 'Check the credential and that this machine\'s IP address is allow-listed (HTTP 403)' },
  CBP_ERR_SERVICE_NOT_FOUND: { status: 404, retryable: false, class: 'ServiceHttpError', hint: 'Check the identifier and the interface\'s base URL (HTTP 404)' },
  CBP_ERR_SERVICE_PRECONDITION: { status: 412, retryable: false, class: 'ServiceHttpError', hint: 'The service refused the request as it stands (HTTP 412): fix the fields named' },
  CBP_ERR_SERVICE_UNPROCESSABLE: { status: 422, retryable: false, class: 'ServiceHttpError', hint: 'The service refused the request as it stands (HTTP 422): fix the fields named' },
  CBP_ERR_SERVICE_RATE_LIMITED: { status: 429, retryable: true, class: 'ServiceHttpError', hint: 'The service asked to slow down (HTTP 429) and retries were used up: run again later' },
  CBP_ERR_SERVICE_UNAVAILABLE: { status: 503, retryable: true, class: 'ServiceHttpError', serviceStatus: true, hint: 'The service is busy or failing (HTTP 500, 502, 503, 504) and retries were used up: run again later' },
  CBP_ERR_SERVICE_STATUS: { status: 502, retryable: false, class: 'ServiceHttpError', serviceStatus: true, hint: 'Any other status (another 4xx, 501, 505...): check the interface\'s base URL' },
  CBP_ERR_SERVICE_NETWORK: { status: 503, retryable: true, class: 'ServiceNetworkError', hint: 'The service could not be reached (refused, reset, DNS): check the base URL and the network' },
  CBP_ERR_SERVICE_TIMEOUT: { status: 504, retryable: true, class: 'ServiceTimeoutError', hint: 'No complete answer in time: check the base URL, or raise the timeout setting named' },
  CBP_ERR_SERVICE_RESPONSE: { status: 502, retryable: false, class: 'ServiceResponseError', hint: 'A success whose body does not match the spec: check the base URL points at the right interface' },
  CBP_ERR_INSECURE_URL: { status: 400, retryable: false, class: 'InsecureBaseUrlError', hint: 'Use an `https://` base URL (plain http only on loopback)' },
  CBP_ERR_BAD_URL: { status: 400, retryable: false, class: 'BadBaseUrlError', hint: 'Set the base URL to an address such as `https://host/v1`' },
  CBP_ERR_DATA_KEY: { status: 401, retryable: false, class: 'DataKeyError', serviceStatus: true, hint: 'The order data key was refused (401, or 403): check `CBP_DATA_USERNAME`, `CBP_DATA_PASSWORD`, `CBP_DATA_BASE_URL` and IP allow-listing' },
  CBP_ERR_REPORT_FORMAT: { status: 422, retryable: false, class: 'ReportFormatError', hint: 'A downloaded report is not the format it claims: fetch it again, or inspect the kept file' },
  CBP_ERR_REPORT_WRITE: { status: 500, retryable: false, class: 'ReportWriteError', hint: 'A report cannot be written: check the folder exists, is writable and has free space (`CBP_DATA_DIR`)' },
  // The event receiver (webhook/)
  CBP_ERR_EVENT_BODY: { status: 400, retryable: false, class: 'EventBodyError', hint: 'A pushed body is not one JSON object in UTF-8 with each key once: the sender fixes it (answered 400, not stored)' },
  CBP_ERR_JOURNAL_UNAVAILABLE: { status: 503, retryable: true, class: 'JournalUnavailableError', hint: 'The journal cannot take the event now (disk error, closing): answered 503, the service sends it again' },
  CBP_ERR_JOURNAL_LOCKED: { status: 409, retryable: false, class: 'JournalLockedError', hint: 'Another receiver holds the journal folder: stop it, or give this one its own `--journal`' },
  // The store (store/)
  CBP_ERR_BAD_REPORT_FILE: { status: 422, retryable: false, class: 'BadReportFileError', hint: 'A report file cannot be loaded as the kind and format asked: fix or re-export the file; nothing was stored' },
  CBP_ERR_MIGRATION_CHANGED: { status: 500, retryable: false, class: 'MigrationChangedError', hint: 'An applied migration file changed, or a newer cbp wrote the store: restore `sql/migrations` as shipped, or upgrade cbp' },
  CBP_ERR_NO_SNAPSHOT: { status: 404, retryable: false, class: 'NoSnapshotError', hint: 'No snapshot yet, or it cannot be opened: run `cbp run nightly` or `cbp run backfill` first' },
  CBP_ERR_QUERY: { status: 400, retryable: false, class: 'QueryError', hint: 'An analyst\'s query failed (a syntax error, an unknown table or column, a value that cannot be cast): fix the SQL named' },
  CBP_ERR_STORE_UNAVAILABLE: { status: 503, retryable: true, class: 'StoreUnavailableError', hint: 'The store cannot be opened now (held by a writer, out of memory or disk): wait, or free what is named' },
  CBP_ERR_STORE_DAMAGED: { status: 500, retryable: false, class: 'StoreDamagedError', hint: 'The store lists data it cannot read (a lake\'s data file gone): restore the lake\'s catalog and data folder from one backup (docs/lake.md "Under faults")' },
  // Activities (activities/)
  CBP_ERR_ACTIVITY_STORE: { status: 500, retryable: true, class: 'ActivityStoreError', hint: 'A store step failed in a way a later attempt may not (a lock, a full disk): retried; if it persists, read the message' },
  CBP_ERR_ORDER_FILE: { status: 400, retryable: false, class: 'OrderFileError', hint: 'The order file cannot be read as a whole (a quote never closed, no order_id column): fix the line named' },
  // Alert delivery (alerts/)
  CBP_ERR_NOTIFY_RETRYABLE: { status: 502, retryable: true, class: 'NotifyError', hint: 'A notifier failed for now: the notice stays in the outbox and is sent again' },
  CBP_ERR_NOTIFY_REJECTED: { status: 502, retryable: false, class: 'NotifyError', hint: 'A notifier refused the notice: fix its setting (URL, credentials); the outbox keeps the error' },
  // Orchestration input (workflows/)
  CBP_ERR_WINDOW_RANGE: { status: 400, retryable: false, class: 'WindowRangeError', hint: 'Fix the dates, window size or parallelism named' },
  CBP_ERR_WORKFLOW_INPUT: { status: 400, retryable: false, class: 'WorkflowInputError', hint: 'Fix the workflow input named' },
  CBP_ERR_INSECURE_WEBHOOK_URL: { status: 400, retryable: false, class: 'InsecureWebhookUrlError', hint: 'Use an `https://` webhook URL (plain http only on loopback)' },
  // Temporal (cli/)
  CBP_ERR_TEMPORAL_UNAVAILABLE: { status: 503, retryable: true, class: 'TemporalUnavailableError', hint: 'Start a Temporal server, or set `TEMPORAL_ADDRESS` and `TEMPORAL_NAMESPACE` (for Temporal Cloud also `TEMPORAL_API_KEY` or `TEMPORAL_TLS_CERT`/`TEMPORAL_TLS_KEY`)' },
} as const satisfies Record<`CBP_ERR_${string}`, ErrorDef>;

export type ErrorCode = keyof typeof ERRORS;

/**
 * The ActivityFailure types a retry cannot fix: every non-retryable code, and the class name of every class
 * whose codes are all non-retryable (an error that reaches Temporal without the wrapper of
 * worker/activity-errors.ts is typed by its class name).
 */
export function nonRetryableTypes(): string[] {
  const defs = Object.entries(ERRORS) as Array<[ErrorCode, ErrorDef]>;
  const codes = defs.filter(([, d]) => !d.retryable).map(([code]) => code);
  const classes = [...new Set(defs.map(([, d]) => d.class))].filter((c) => defs.every(([, d]) => d.class !== c || !d.retryable));
  return [...codes, ...classes];
}

export interface CbpErrorOptions {
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class CbpError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryable: boolean;
  readonly details: Record<string, unknown>;

  /** Status and retryable come from the catalog; `status` replaces the former where the code is `serviceStatus`. */
  constructor(code: ErrorCode, message: string, opts: CbpErrorOptions & { status?: number } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    const def: ErrorDef = ERRORS[code];
    this.name = new.target.name;
    this.code = code;
    this.status = def.serviceStatus && opts.status !== undefined ? opts.status : def.status;
    this.retryable = def.retryable;
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
    );
    this.problems = problems;
  }
}

/** Input (a payload, a file, a flag) does not match what was expected. */
export class ValidationError extends CbpError {
  readonly issues: string[];
  constructor(what: string, issues: string[], opts: CbpErrorOptions = {}) {
    super('CBP_ERR_VALIDATION', `${what} is invalid:\n  - ${issues.join('\n  - ')}`, {
      ...opts,
      details: { ...opts.details, issues },
    });
    this.issues = issues;
  }
}

/** A usage mistake on the command line. Exit code 2. */
export class UsageError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_USAGE', message);
  }
}

/** Something needed was not found (a file, an entity). */
export class NotFoundError extends CbpError {
  constructor(message: string, opts: CbpErrorOptions = {}) {
    super('CBP_ERR_NOT_FOUND', message, opts);
  }
}

export function isCbpError(e: unknown): e is CbpError {
  return e instanceof CbpError;
}

/** DuckDB's own "Out of Memory Error" (other errors may quote a query holding the words). */
export function isOutOfMemory(e: unknown): boolean {
  return /^Out of Memory Error:/.test(e instanceof Error ? e.message : String(e));
}

/**
 * A message safe to print for any thrown value: never a stack trace for CbpErrors. DuckDB running out of memory says
 * which setting to raise, in place of DuckDB's advice (SET statements cbp's sessions do not take).
 */
export function describeError(e: unknown): string {
  if (e instanceof CbpError) return `${e.message} [${e.code}]`;
  if (isOutOfMemory(e)) {
    return `${(e instanceof Error ? e.message : String(e)).split('\n')[0].trim()}: the store needs more memory than its limit ` +
      '(CBP_STORE_MEMORY_LIMIT) allows: raise it (to twice its value, say) and run the command again';
  }
  if (e instanceof Error) return e.message;
  return String(e);
}
