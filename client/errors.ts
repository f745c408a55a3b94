// Typed errors of the service clients. Each one names the interface and the operation, carries the
// service's HTTP status and message, says whether a retry can help, and tells the operator what to do.
// Every text that reaches a message goes through redact(): registered secrets and anything shaped like a
// JWT are removed, because services echo headers and tokens back in error bodies.
import { CbpError, type ErrorCode } from '../lib/errors.ts';
import { scrub } from '../lib/log.ts';

export type ServiceInterface = 'token' | 'events' | 'data' | 'reporting';

/** The settings an operator fixes when an interface rejects its credential or cannot be reached. */
export const INTERFACE_SETTINGS: Record<ServiceInterface, { baseUrlEnv: string; credentialEnv: string; label: string }> = {
  token: { baseUrlEnv: 'CBP_AUTH_BASE_URL', credentialEnv: 'CBP_API_SECRET', label: 'token interface' },
  events: { baseUrlEnv: 'CBP_EVENTS_BASE_URL', credentialEnv: 'CBP_API_SECRET', label: 'events interface' },
  data: { baseUrlEnv: 'CBP_DATA_BASE_URL', credentialEnv: 'CBP_DATA_USERNAME and CBP_DATA_PASSWORD', label: 'order data interface' },
  reporting: { baseUrlEnv: 'CBP_REPORTING_BASE_URL', credentialEnv: 'CBP_REPORTING_KEY (and CBP_COMPANY_TOKEN)', label: 'reporting interface' },
};

/** Statuses after which the same request may succeed later. */
export const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([429, 500, 502, 503, 504]);

const JWT_SHAPE = /eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g;

/** Removes registered secrets, the given extra values and JWT-shaped strings from a text. */
export function redact(text: string, extra: Iterable<string | undefined> = []): string {
  let out = scrub(text);
  for (const s of extra) if (s && s.length >= 4 && out.includes(s)) out = out.split(s).join('[REDACTED]');
  return out.replace(JWT_SHAPE, '[REDACTED]');
}

export interface ServiceErrorInit {
  iface: ServiceInterface;
  operation: string;
  httpStatus?: number;
  serviceMessage?: string;
  retryAfterMs?: number;
  cause?: unknown;
  details?: Record<string, unknown>;
}

/** Base of every error a service client raises. */
export class ServiceError extends CbpError {
  readonly iface: ServiceInterface;
  readonly operation: string;
  /** The status the service answered with; undefined when no answer came. */
  readonly httpStatus: number | undefined;
  /** The service's own message (from {error, message}, or the body text cut short), secrets removed. */
  readonly serviceMessage: string | undefined;
  /** A Retry-After the service asked for, in ms. */
  readonly retryAfterMs: number | undefined;

  /** `status`: the service's, for the codes the catalog marks `serviceStatus` (lib/errors.ts). */
  constructor(code: ErrorCode, message: string, init: ServiceErrorInit, status?: number) {
    super(code, redact(message), {
      status,
      cause: init.cause,
      details: {
        interface: init.iface,
        operation: init.operation,
        ...(init.httpStatus !== undefined ? { httpStatus: init.httpStatus } : {}),
        ...(init.serviceMessage !== undefined ? { serviceMessage: redact(init.serviceMessage) } : {}),
        ...init.details,
      },
    });
    this.iface = init.iface;
    this.operation = init.operation;
    this.httpStatus = init.httpStatus;
    this.serviceMessage = init.serviceMessage === undefined ? undefined : redact(init.serviceMessage);
    this.retryAfterMs = init.retryAfterMs;
  }
}

function what(init: ServiceErrorInit): string {
  return `${INTERFACE_SETTINGS[init.iface].label} ${init.operation}`;
}

function said(init: ServiceErrorInit): string {
  return init.serviceMessage ? `: ${redact(init.serviceMessage)}` : '';
}

const HTTP_CODES: Record<number, ErrorCode> = {
  400: 'CBP_ERR_SERVICE_BAD_REQUEST',
  401: 'CBP_ERR_SERVICE_UNAUTHORIZED',
  403: 'CBP_ERR_SERVICE_FORBIDDEN',
  404: 'CBP_ERR_SERVICE_NOT_FOUND',
  412: 'CBP_ERR_SERVICE_PRECONDITION',
  422: 'CBP_ERR_SERVICE_UNPROCESSABLE',
  429: 'CBP_ERR_SERVICE_RATE_LIMITED',
};

/** The service answered with a status that is not a success. */
export class ServiceHttpError extends ServiceError {
  constructor(init: ServiceErrorInit & { httpStatus: number; fields?: string[] }) {
    const s = init.httpStatus;
    const env = INTERFACE_SETTINGS[init.iface];
    let advice: string;
    if (s === 401) {
      advice =
        init.iface === 'events'
          ? `the bearer token was refused even after a fresh one: check ${env.credentialEnv} and ${env.baseUrlEnv} / CBP_AUTH_BASE_URL`
          : `check the credential setting ${env.credentialEnv}`;
    } else if (s === 403) advice = `check ${env.credentialEnv} and that this machine's IP address is allow-listed by the operator`;
    else if (s === 400 || s === 422 || s === 412) {
      const f = init.fields?.length ? ` (fields: ${init.fields.join(', ')})` : '';
      advice = `fix the request${f}; the service refused it as it stands`;
    } else if (s === 404) advice = 'the entity or path does not exist: check the identifier and ' + env.baseUrlEnv;
    else if (RETRYABLE_STATUSES.has(s)) advice = 'the service is busy or failing; retries were used up, try again later';
    else advice = `unexpected status; check ${env.baseUrlEnv}`;
    super(
      HTTP_CODES[s] ?? (RETRYABLE_STATUSES.has(s) ? 'CBP_ERR_SERVICE_UNAVAILABLE' : 'CBP_ERR_SERVICE_STATUS'),
      `${what(init)} failed with HTTP ${s}${said(init)} — ${advice}`,
      { ...init, details: { ...init.details, ...(init.fields?.length ? { fields: init.fields } : {}) } },
      s,
    );
  }
}

/** No answer: connection refused or reset, DNS failure, socket closed mid-answer. */
export class ServiceNetworkError extends ServiceError {
  /** True when the request surely never reached the service (connection not established). */
  readonly notSent: boolean;
  constructor(init: ServiceErrorInit & { reason: string; notSent: boolean }) {
    super(
      'CBP_ERR_SERVICE_NETWORK',
      `${what(init)} could not reach the service (${init.reason}) — check ${INTERFACE_SETTINGS[init.iface].baseUrlEnv} and the network`,
      init,
    );
    this.notSent = init.notSent;
  }
}

/** No (complete) answer within the timeout. */
export class ServiceTimeoutError extends ServiceError {
  constructor(init: ServiceErrorInit & { timeoutMs: number; setting: string }) {
    super(
      'CBP_ERR_SERVICE_TIMEOUT',
      `${what(init)} got no complete answer within ${init.timeoutMs} ms — check ${INTERFACE_SETTINGS[init.iface].baseUrlEnv}, or raise ${init.setting}`,
      { ...init, details: { ...init.details, timeoutMs: init.timeoutMs } },
    );
  }
}

/** A success status whose body does not match the contract. */
export class ServiceResponseError extends ServiceError {
  readonly issues: string[];
  constructor(init: ServiceErrorInit & { issues: string[] }) {
    super(
      'CBP_ERR_SERVICE_RESPONSE',
      `${what(init)} answered HTTP ${init.httpStatus ?? 200} with a body that does not match the spec:\n  - ${init.issues
        .map((i) => redact(i))
        .join('\n  - ')}\n(check ${INTERFACE_SETTINGS[init.iface].baseUrlEnv} points at the right interface)`,
      { ...init, details: { ...init.details, issues: init.issues.map((i) => redact(i)) } },
    );
    this.issues = init.issues.map((i) => redact(i));
  }
}

/** A base URL that is not https (and not a loopback address), refused when a client is built. */
export class InsecureBaseUrlError extends CbpError {
  constructor(iface: ServiceInterface, url: string) {
    const env = INTERFACE_SETTINGS[iface].baseUrlEnv;
    super(
      'CBP_ERR_INSECURE_URL',
      `${env} = ${redact(url)} is refused: the service is https only; use an https:// address (plain http is allowed only for loopback hosts such as 127.0.0.1 or localhost)`,
      { details: { interface: iface } },
    );
  }
}

/** A base URL that does not parse. */
export class BadBaseUrlError extends CbpError {
  constructor(iface: ServiceInterface, url: string) {
    const env = INTERFACE_SETTINGS[iface].baseUrlEnv;
    super('CBP_ERR_BAD_URL', `${env} = ${JSON.stringify(redact(url))} is not a URL; set it to an address such as https://host/v1`, {
      details: { interface: iface },
    });
  }
}
