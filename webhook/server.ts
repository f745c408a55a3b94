// The event receiver: the service pushes each event as a JSON body with Basic credentials and re-sends it
// until it gets a 200. So a 200 is only ever sent after the event is fsync'd to the journal; anything that
// stops that (disk error, shutdown) answers 503 and the service sends again.
//
// Defaults: path /events, body limit 1 MiB (413 above), application/json only (415), 503 while closing,
// headers within 10 s and the whole request within 30 s (408 and closed after), at most 1024 connections
// (more are dropped at accept), an idle keep-alive connection closed after 5 s. Basic credentials are checked
// before any body is read; a refused request's connection is closed rather than drained, so an
// unauthenticated sender cannot make it read a big body. Every answer to a request without valid
// credentials (401, 404, 405, OPTIONS, /healthz, 503) closes its connection: only the service's own pushes
// may hold one of the capped connections open between requests.
import { isUtf8 } from 'node:buffer';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { CbpError } from '../lib/errors.ts';
import { assertReceiverCredentials, basicAuthChecker, WWW_AUTHENTICATE } from './auth.ts';
import { repeatedKeyOf } from './keys.ts';
import { JournalUnavailableError, type JournalStatus } from './journal.ts';
import type { ReceiverMetrics } from './metrics.ts';

export const BODY_LIMIT_DEFAULT = 1024 * 1024;
export const EVENTS_PATH_DEFAULT = '/events';
/** A client must send its request line and headers within this many ms (slow-header attacks). */
export const HEADERS_TIMEOUT_MS_DEFAULT = 10_000;
/** ...and its whole request, body included, within this many ms. The fsync after it is not counted. */
export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;
export const MAX_CONNECTIONS_DEFAULT = 1024;
/**
 * An idle connection between two authenticated pushes is closed after this many ms (Node's own default;
 * fastify's 72 s let anyone hold the capped connections for over a minute each).
 */
export const KEEP_ALIVE_TIMEOUT_MS_DEFAULT = 5_000;

/** Where accepted events go. The journal in production; the benchmark's baseline passes one that discards. */
export interface EventSink {
  append(record: Buffer): Promise<void>;
  status(): JournalStatus | Record<string, unknown>;
  readonly healthy: boolean;
}

export interface ReceiverOptions {
  username: string;
  password: string;
  /** During a rotation, the password being rotated out: accepted beside `password` (CBP_WEBHOOK_PREVIOUS_PASSWORD). */
  previousPassword?: string;
  sink: EventSink;
  /** Path events are pushed to. Default /events. */
  path?: string;
  /** Largest accepted body in bytes. Default 1 MiB. */
  bodyLimit?: number;
  https?: { cert: string | Buffer; key: string | Buffer };
  logger?: Logger;
  now?: () => Date;
  /** Request line and headers must arrive within this many ms (408, connection closed). Default 10 s. */
  headersTimeoutMs?: number;
  /** The whole request must arrive within this many ms (408, connection closed). Default 30 s. */
  requestTimeoutMs?: number;
  /** An idle keep-alive connection (after an authenticated push) is closed after this many ms. Default 5 s. */
  keepAliveTimeoutMs?: number;
  /** Counts requests, latencies and refusals (webhook/metrics.ts). Default: none. */
  metrics?: ReceiverMetrics;
  /**
   * Whether events can be stored now (/readyz; a push is refused 503 when not). Default: always. startReceiver
   * passes the journal folder's check: writable, and free space above CBP_JOURNAL_MIN_FREE.
   */
  readiness?: () => { ready: boolean; reasons: string[] };
}

const closers = new WeakMap<FastifyInstance, () => void>();

/**
 * Marks a receiver as closing before app.close() is called: every new request is answered 503 from now on,
 * requests already past that point finish (their fsyncs included). app.close() does the same by itself.
 */
export function beginClose(app: FastifyInstance): void {
  closers.get(app)?.();
}

interface ParsedBody {
  raw: Buffer;
  value: Record<string, unknown>;
}

/** A pushed body the receiver cannot store as one event (answered 400; the sender must fix it). */
export class EventBodyError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_EVENT_BODY', message);
  }
}

function sendError(reply: FastifyReply, status: number, message: string): FastifyReply {
  return reply.code(status).type('application/json; charset=utf-8').send({ error: true, message });
}

/** What /healthz shows of the journal: counts and state, never a file path or a file name. */
function healthView(status: JournalStatus | Record<string, unknown>): Record<string, unknown> {
  const st = status as Partial<JournalStatus>;
  const out: Record<string, unknown> = {};
  for (const k of ['state', 'segmentBytes', 'appended', 'syncs', 'sealed'] as const) if (st[k] !== undefined) out[k] = st[k];
  // The error's code (EIO, ENOSPC...); its message names the file. The logs have the whole message.
  if ('lastError' in st) out.lastError = st.lastError ? (st.lastErrorCode ?? 'error') : null;
  return out;
}

/** An event_guid may be a string or a number (contract/events.ts accepts both); it must not be empty. */
function present(v: unknown): boolean {
  return (typeof v === 'string' && v.trim() !== '') || (typeof v === 'number' && Number.isFinite(v));
}

/** Newlines can only be whitespace in valid JSON, so blanking them keeps the body as received, on one line. */
function oneLine(raw: Buffer): Buffer {
  let copy: Buffer | null = null;
  for (let i = 0; i < raw.length; i++) {
    const b = raw[i];
    if (b === 0x0a || b === 0x0d) {
      copy ??= Buffer.from(raw);
      copy[i] = 0x20;
    }
  }
  return copy ?? raw;
}

const PREFIX = Buffer.from('{"received_at":"');
const MIDDLE = Buffer.from('","event":');
const SUFFIX = Buffer.from('}');

/** The journal line: `{"received_at":"<ISO UTC>","event":<body as received>}`. */
export function journalRecord(raw: Buffer, receivedAt: Date): Buffer {
  return Buffer.concat([PREFIX, Buffer.from(receivedAt.toISOString()), MIDDLE, oneLine(raw), SUFFIX]);
}

/**
 * Builds the receiver (nothing listens): POST and PUT on the path take events, OPTIONS on the path answers
 * 200 for the service's vetting test, GET /healthz reports the journal (liveness), GET /readyz whether events
 * can be stored now (readiness: 503 while they cannot, and pushes are then refused 503 too).
 */
export function buildReceiver(opts: ReceiverOptions): FastifyInstance {
  assertReceiverCredentials(opts.username, opts.password, opts.previousPassword);
  const eventsPath = opts.path ?? EVENTS_PATH_DEFAULT;
  const headersTimeout = opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS_DEFAULT;
  const requestTimeout = Math.max(opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT, headersTimeout);
  // Node checks both timeouts on this interval (30 s by default, which would stretch a 10 s limit to 40 s).
  const timeouts = { headersTimeout, requestTimeout, connectionsCheckingInterval: Math.max(25, Math.min(1000, Math.floor(headersTimeout / 4))) };
  const now = opts.now ?? (() => new Date());
  const check = basicAuthChecker({ username: opts.username, password: opts.password }, opts.previousPassword);
  const withPrevious = new WeakSet<FastifyRequest>();
  let previousLoggedAt = -Infinity;
  const sink = opts.sink;
  let closing = false;

  const app = Fastify({
    bodyLimit: opts.bodyLimit ?? BODY_LIMIT_DEFAULT,
    // Our own onRequest hook answers 503 while closing, in the receiver's error shape.
    return503OnClosing: false,
    logController: new LogController({ disableRequestLogging: true }),
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    requestTimeout,
    keepAliveTimeout: opts.keepAliveTimeoutMs ?? KEEP_ALIVE_TIMEOUT_MS_DEFAULT,
    ...(opts.https
      ? { https: { cert: opts.https.cert, key: opts.https.key, handshakeTimeout: headersTimeout, ...timeouts } }
      : { http: timeouts }),
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;
  app.server.headersTimeout = headersTimeout;

  closers.set(app, () => {
    closing = true;
  });
  app.addHook('preClose', async () => {
    closing = true;
  });

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_req, body, done) => {
    const raw = body as Buffer;
    if (!isUtf8(raw)) return done(new EventBodyError('the body is not valid UTF-8 JSON'), undefined);
    // A byte-order mark is not JSON; drop it from both the parse and the journal line.
    const bytes = raw[0] === 0xef && raw[1] === 0xbb && raw[2] === 0xbf ? raw.subarray(3) : raw;
    let value: unknown;
    try {
      value = JSON.parse(bytes.toString('utf8'));
    } catch (e) {
      return done(new EventBodyError(`the body is not valid JSON: ${(e as Error).message}`), undefined);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      return done(new EventBodyError('the body must be one JSON object (an event), not an array or a scalar'), undefined);
    }
    const repeated = repeatedKeyOf(bytes, value);
    if (repeated !== null) {
      return done(
        new EventBodyError(`the event has the key ${JSON.stringify(repeated)} more than once: which value counts is ambiguous (readers differ), so it is not stored; send each key once`),
        undefined,
      );
    }
    done(null, { raw: bytes, value: value as Record<string, unknown> } satisfies ParsedBody);
  });

  const metrics = opts.metrics;
  if (metrics) {
    const routeOf = (url: string | undefined) => (url === eventsPath ? 'events' : url === '/healthz' ? 'healthz' : url === '/readyz' ? 'readyz' : 'other');
    app.addHook('onResponse', async (req, reply) => {
      metrics.answered(routeOf(req.routeOptions.url), reply.statusCode, reply.elapsedTime / 1000);
    });
  }
  const readiness = opts.readiness ?? (() => ({ ready: true, reasons: [] }));

  app.addHook('onRequest', async (req, reply) => {
    if (closing) {
      reply.header('connection', 'close');
      return sendError(reply, 503, 'the receiver is shutting down; send the event again');
    }
    // Answered before any body is read, and the body is not drained afterwards: the connection closes.
    if (req.is404) {
      reply.header('connection', 'close');
      return sendError(reply, 404, `no such address: ${req.method} ${req.url.split('?')[0]}`);
    }
  });

  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    // cbp's own (the body parser's EventBodyError) carry their catalog status; fastify's carry statusCode.
    const status = err instanceof CbpError ? err.status : (err.statusCode ?? 500);
    let message = err.message;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') message = `the body is larger than the ${opts.bodyLimit ?? BODY_LIMIT_DEFAULT} byte limit`;
    else if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
      message = `Content-Type must be application/json, got ${JSON.stringify(req.headers['content-type'] ?? '(none)')}`;
    else if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') message = 'the body is empty; expected one JSON object (an event)';
    else if (status >= 500) {
      req.log.error({ err: err.message }, 'receiver error');
      message = 'internal error; the event was not stored, send it again';
    }
    if (status >= 400 && status < 500) req.log.warn({ status, reason: message }, 'event push refused');
    return sendError(reply, status >= 400 && status < 600 ? status : 500, message);
  });

  app.setNotFoundHandler((req, reply) => sendError(reply, 404, `no such address: ${req.method} ${req.url.split('?')[0]}`));

  const requireAuth = async (req: FastifyRequest, reply: FastifyReply) => {
    const match = check(req.headers.authorization);
    if (match === 'previous') withPrevious.add(req);
    if (!match) {
      // Worth an operator's attention: if the subscription's credentials and ours differ, every event is refused.
      req.log.warn({ status: 401, ip: req.ip }, 'event push refused: missing or wrong Basic credentials');
      metrics?.refused();
      reply.header('www-authenticate', WWW_AUTHENTICATE);
      // Node would read the rest of the body to keep the connection alive; close it instead.
      reply.header('connection', 'close');
      return sendError(reply, 401, 'missing or wrong Basic credentials');
    }
  };

  const receive = async (req: FastifyRequest, reply: FastifyReply) => {
    const body = req.body as ParsedBody | undefined;
    const ct = String(req.headers['content-type'] ?? '');
    if (!body || !/^application\/json\s*(;|$)/i.test(ct)) {
      // No body at all never reaches the parser; treat it like a wrong content type or an empty body.
      if (!/^application\/json\s*(;|$)/i.test(ct)) {
        return sendError(reply, 415, `Content-Type must be application/json, got ${JSON.stringify(ct || '(none)')}`);
      }
      return sendError(reply, 400, 'the body is empty; expected one JSON object (an event)');
    }
    const { event_guid: guid, event_type: type } = body.value;
    const missing = [!present(guid) && 'event_guid', !(typeof type === 'string' && type.trim() !== '') && 'event_type'].filter(Boolean);
    if (missing.length) {
      req.log.warn({ status: 400, missing }, 'event push refused: no event_guid or event_type');
      return sendError(reply, 400, `the event has no ${missing.join(' and no ')}; every event carries event_guid and event_type`);
    }
    // Never a 200 for an event that may not be stored: a folder gone or read-only, or a disk nearly full.
    const ready = readiness();
    if (!ready.ready) {
      req.log.error({ reasons: ready.reasons }, 'event push refused: the journal cannot take events now');
      reply.header('retry-after', '30');
      return sendError(reply, 503, `the receiver cannot store events now (${ready.reasons.join('; ')}); send the event again`);
    }
    try {
      await sink.append(journalRecord(body.raw, now()));
    } catch (e) {
      if (!(e instanceof JournalUnavailableError)) req.log.error({ err: (e as Error).message }, 'journal append failed');
      reply.header('retry-after', '1');
      return sendError(reply, 503, e instanceof JournalUnavailableError ? e.message : 'the event could not be stored; send it again');
    }
    // A push stored with the old password: counted, and logged once a minute at most (a rotation is done when these stop).
    if (withPrevious.has(req)) {
      metrics?.previousPassword();
      if (Date.now() - previousLoggedAt >= 60_000) {
        previousLoggedAt = Date.now();
        req.log.warn('event push accepted with CBP_WEBHOOK_PREVIOUS_PASSWORD: a subscription still holds the old password (cbp run subscriptions --force-auth)');
      }
    }
    return reply.code(200).send({ received: true, event_guid: String(body.value.event_guid) });
  };

  /**
   * A route that needs no body and no credentials answers in onRequest, before a body is read, and closes the
   * connection: an unauthenticated client must not keep one of the capped connections idle.
   */
  const bodiless = (answer: (req: FastifyRequest, reply: FastifyReply) => FastifyReply) => ({
    onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
      reply.header('connection', 'close');
      return answer(req, reply);
    },
    handler: async (_req: FastifyRequest, reply: FastifyReply) => reply,
  });

  app.route({ method: ['POST', 'PUT'], url: eventsPath, onRequest: requireAuth, handler: receive });
  app.route({
    method: 'OPTIONS',
    url: eventsPath,
    ...bodiless((_req, reply) => reply.code(200).header('allow', 'POST, PUT, OPTIONS').send({ ok: true })),
  });
  app.route({
    method: ['GET', 'DELETE', 'PATCH'],
    url: eventsPath,
    ...bodiless((req, reply) => {
      reply.header('allow', 'POST, PUT, OPTIONS');
      return sendError(reply, 405, `${req.method} is not accepted here; events are delivered with POST (or PUT)`);
    }),
  });
  app.route({
    method: 'GET',
    url: '/healthz',
    ...bodiless((_req, reply) => {
      const ok = sink.healthy && !closing;
      return reply.code(ok ? 200 : 503).send({ ok, closing, journal: healthView(sink.status()) });
    }),
  });
  // Readiness, unlike /healthz (liveness): can events be stored now? A load balancer sends pushes elsewhere on 503.
  app.route({
    method: 'GET',
    url: '/readyz',
    ...bodiless((_req, reply) => {
      const r = readiness();
      const reasons = [...(closing ? ['the receiver is shutting down'] : []), ...(sink.healthy ? [] : ['the journal is failing to write']), ...r.reasons];
      return reply.code(reasons.length ? 503 : 200).send({ ready: reasons.length === 0, reasons });
    }),
  });

  return app;
}
