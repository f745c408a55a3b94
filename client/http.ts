// The HTTP core every interface client shares: one keep-alive undici Agent per client, a timeout on every
// attempt, retries with backoff for the retryable kinds, and service answers turned into typed errors.
import { Agent, type Dispatcher } from 'undici';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { safeParseWith } from '../contract/issues.ts';
import { CbpError } from '../lib/errors.ts';
import { log } from '../lib/log.ts';
import { isLoopbackHost } from '../lib/urls.ts';
import {
  BadBaseUrlError,
  InsecureBaseUrlError,
  ServiceError,
  ServiceHttpError,
  ServiceNetworkError,
  ServiceResponseError,
  ServiceTimeoutError,
  redact,
  type ServiceInterface,
} from './errors.ts';
import { backoffDelay, parseRetryAfter, retryPolicy, type RetryPolicy } from './retry.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Options every client factory takes. */
export interface ClientOptions {
  /** Timeout of one attempt, headers and body included (CBP_HTTP_TIMEOUT_MS). Default 30 s. */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  logger?: Logger;
  /** A dispatcher to use instead of the client's own Agent (not closed by close()). */
  dispatcher?: Dispatcher;
}

export const DEFAULT_TIMEOUT_MS = 30_000;
/** Largest error body read to find the service's message. */
const ERROR_BODY_LIMIT = 64 * 1024;
const SERVICE_MESSAGE_LIMIT = 300;

export interface Call {
  operation: string;
  method: HttpMethod;
  /** Appended to the base URL's path, e.g. `/subscribe`. */
  path: string;
  headers?: Record<string, string>;
  /** JSON text; a string so every retry sends the same bytes. */
  body?: string;
  /** Safe to send twice: retried on every retryable failure. Otherwise only when the service surely did not act. */
  idempotent: boolean;
  signal?: AbortSignal;
  timeoutMs?: number;
  /** The setting named in a timeout message. */
  timeoutSetting?: string;
  /** false: a body that is not JSON is described by its length, never quoted (a list holding other consumers' data). */
  quoteBody?: boolean;
}

export interface JsonAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON; undefined for an empty body. */
  body: unknown;
}

/** Parses a base URL; https is required except for loopback hosts (tests, a local sandbox). */
export function parseBaseUrl(iface: ServiceInterface, baseUrl: string): { origin: string; basePath: string } {
  let u: URL;
  try {
    u = new URL(baseUrl);
  } catch {
    throw new BadBaseUrlError(iface, baseUrl);
  }
  const host = u.hostname.toLowerCase();
  if (u.protocol === 'http:' && !isLoopbackHost(host)) throw new InsecureBaseUrlError(iface, baseUrl);
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new InsecureBaseUrlError(iface, baseUrl);
  return { origin: u.origin, basePath: u.pathname.replace(/\/+$/, '') };
}

/** The service's message and named fields from an error body ({error, message} or plain text). */
export function readServiceMessage(text: string): { message?: string; fields?: string[] } {
  const t = text.trim();
  if (!t) return {};
  try {
    const o = JSON.parse(t) as unknown;
    if (o && typeof o === 'object' && !Array.isArray(o)) {
      const r = o as Record<string, unknown>;
      const message =
        typeof r.message === 'string' ? r.message : typeof r.error === 'string' ? r.error : typeof r.detail === 'string' ? r.detail : undefined;
      const fields = collectFields(r);
      return { message: message === undefined ? t.slice(0, SERVICE_MESSAGE_LIMIT) : message.slice(0, SERVICE_MESSAGE_LIMIT), ...(fields.length ? { fields } : {}) };
    }
  } catch {
    // not JSON: the text itself is the message
  }
  return { message: t.length > SERVICE_MESSAGE_LIMIT ? `${t.slice(0, SERVICE_MESSAGE_LIMIT)}...` : t };
}

function collectFields(r: Record<string, unknown>): string[] {
  const out: string[] = [];
  const f = r.fields ?? r.errors;
  if (Array.isArray(f)) {
    for (const x of f) {
      if (typeof x === 'string') out.push(x);
      else if (x && typeof x === 'object' && typeof (x as Record<string, unknown>).field === 'string') out.push((x as Record<string, string>).field);
    }
  } else if (f && typeof f === 'object') out.push(...Object.keys(f));
  if (typeof r.field === 'string') out.push(r.field);
  return out.slice(0, 20);
}

async function readLimited(body: Dispatcher.ResponseData['body'], limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of body) {
    const b = c as Buffer;
    if (n < limit) chunks.push(b.subarray(0, limit - n));
    n += b.length;
    if (n >= limit) break;
  }
  if (n >= limit) body.destroy();
  return Buffer.concat(chunks).toString('utf8');
}

const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errCode(e: unknown): string | undefined {
  if (!e || typeof e !== 'object') return undefined;
  const r = e as { code?: unknown; errors?: unknown[]; cause?: unknown };
  if (typeof r.code === 'string') return r.code;
  if (Array.isArray(r.errors) && r.errors.length) return errCode(r.errors[0]);
  return undefined;
}

export class ServiceHttp {
  readonly iface: ServiceInterface;
  readonly origin: string;
  readonly basePath: string;
  readonly policy: RetryPolicy;
  readonly timeoutMs: number;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  private readonly logger: () => Logger;
  private readonly secrets: () => Iterable<string | undefined>;

  constructor(iface: ServiceInterface, baseUrl: string, opts: ClientOptions & { secrets?: () => Iterable<string | undefined> } = {}) {
    this.iface = iface;
    const { origin, basePath } = parseBaseUrl(iface, baseUrl);
    this.origin = origin;
    this.basePath = basePath;
    this.policy = retryPolicy(opts.retry);
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.ownsDispatcher = !opts.dispatcher;
    this.dispatcher = opts.dispatcher ?? new Agent({ keepAliveTimeout: 10_000, keepAliveMaxTimeout: 60_000, connections: 16 });
    this.logger = () => opts.logger ?? log();
    this.secrets = opts.secrets ?? (() => []);
  }

  redact(text: string): string {
    return redact(text, this.secrets());
  }

  /** Sends a call with retries; the answer body is read as JSON (undefined when empty). */
  json(call: Call): Promise<JsonAnswer> {
    return this.run(call, async (res) => {
      const text = await res.body.text();
      let body: unknown;
      if (text.trim() !== '') {
        try {
          body = JSON.parse(text);
        } catch {
          throw new ServiceResponseError({
            iface: this.iface,
            operation: call.operation,
            httpStatus: res.statusCode,
            issues: [
              call.quoteBody === false
                ? `(the whole body): got ${text.length} characters that are not JSON; expected JSON`
                : `(the whole body): got ${JSON.stringify(this.redact(text.slice(0, 80)))}; expected JSON`,
            ],
          });
        }
      }
      return { status: res.statusCode, headers: res.headers, body };
    });
  }

  /** Sends a call with retries; handle consumes a success answer's body (each retry calls it afresh). */
  async run<T>(call: Call, handle: (res: Dispatcher.ResponseData, signal: AbortSignal) => Promise<T>): Promise<T> {
    const retries = this.policy.retries;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(call, handle);
      } catch (e) {
        if (e instanceof ServiceError) e.details.attempts = attempt + 1;
        if (!(e instanceof ServiceError) || !this.shouldRetry(e, call) || attempt >= retries) throw e;
        const wait = backoffDelay(this.policy, attempt, e.retryAfterMs);
        this.logger().warn(
          { interface: this.iface, operation: call.operation, code: e.code, httpStatus: e.httpStatus, retry: attempt + 1, of: retries, delayMs: wait },
          `${this.iface} ${call.operation} failed (${e.httpStatus ?? e.code}); retry ${attempt + 1} of ${retries} in ${wait} ms`,
        );
        await this.policy.sleep(wait, call.signal);
      }
    }
  }

  private shouldRetry(e: ServiceError, call: Call): boolean {
    if (!e.retryable) return false;
    if (call.idempotent) return true;
    // A request that is not safe to repeat is repeated only when the service surely did not act on it.
    return e.httpStatus === 429 || e.httpStatus === 503 || (e instanceof ServiceNetworkError && e.notSent);
  }

  private async attempt<T>(call: Call, handle: (res: Dispatcher.ResponseData, signal: AbortSignal) => Promise<T>): Promise<T> {
    const ms = call.timeoutMs ?? this.timeoutMs;
    const timeout = AbortSignal.timeout(ms);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'cbp/0.1', ...call.headers };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    let res: Dispatcher.ResponseData;
    try {
      res = await this.dispatcher.request({
        origin: this.origin,
        path: `${this.basePath}${call.path}`,
        method: call.method,
        headers,
        body: call.body,
        signal,
        headersTimeout: ms,
        bodyTimeout: ms,
      });
    } catch (e) {
      throw this.mapError(e, call, timeout, ms);
    }
    try {
      if (res.statusCode < 200 || res.statusCode >= 300) {
        const text = await readLimited(res.body, ERROR_BODY_LIMIT);
        const { message, fields } = readServiceMessage(text);
        throw new ServiceHttpError({
          iface: this.iface,
          operation: call.operation,
          httpStatus: res.statusCode,
          serviceMessage: message === undefined ? undefined : this.redact(message),
          fields,
          retryAfterMs: parseRetryAfter(res.headers['retry-after'], this.policy.now()),
        });
      }
      return await handle(res, signal);
    } catch (e) {
      if (!res.body.destroyed) res.body.destroy();
      // cbp's own errors (a bad answer, a report file that cannot be written) are not network failures.
      if (e instanceof CbpError) throw e;
      throw this.mapError(e, call, timeout, ms);
    }
  }

  private mapError(e: unknown, call: Call, timeout: AbortSignal, ms: number): unknown {
    if (e instanceof ServiceError) return e;
    if (call.signal?.aborted) return call.signal.reason ?? e;
    const code = errCode(e);
    if (timeout.aborted || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') {
      return new ServiceTimeoutError({
        iface: this.iface,
        operation: call.operation,
        timeoutMs: ms,
        setting: call.timeoutSetting ?? 'CBP_HTTP_TIMEOUT_MS',
        cause: e,
      });
    }
    const reason = this.redact(code ?? (e instanceof Error ? e.message : String(e)));
    return new ServiceNetworkError({ iface: this.iface, operation: call.operation, reason, notSent: code !== undefined && NOT_SENT_CODES.has(code), cause: e });
  }

  /** Parses a success body with a contract schema, or throws a ServiceResponseError naming the fields. */
  parse<S extends z.ZodType>(schema: S, answer: JsonAnswer, operation: string): z.infer<S> {
    const r = safeParseWith(schema, answer.body);
    if (r.ok) return r.value;
    throw new ServiceResponseError({ iface: this.iface, operation, httpStatus: answer.status, issues: r.issues.map((i) => this.redact(i)) });
  }

  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.close();
  }
}

/** A path segment from an identifier, encoded so a guid can never change the path. */
export function seg(v: string): string {
  return encodeURIComponent(v);
}

export function bearer(credential: string): Record<string, string> {
  return { authorization: `Bearer ${credential}` };
}

/**
 * Waits for a shared promise, but lets one caller stop waiting when its own signal aborts; the shared work
 * goes on for the others (one caller's cancellation must not fail every caller sharing a token request).
 */
export function untilAborted<T>(shared: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return shared;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    shared.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
