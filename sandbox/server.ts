// The sandbox server: one fastify instance serving the four interfaces under prefixes that mirror their
// production bases (/auth/v1, /events/v1, /orders/v1 and /orders/stage, /reporting), ping on the host
// root (/ping/v1/{event_type}), and the administration API under /_sandbox. buildSandbox() builds it
// (for inject tests); startSandbox() also listens and, with realtime, lets real time drive the clock.
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { toIsoUtc } from '../contract/index.ts';
import { createClock } from './clock.ts';
import { createFaults, type InterfaceName } from './faults.ts';
import { generateWorld } from './generate.ts';
import { createJwtSigner } from './jwt.ts';
import { adminRoutes } from './routes/admin.ts';
import { authRoutes } from './routes/auth.ts';
import { fail } from './routes/common.ts';
import { eventsRoutes, pingHandler, tokenGuard } from './routes/events.ts';
import { ordersRoutes } from './routes/orders.ts';
import { reportingRoutes } from './routes/reporting.ts';
import { DEFAULT_SCENARIO, loadScenario, type Scenario } from './scenario.ts';
import { createState, DEFAULT_CREDENTIALS, type SandboxCredentials, type SandboxState } from './state.ts';
import { scheduleWorld } from './timeline.ts';
import type { World } from './world.ts';

declare module 'fastify' {
  interface FastifyInstance {
    sandbox: SandboxState;
  }
}

export interface SandboxOptions {
  /** Seed of the generated world and of fault rolls. Default: the scenario's seed, else 42. */
  seed?: number;
  /** Clock start (ISO date or date-time). Default: the scenario's start (the world's start). */
  start?: string;
  scenario?: Scenario;
  scenarioFile?: string;
  /** A ready-made world (tests); skips generation. */
  world?: World;
  credentials?: Partial<SandboxCredentials>;
  /** Lifetime of a token, in REAL seconds. Default 300. */
  tokenTtlSeconds?: number;
  /** Real time in seconds as the token interface reads it (tests move it to expire tokens). Default Date.now. */
  tokenClock?: () => number;
  /** Timeout of one webhook request, in ms. Default 5000. */
  deliveryTimeoutMs?: number;
  /** Let real time drive the clock (a timer advancing it). Default false: only POST /_sandbox/clock moves it. */
  realtime?: boolean;
  /** Sandbox seconds per real second when realtime. Default 1. */
  realtimeSpeed?: number;
  /** How often the realtime timer moves the clock, in real ms. Default 1000. */
  realtimeTickMs?: number;
  host?: string;
  port?: number;
  logger?: FastifyBaseLogger | boolean;
}

export const DEFAULT_TOKEN_TTL_SECONDS = 300;
export const DEFAULT_DELIVERY_TIMEOUT_MS = 5000;
export const DEFAULT_SEED = 42;
/** Clock start when neither the options nor the scenario give one: fixed, so runs repeat. */
export const DEFAULT_START = '2026-01-01T00:00:00Z';

export interface SandboxBaseUrls {
  auth: string;
  events: string;
  orders: string;
  ordersStage: string;
  reporting: string;
}

export interface RunningSandbox {
  baseUrls: SandboxBaseUrls;
  admin: string;
  credentials: SandboxCredentials;
  origin: string;
  state: SandboxState;
  app: FastifyInstance;
  close(): Promise<void>;
}

export const PREFIXES = {
  auth: '/auth/v1',
  events: '/events/v1',
  orders: '/orders/v1',
  ordersStage: '/orders/stage',
  reporting: '/reporting',
  admin: '/_sandbox',
} as const;

function interfaceOf(url: string): InterfaceName | undefined {
  if (url.startsWith('/auth/')) return 'auth';
  if (url.startsWith('/events/') || url.startsWith('/ping/')) return 'events';
  if (url.startsWith('/orders/')) return 'orders';
  if (url.startsWith('/reporting/')) return 'reporting';
  return undefined;
}

function makeWorld(opts: SandboxOptions): World {
  if (opts.world) return opts.world;
  const scenario = opts.scenario ?? (opts.scenarioFile ? loadScenario(opts.scenarioFile) : DEFAULT_SCENARIO);
  const seed = opts.seed ?? scenario.seed ?? DEFAULT_SEED;
  const start = opts.start ?? scenario.start ?? DEFAULT_START;
  return generateWorld({ seed, start, scenario });
}

/** Builds the sandbox (nothing listens): the fastify instance, with its state as `app.sandbox`. */
export async function buildSandbox(opts: SandboxOptions = {}): Promise<FastifyInstance> {
  const world = makeWorld(opts);
  const startIso = toIsoUtc(opts.start ?? world.start, true);
  if (!startIso) throw new Error(`sandbox start ${JSON.stringify(opts.start ?? world.start)} is not an ISO 8601 date or date-time`);
  const clock = createClock(Date.parse(startIso));
  const seed = opts.seed ?? world.seed ?? DEFAULT_SEED;
  const state = createState({
    world,
    clock,
    faults: createFaults(seed),
    jwt: createJwtSigner({ ttlSeconds: opts.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS, nowSeconds: opts.tokenClock }),
    credentials: { ...DEFAULT_CREDENTIALS, ...definedOnly(opts.credentials ?? {}) },
    deliveryTimeoutMs: opts.deliveryTimeoutMs ?? DEFAULT_DELIVERY_TIMEOUT_MS,
  });
  scheduleWorld(state);

  let realtime = false;
  let timer: NodeJS.Timeout | undefined;

  const app = Fastify({
    logger: opts.logger ?? false,
    routerOptions: { ignoreTrailingSlash: true },
    forceCloseConnections: true,
  } as Parameters<typeof Fastify>[0]) as unknown as FastifyInstance;
  app.decorate('sandbox', state);

  // JSON bodies are parsed leniently (an empty body is no body, as on the token request); any other
  // content type is kept as text so each interface can answer its own error for it.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    try {
      done(null, JSON.parse(text));
    } catch (e) {
      // JSON.parse's own message quotes the body, which may hold a password: only the position is told.
      const at = /position (\d+)/.exec((e as Error).message)?.[1];
      const err = new Error(`the body is not valid JSON${at === undefined ? '' : ` (at character ${at})`}: send a JSON object`) as Error & { statusCode: number };
      err.statusCode = 400;
      done(err, undefined);
    }
  });
  app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, String(body)));

  app.setErrorHandler((err: Error & { statusCode?: number }, _req, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500;
    return fail(reply, status, status === 500 ? 'internal error' : err.message);
  });
  app.setNotFoundHandler((req, reply) => fail(reply, 404, `no such route: ${req.method} ${req.url.split('?')[0]}`));

  // Every answer's HTTP Date is the sandbox clock, as a real service's Date is its own clock: what a report
  // holds is the data known at that instant, and clients judge completeness by it (Node would send the real
  // time). Taken when the request arrives, before any data is read: never later than what the answer shows.
  app.addHook('onRequest', async (_req, reply) => {
    reply.header('date', new Date(state.clock.now()).toUTCString());
  });

  app.addHook('onRequest', async (req, reply) => {
    const iface = interfaceOf(req.url);
    if (!iface) return;
    const d = state.faults.decide(iface, req.method, req.url.split('?')[0]);
    if (d.latencyMs > 0) await new Promise((r) => setTimeout(r, d.latencyMs));
    if (d.kind === 'drop') {
      reply.hijack();
      req.raw.socket?.destroy();
      return;
    }
    if (d.kind === 'tooMany') {
      reply.header('retry-after', String(d.retryAfterSeconds));
      return fail(reply, 429, `too many requests (fault injection): retry after ${d.retryAfterSeconds} s`);
    }
    if (d.kind === 'error') return fail(reply, d.status, `injected fault: ${d.status}`);
  });

  await app.register(authRoutes(state), { prefix: PREFIXES.auth });
  await app.register(eventsRoutes(state), { prefix: PREFIXES.events });
  await app.register(ordersRoutes(state), { prefix: PREFIXES.orders });
  await app.register(ordersRoutes(state), { prefix: PREFIXES.ordersStage });
  await app.register(reportingRoutes(state), { prefix: PREFIXES.reporting });
  // One public client calls ping at /ping/v1/{event_type} on the host root (service-notes): serve both.
  await app.register(
    async (a) => {
      a.addHook('preHandler', tokenGuard(state));
      a.get('/ping/v1/:event_type', pingHandler(state));
    },
  );
  await app.register(adminRoutes(state, { realtime: () => realtime }), { prefix: PREFIXES.admin });

  if (opts.realtime) {
    realtime = true;
    const speed = opts.realtimeSpeed ?? 1;
    let last = Date.now();
    let busy = false;
    timer = setInterval(() => {
      if (busy) return;
      const nowReal = Date.now();
      const delta = (nowReal - last) * speed;
      last = nowReal;
      busy = true;
      state.clock
        .advanceTo(state.clock.now() + delta)
        .catch((e) => app.log.error({ err: e }, 'realtime clock move failed'))
        .finally(() => {
          busy = false;
        });
    }, opts.realtimeTickMs ?? 1000);
    timer.unref();
  }
  app.addHook('onClose', async () => {
    if (timer) clearInterval(timer);
    await state.clock.settle();
  });
  return app;
}

function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')) as Partial<T>;
}

/** Builds the sandbox and listens (loopback, port 0 unless told otherwise). */
export async function startSandbox(opts: SandboxOptions = {}): Promise<RunningSandbox> {
  const app = await buildSandbox(opts);
  await app.listen({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0 });
  const addr = app.server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const origin = `http://${host}:${addr.port}`;
  return {
    baseUrls: {
      auth: origin + PREFIXES.auth,
      events: origin + PREFIXES.events,
      orders: origin + PREFIXES.orders,
      ordersStage: origin + PREFIXES.ordersStage,
      reporting: origin + PREFIXES.reporting,
    },
    admin: origin + PREFIXES.admin,
    credentials: { ...app.sandbox.credentials },
    origin,
    state: app.sandbox,
    app,
    close: () => app.close(),
  };
}
