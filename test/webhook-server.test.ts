import { afterAll, afterEach, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import * as net from 'node:net';
import path from 'node:path';
import { Client } from 'undici';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import {
  beginClose,
  buildReceiver,
  HEADERS_TIMEOUT_MS_DEFAULT,
  KEEP_ALIVE_TIMEOUT_MS_DEFAULT,
  MAX_CONNECTIONS_DEFAULT,
  REQUEST_TIMEOUT_MS_DEFAULT,
  type EventSink,
} from '../webhook/server.ts';
import { startReceiver, type RunningReceiver, type StartReceiverOptions } from '../webhook/start.ts';
import { assertTransport, isLoopbackHost } from '../webhook/transport.ts';
import { nodeJournalFs, openJournal, type Journal, type JournalFs } from '../webhook/journal.ts';
import { listClosedSegments } from '../lib/journal-files.ts';
import { ConfigError } from '../lib/errors.ts';
import { tempDir } from './helpers/tmp.ts';

const tmp = () => tempDir();
const USER = 'cbp-hook';
const PASS = 's3cret-pass-for-the-hook';
const auth = (u = USER, p = PASS) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

const chargebackNew = (guid: string) => ({
  event_guid: guid,
  event_timestamp: '2026-11-01T10:00:00Z',
  event_type: 'chargeback.new',
  chargeback_guid: 'cb_0123456789abcdef0123456789abcdef',
  case_number: 'C-1',
  mid: 'MID-1',
  amount: 94.76,
  currency: 'USD',
});

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

function journalLines(dir: string): Array<{ received_at: string; event: Record<string, unknown> }> {
  const names = fs.readdirSync(dir).filter((n) => n.startsWith('seg-'));
  return names.flatMap((n) =>
    fs
      .readFileSync(path.join(dir, n), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  );
}

function setup(opts: { fs?: JournalFs } = {}): { app: FastifyInstance; journal: Journal; dir: string } {
  const dir = tmp();
  const journal = openJournal({ dir, fs: opts.fs, checkIntervalMs: 0 });
  const app = buildReceiver({ username: USER, password: PASS, sink: journal });
  cleanup.push(() => journal.close());
  cleanup.push(() => app.close());
  return { app, journal, dir };
}

const post = (app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/events',
    headers: { authorization: auth(), 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });

describe('webhook receiver: what it accepts', () => {
  it('answers 200 to an event pushed with the subscription\'s Basic credentials, after journaling it', async () => {
    const { app, dir } = setup();
    const r = await post(app, chargebackNew('ev_1'));
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ received: true, event_guid: 'ev_1' });
    const [line] = journalLines(dir);
    expect(line.event).toEqual(chargebackNew('ev_1'));
    expect(line.received_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('keeps the body as received, on one line, when the service pretty-prints it', async () => {
    const { app, dir } = setup();
    const body = '{\r\n  "event_guid": "ev_pretty",\n  "event_type": "chargeback.new",\n  "amount": 12.3400000000000000001\n}';
    expect((await post(app, body)).statusCode).toBe(200);
    const raw = fs.readFileSync(path.join(dir, fs.readdirSync(dir).find((n) => n.startsWith('seg-'))!), 'utf8');
    expect(raw.split('\n').filter(Boolean)).toHaveLength(1);
    expect(raw).toContain('"amount": 12.3400000000000000001'); // bytes kept, not re-serialised
  });

  it('accepts PUT as well as POST (the delivery method is not shown)', async () => {
    const { app } = setup();
    const r = await app.inject({
      method: 'PUT',
      url: '/events',
      headers: { authorization: auth(), 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify(chargebackNew('ev_put')),
    });
    expect(r.statusCode).toBe(200);
  });

  it('accepts and journals an event type it does not know', async () => {
    const { app, dir } = setup();
    const r = await post(app, { event_guid: 'ev_refund', event_type: 'order.refund', event_timestamp: '2026-11-01 10:00:00', order_id: 'o1' });
    expect(r.statusCode).toBe(200);
    expect(journalLines(dir).map((l) => l.event.event_type)).toEqual(['order.refund']);
  });

  it('answers OPTIONS on the events path with 200 (the service\'s second vetting test)', async () => {
    const { app } = setup();
    const r = await app.inject({ method: 'OPTIONS', url: '/events' });
    expect(r.statusCode).toBe(200);
  });

  it('reports the journal on GET /healthz', async () => {
    const { app } = setup();
    await post(app, chargebackNew('ev_h'));
    const r = await app.inject({ method: 'GET', url: '/healthz' });
    expect(r.statusCode).toBe(200);
    expect(r.json()).toMatchObject({ ok: true, journal: { state: 'open', appended: 1 } });
  });
});

describe('webhook receiver: what it refuses (and stores nothing of)', () => {
  it.each([
    ['wrong password', auth(USER, 'nope')],
    ['wrong username', auth('someone', PASS)],
    ['no credentials', undefined],
    ['another scheme', 'Bearer abc'],
  ])('answers 401 with WWW-Authenticate for %s', async (_name, header) => {
    const { app, dir } = setup();
    const r = await app.inject({
      method: 'POST',
      url: '/events',
      headers: { 'content-type': 'application/json', ...(header ? { authorization: header } : {}) },
      payload: JSON.stringify(chargebackNew('ev_x')),
    });
    expect(r.statusCode).toBe(401);
    expect(r.headers['www-authenticate']).toMatch(/^Basic realm=/);
    expect(r.json()).toEqual({ error: true, message: expect.stringMatching(/credentials/) });
    expect(r.body).not.toContain(PASS);
    expect(journalLines(dir)).toEqual([]);
  });

  it('answers 415 to a body that is not application/json', async () => {
    const { app, dir } = setup();
    const r = await post(app, 'event_guid=1', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(r.statusCode).toBe(415);
    expect(r.json()).toEqual({ error: true, message: expect.stringMatching(/application\/json/) });
    const none = await app.inject({ method: 'POST', url: '/events', headers: { authorization: auth() } });
    expect(none.statusCode).toBe(415);
    expect(journalLines(dir)).toEqual([]);
  });

  it('answers 413 to a body above 1 MiB', async () => {
    const { app, dir } = setup();
    const big = JSON.stringify({ ...chargebackNew('ev_big'), pad: 'x'.repeat(1024 * 1024) });
    const r = await post(app, big);
    expect(r.statusCode).toBe(413);
    expect(r.json()).toEqual({ error: true, message: expect.stringMatching(/larger than/) });
    expect(journalLines(dir)).toEqual([]);
  });

  it('answers 400 to a body that is not valid JSON', async () => {
    const { app, dir } = setup();
    const r = await post(app, '{"event_guid": "ev_1", "event_type": ');
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ error: true, message: expect.stringMatching(/not valid JSON/) });
    expect((await post(app, '[1,2]')).statusCode).toBe(400);
    expect((await post(app, '')).statusCode).toBe(400);
    expect((await post(app, Buffer.from([0x7b, 0xff, 0x7d]))).statusCode).toBe(400);
    expect(journalLines(dir)).toEqual([]);
  });

  it('answers 400 to an event without event_guid or event_type', async () => {
    const { app, dir } = setup();
    const noGuid = await post(app, { event_type: 'chargeback.new' });
    expect(noGuid.statusCode).toBe(400);
    expect(noGuid.json().message).toMatch(/event_guid/);
    const noType = await post(app, { event_guid: 'ev_1', event_type: ' ' });
    expect(noType.statusCode).toBe(400);
    expect(noType.json().message).toMatch(/event_type/);
    expect(journalLines(dir)).toEqual([]);
  });
});

describe('webhook receiver: repeated keys', () => {
  it.each([
    ['event_guid', '{"event_guid":"A","event_type":"chargeback.new","event_guid":"B"}'],
    ['event_type', '{"event_guid":"A","event_type":"chargeback.new","event_type":"chargeback.result"}'],
    ['event_timestamp', '{"event_guid":"A","event_type":"chargeback.new","event_timestamp":"2026-11-01T10:00:00Z","event_timestamp":"2026-11-02T10:00:00Z"}'],
    ['amount', '{"event_guid":"A","event_type":"chargeback.new","amount":1,"amount":2}'],
    ['event_guid', '{"event\\u005fguid":"A","event_type":"chargeback.new","event_guid":"B"}'],
  ])('answers 400 naming %s to an event that repeats it at the top level (readers would disagree on its value)', async (key, body) => {
    const { app, dir } = setup();
    const r = await post(app, body);
    expect(r.statusCode).toBe(400);
    expect(r.json()).toEqual({ error: true, message: expect.stringContaining(`"${key}"`) });
    expect(r.json().message).toMatch(/more than once/);
    expect(journalLines(dir)).toEqual([]);
  });

  it('accepts an event whose nested values repeat a key, journaling it as received', async () => {
    const { app, dir } = setup();
    const body = '{"event_guid":"A","event_type":"chargeback.new","data":{"x":1,"x":2},"items":[{"event_guid":"i1"},{"event_guid":"i2"}],"note":"\\",\\"event_guid\\":"}';
    const r = await post(app, body);
    expect(r.statusCode).toBe(200);
    expect(r.json()).toEqual({ received: true, event_guid: 'A' });
    expect(fs.readFileSync(path.join(dir, fs.readdirSync(dir).find((n) => n.startsWith('seg-'))!), 'utf8')).toContain(body);
  });
});

/** A raw connection to a running receiver, recording what comes back and when it closes. */
function rawConnection(url: string) {
  const u = new URL(url);
  const sock = net.connect(Number(u.port), u.hostname);
  sock.setMaxListeners(0);
  let response = '';
  sock.on('data', (d) => (response += d));
  sock.on('error', () => {}); // EPIPE/ECONNRESET once the server has closed: expected here
  const closed = new Promise<void>((r) => sock.on('close', () => r()));
  const connected = new Promise<void>((r) => sock.once('connect', () => r()));
  return { sock, closed, connected, response: () => response, isClosed: () => sock.destroyed || sock.closed };
}

/** Offers `total` bytes of body after `head`, as fast as the server takes them, until it closes. */
async function offerBody(c: ReturnType<typeof rawConnection>, head: string, total: number, chunked: boolean): Promise<void> {
  c.sock.write(head);
  const data = Buffer.alloc(64 * 1024, 0x20);
  const chunk = chunked ? Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]) : data;
  for (let sent = 0; sent < total && !c.isClosed(); sent += data.length) {
    if (!c.sock.write(chunk)) await Promise.race([new Promise((r) => c.sock.once('drain', r)), c.closed]);
  }
}

describe('webhook receiver: hardening', () => {
  const running: RunningReceiver[] = [];
  afterEach(async () => {
    for (const r of running.splice(0)) await r.close();
  });
  const start = async (o: Partial<StartReceiverOptions> = {}) => {
    const rx = await startReceiver({ username: USER, password: PASS, journalDir: tmp(), journal: { checkIntervalMs: 0 }, ...o });
    running.push(rx);
    return rx;
  };
  /** Bytes the server read from each connection it accepted. */
  const readBy = (rx: RunningReceiver) => {
    const sockets: net.Socket[] = [];
    rx.app.server.on('connection', (s: net.Socket) => sockets.push(s));
    return () => sockets.map((s) => s.bytesRead);
  };

  it.each([
    ['a password shorter than 16 characters', USER, 'short-pass-15ch', /too short \(15 characters, at least 16\)/],
    ['a password equal to the username', 'cbp-hook-user-long', 'cbp-hook-user-long', /same as CBP_WEBHOOK_USERNAME/],
    ['no password', USER, '', /too short/],
  ])('refuses to start with %s, saying how to make a good one (ConfigError) and touching no journal', async (_name, username, password, why) => {
    const dir = path.join(tmp(), 'journal');
    const sink: EventSink = { append: async () => {}, status: () => ({}), healthy: true };
    expect(() => buildReceiver({ username, password, sink })).toThrow(ConfigError);
    const err = await startReceiver({ username, password, journalDir: dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(why);
    expect((err as Error).message).toContain('openssl rand -base64 24');
    if (password) expect((err as Error).message).not.toContain(password);
    expect(fs.existsSync(dir)).toBe(false);
  });

  it('sets a 10 s header timeout, a 30 s whole-request timeout, a 5 s keep-alive and a 1024-connection cap by default', async () => {
    const rx = await start();
    expect(rx.app.server.keepAliveTimeout).toBe(KEEP_ALIVE_TIMEOUT_MS_DEFAULT);
    expect(KEEP_ALIVE_TIMEOUT_MS_DEFAULT).toBe(5_000);
    expect(rx.app.server.headersTimeout).toBe(HEADERS_TIMEOUT_MS_DEFAULT);
    expect(HEADERS_TIMEOUT_MS_DEFAULT).toBe(10_000);
    expect(rx.app.server.requestTimeout).toBe(REQUEST_TIMEOUT_MS_DEFAULT);
    expect(REQUEST_TIMEOUT_MS_DEFAULT).toBe(30_000);
    expect(rx.app.server.maxConnections).toBe(MAX_CONNECTIONS_DEFAULT);
    expect(MAX_CONNECTIONS_DEFAULT).toBe(1024);
  });

  it('answers 408 and closes a connection whose headers never finish', async () => {
    const rx = await start({ headersTimeoutMs: 200, requestTimeoutMs: 400 });
    const c = rawConnection(rx.url);
    c.sock.write('POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: appl'); // and nothing more
    await c.closed;
    expect(c.response()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('answers 408 and closes a connection whose body stalls, storing nothing', async () => {
    const rx = await start({ headersTimeoutMs: 200, requestTimeoutMs: 400 });
    const c = rawConnection(rx.url);
    const body = JSON.stringify(chargebackNew('ev_stall'));
    c.sock.write(`POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth()}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`);
    await c.closed;
    expect(c.response()).toMatch(/^HTTP\/1\.1 408 /);
    expect(journalLines(rx.journalDir)).toEqual([]);
  });

  it('drops connections beyond the cap, says so in its log, and serves the ones it holds', async () => {
    const logged: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const rx = await start({ maxConnections: 2, logger });
    const a = rawConnection(rx.url);
    const b = rawConnection(rx.url);
    await Promise.all([a.connected, b.connected]);
    // Both are accepted (counted) before the third arrives.
    for (let i = 0; i < 200; i++) {
      const n = await new Promise<number>((r) => rx.app.server.getConnections((_e, k) => r(k)));
      if (n === 2) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    const third = rawConnection(rx.url);
    await third.closed;
    expect(third.response()).toBe('');
    expect(logged).toContainEqual(expect.objectContaining({ level: 40, maxConnections: 2, dropped: 1, msg: expect.stringContaining('CBP_WEBHOOK_MAX_CONNECTIONS') }));
    a.sock.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    for (let i = 0; i < 200 && !a.response().includes('\r\n\r\n'); i++) await new Promise((r) => setTimeout(r, 5));
    expect(a.response()).toMatch(/^HTTP\/1\.1 200 /);
    a.sock.destroy();
    b.sock.destroy();
  });

  const UNAUTHENTICATED: Array<[string, string, number]> = [
    ['GET /healthz', 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', 200],
    ['OPTIONS /events (the vetting test)', 'OPTIONS /events HTTP/1.1\r\nHost: x\r\n\r\n', 200],
    ['GET /nowhere (404)', 'GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n', 404],
    ['GET /events (405)', 'GET /events HTTP/1.1\r\nHost: x\r\n\r\n', 405],
    ['POST /events without credentials or body (401)', 'POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', 401],
  ];
  const openConnections = (rx: RunningReceiver) => new Promise<number>((r) => rx.app.server.getConnections((_e, k) => r(k)));

  it.each(UNAUTHENTICATED)('closes the connection after answering %s, so an unauthenticated client cannot keep it idle', async (_name, request, status) => {
    const rx = await start();
    const c = rawConnection(rx.url);
    c.sock.write(request); // HTTP/1.1: keep-alive unless the server says otherwise
    await c.closed; // closed by the server: this client never ends or destroys its socket
    expect(c.response()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(c.response().toLowerCase()).toContain('connection: close');
  });

  it('serves an authenticated push while the cap was filled by unauthenticated clients it has answered', async () => {
    const rx = await start({ maxConnections: 5 });
    const idle = Array.from({ length: 5 }, (_, i) => {
      const c = rawConnection(rx.url);
      c.sock.write(UNAUTHENTICATED[i % UNAUTHENTICATED.length][1]);
      return c;
    });
    await Promise.all(idle.map((c) => c.closed));
    expect(idle.map((c) => c.response().slice(0, 9))).toEqual(Array(5).fill('HTTP/1.1 '));
    // The server's side of each socket closes a moment after the client's.
    while ((await openConnections(rx)) > 0) await new Promise((r) => setTimeout(r, 5));
    const u = new URL(rx.url);
    const client = new Client(u.origin);
    cleanup.push(() => client.close());
    const res = await client.request({
      method: 'POST',
      path: u.pathname,
      headers: { authorization: auth(), 'content-type': 'application/json' },
      body: JSON.stringify(chargebackNew('ev_after_idle')),
    });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    expect(journalLines(rx.journalDir).map((l) => l.event.event_guid)).toEqual(['ev_after_idle']);
  });

  it('keeps an authenticated push\'s connection open for the next push, and closes it once idle for the keep-alive timeout', async () => {
    const rx = await start({ keepAliveTimeoutMs: 200 });
    const c = rawConnection(rx.url);
    const push = (guid: string) => {
      const body = JSON.stringify(chargebackNew(guid));
      c.sock.write(`POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth()}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    };
    const answers = () => c.response().match(/HTTP\/1\.1 200 /g)?.length ?? 0;
    push('ev_k1');
    while (answers() < 1) await new Promise((r) => setTimeout(r, 5));
    push('ev_k2');
    while (answers() < 2) await new Promise((r) => setTimeout(r, 5));
    expect(c.response().toLowerCase()).not.toContain('connection: close');
    await c.closed; // by the server, after 200 ms idle
    expect(journalLines(rx.journalDir).map((l) => l.event.event_guid)).toEqual(['ev_k1', 'ev_k2']);
  });

  it.each([
    ['POST /events without credentials', 'POST /events', '', 401, false],
    ['POST /events with wrong credentials (chunked)', 'POST /events', `Authorization: ${auth(USER, 'wrong-password-of-16+')}\r\n`, 401, true],
    ['POST to an unknown path (chunked)', 'POST /elsewhere', '', 404, true],
    ['OPTIONS with a body (chunked)', 'OPTIONS /events', '', 200, true],
  ])('answers %s before reading its big body, and closes the connection instead of draining it', async (_name, line, extra, status, chunked) => {
    const rx = await start();
    const read = readBy(rx);
    const c = rawConnection(rx.url);
    const total = 64 * 1024 * 1024;
    const length = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${total}`;
    const head = `${line} HTTP/1.1\r\nHost: x\r\n${extra}Content-Type: application/json\r\n${length}\r\n\r\n`;
    await offerBody(c, head, total, chunked);
    await c.closed;
    expect(c.response()).toMatch(new RegExp(`^HTTP/1\\.1 ${status} `));
    expect(c.response().toLowerCase()).toContain('connection: close');
    // What was in flight when the answer went out, not the body: far below the 1 MiB body limit.
    expect(Math.max(...read())).toBeLessThan(512 * 1024);
    expect(journalLines(rx.journalDir)).toEqual([]);
  });

  it('shows no file path or file name on /healthz, even after a journal error that names one', async () => {
    let failing = true;
    const flaky: JournalFs = {
      ...nodeJournalFs,
      async datasync(fd) {
        if (failing) throw Object.assign(new Error(`EIO: i/o error, fdatasync '/secret/place/seg-0000000001.ndjson'`), { code: 'EIO' });
        return nodeJournalFs.datasync(fd);
      },
    };
    const rx = await start({ journal: { fs: flaky, checkIntervalMs: 0 } });
    const u = new URL(rx.url);
    const post = (guid: string) =>
      fetch(rx.url, { method: 'POST', headers: { authorization: auth(), 'content-type': 'application/json' }, body: JSON.stringify(chargebackNew(guid)) });
    expect((await post('ev_1')).status).toBe(503);
    const broken = await fetch(`${u.origin}/healthz`);
    expect(broken.status).toBe(503);
    const text = await broken.text();
    expect(JSON.parse(text)).toMatchObject({ ok: false, journal: { state: 'broken', lastError: 'EIO' } });
    failing = false;
    expect((await post('ev_2')).status).toBe(200);
    const fine = await (await fetch(`${u.origin}/healthz`)).text();
    expect(JSON.parse(fine)).toMatchObject({ ok: true, journal: { state: 'open', appended: 1, lastError: null } });
    for (const t of [text, fine]) {
      expect(t).not.toContain(rx.journalDir);
      expect(t).not.toContain('/secret');
      expect(t).not.toMatch(/seg-|"dir"|"segment"/);
    }
  });

  it('refuses plain http on an address other than loopback unless a TLS proxy is declared in front', async () => {
    const dir = path.join(tmp(), 'journal');
    const err = await startReceiver({ username: USER, password: PASS, journalDir: dir, host: '0.0.0.0' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).toMatch(/CBP_WEBHOOK_TLS_CERT/);
    expect((err as Error).message).toMatch(/--behind-tls-proxy/);
    expect(fs.existsSync(dir)).toBe(false);
    expect(() => assertTransport('0.0.0.0', false, true)).not.toThrow();
    expect(() => assertTransport('192.0.2.10', true, false)).not.toThrow();
    expect(() => assertTransport('::', false, false)).toThrow(ConfigError);
    expect(() => assertTransport('receiver.example.com', false, false)).toThrow(ConfigError);
    for (const h of ['127.0.0.1', '127.8.9.10', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1', '0:0:0:0:0:0:0:1']) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '::ffff:10.0.0.1']) expect(isLoopbackHost(h), h).toBe(false);
  });
});

describe('webhook receiver: durability before acknowledgement', () => {
  it('answers 503 when the journal cannot sync, so the service sends the event again', async () => {
    let failing = true;
    const flaky: JournalFs = {
      ...nodeJournalFs,
      async datasync(fd) {
        if (failing) throw Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });
        return nodeJournalFs.datasync(fd);
      },
    };
    const { app, journal, dir } = setup({ fs: flaky });
    const r = await post(app, chargebackNew('ev_lost'));
    expect(r.statusCode).toBe(503);
    expect(r.json()).toEqual({ error: true, message: expect.stringMatching(/send it again/) });
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(503);
    // Re-sent once the disk is back: now acknowledged and durable, and the failed attempt left nothing.
    failing = false;
    expect((await post(app, chargebackNew('ev_lost'))).statusCode).toBe(200);
    await journal.close();
    expect(journalLines(dir).map((l) => l.event.event_guid)).toEqual(['ev_lost']);
    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(503);
  });

  it('does not answer before the fsync completes', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let syncs = 0;
    const slow: JournalFs = {
      ...nodeJournalFs,
      async datasync(fd) {
        syncs++;
        await gate;
        return nodeJournalFs.datasync(fd);
      },
    };
    const { app } = setup({ fs: slow });
    let answered = false;
    const pending = post(app, chargebackNew('ev_slow')).then((r) => {
      answered = true;
      return r;
    });
    for (let i = 0; i < 100 && syncs === 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(syncs).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    expect(answered).toBe(false);
    release();
    expect((await pending).statusCode).toBe(200);
  });

  it('shares fsyncs among concurrent requests (group commit)', async () => {
    let syncs = 0;
    const counting: JournalFs = {
      ...nodeJournalFs,
      async datasync(fd) {
        syncs++;
        await new Promise((r) => setTimeout(r, 20)); // a slow disk makes batching visible
        return nodeJournalFs.datasync(fd);
      },
    };
    const { app, dir } = setup({ fs: counting });
    const N = 40;
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => post(app, chargebackNew(`ev_${i}`))));
    expect(answers.every((a) => a.statusCode === 200)).toBe(true);
    expect(syncs).toBeLessThan(N);
    expect(journalLines(dir)).toHaveLength(N);
  });

  it('answers 503 once closing starts while finishing the request whose fsync is in flight', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let syncs = 0;
    const slow: JournalFs = {
      ...nodeJournalFs,
      async datasync(fd) {
        syncs++;
        await gate;
        return nodeJournalFs.datasync(fd);
      },
    };
    const { app, dir, journal } = setup({ fs: slow });
    const inFlight = post(app, chargebackNew('ev_inflight'));
    for (let i = 0; i < 100 && syncs === 0; i++) await new Promise((r) => setTimeout(r, 5));
    beginClose(app);
    const late = await post(app, chargebackNew('ev_late'));
    expect(late.statusCode).toBe(503);
    expect(late.json()).toEqual({ error: true, message: expect.stringMatching(/shutting down/) });
    release();
    expect((await inFlight).statusCode).toBe(200);
    await journal.close();
    expect(journalLines(dir).map((l) => l.event.event_guid)).toEqual(['ev_inflight']);
  });
});

describe('webhook receiver on a socket', () => {
  let rx: RunningReceiver | undefined;
  afterAll(async () => {
    await rx?.close();
  });

  it('shuts down gracefully: the request in flight gets its 200, the segment is sealed, the lock released', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    let syncs = 0;
    const slow: JournalFs = {
      ...nodeJournalFs,
      async datasync(fd) {
        syncs++;
        await gate;
        return nodeJournalFs.datasync(fd);
      },
    };
    const dir = tmp();
    rx = await startReceiver({ username: USER, password: PASS, journalDir: dir, port: 0, journal: { fs: slow, checkIntervalMs: 0 } });
    expect(rx.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/events$/);
    const u = new URL(rx.url);
    const client = new Client(u.origin, { pipelining: 2 });
    cleanup.push(() => client.close());
    const send = (guid: string) =>
      client
        .request({
          method: 'POST',
          path: u.pathname,
          headers: { authorization: auth(), 'content-type': 'application/json' },
          body: JSON.stringify(chargebackNew(guid)),
        })
        .then(async (r) => ({ status: r.statusCode, body: (await r.body.json()) as Record<string, unknown> }));
    const first = send('ev_a');
    for (let i = 0; i < 200 && syncs === 0; i++) await new Promise((r) => setTimeout(r, 5));
    const closed = rx.close();
    // Pipelined on the same busy connection: it arrives while closing.
    const second = send('ev_b').catch((e: Error) => ({ status: 0, body: { error: e.message } }));
    await new Promise((r) => setTimeout(r, 50));
    release();
    expect((await first).status).toBe(200);
    const s = await second;
    expect([503, 0]).toContain(s.status); // 503, or the socket closed under it: never a 200 after close
    await closed;
    expect(listClosedSegments(dir)).toHaveLength(1);
    expect(fs.existsSync(path.join(dir, 'receiver.lock'))).toBe(false);
    expect(journalLines(dir).map((l) => l.event.event_guid)).toEqual(['ev_a']);
  });
});
