// The receiver's metrics and readiness: /metrics on an address of its own (never the public port), requests
// by status, the acknowledgement latency, refused credentials, the journal's backlog and disk; /readyz and a
// push answered 503, never 200, while the journal folder is gone or its disk is below CBP_JOURNAL_MIN_FREE.
import * as fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { buildReceiver } from '../webhook/server.ts';
import { startReceiver, type RunningReceiver } from '../webhook/start.ts';
import { openJournal } from '../webhook/journal.ts';
import { createReceiverMetrics } from '../webhook/metrics.ts';
import { parseMetricsAddr } from '../lib/metrics-addr.ts';
import { journalReadiness } from '../lib/journal-space.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry } from './helpers/cbp-cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CBP = cbpEntry();
const USER = 'cbp-hook';
const PASS = 's3cret-pass-for-the-hook';
const auth = (p = PASS) => `Basic ${Buffer.from(`${USER}:${p}`).toString('base64')}`;
const event = (guid: string) => JSON.stringify({ event_guid: guid, event_type: 'chargeback.new' });

const running: RunningReceiver[] = [];
afterEach(async () => {
  for (const r of running.splice(0)) await r.close();
});

/** The value of one sample in a text exposition, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function cbp(args: string[], env: Record<string, string> = {}, cwd = ROOT) {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CBP_'))) as Record<string, string>;
  return spawnSync(process.execPath, [CBP, ...args], { cwd, env: { ...base, ...env }, encoding: 'utf8', timeout: 60_000 });
}

/** A raw keep-alive connection that has pushed one event and read its 200: the receiver keeps it open. */
async function pushedConnection(url: string, guid: string): Promise<net.Socket> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  const body = event(guid);
  socket.write(
    `POST /events HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${auth()}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: keep-alive\r\n\r\n${body}`,
  );
  const head = await new Promise<string>((resolve, reject) => {
    let got = '';
    const onData = (d: Buffer) => {
      got += d.toString();
      const end = got.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? NaN);
      if (end >= 0 && got.length >= end + 4 + length) {
        socket.off('data', onData);
        resolve(got);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
  expect(head).toMatch(/^HTTP\/1\.1 200 /);
  expect(head).not.toMatch(/^connection: close/im);
  return socket;
}

/** Closes a client socket and waits until it is closed on this side. */
function closeSocket(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    socket.once('close', () => resolve());
    socket.end();
  });
}

describe('receiver metrics', () => {
  it('counts requests by status, refused credentials and accepted pushes in the acknowledgement histogram', async () => {
    const dir = tempDir();
    const journal = openJournal({ dir, checkIntervalMs: 0 });
    const metrics = createReceiverMetrics({ journalDir: dir, minFreeBytes: 0 });
    const app = buildReceiver({ username: USER, password: PASS, sink: journal, metrics });
    try {
      const headers = { authorization: auth(), 'content-type': 'application/json' };
      expect((await app.inject({ method: 'POST', url: '/events', headers, payload: event('g1') })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/events', headers, payload: event('g2') })).statusCode).toBe(200);
      expect((await app.inject({ method: 'POST', url: '/events', headers: { ...headers, authorization: auth('wrong-password-123') }, payload: event('g3') })).statusCode).toBe(401);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      const text = await metrics.registry.metrics();
      expect(sample(text, 'cbp_webhook_requests_total{route="events",status="200"}')).toBe(2);
      expect(sample(text, 'cbp_webhook_requests_total{route="events",status="401"}')).toBe(1);
      expect(sample(text, 'cbp_webhook_requests_total{route="healthz",status="200"}')).toBe(1);
      expect(sample(text, 'cbp_webhook_auth_refused_total')).toBe(1);
      expect(sample(text, 'cbp_webhook_ack_seconds_count')).toBe(2);
      expect(sample(text, 'cbp_journal_ready')).toBe(1);
      expect(sample(text, 'cbp_journal_waiting_segments')).toBe(0);
    } finally {
      await app.close();
      await journal.close();
    }
    // Sealed on close: one segment waiting for ingest, with its bytes.
    const after = await createReceiverMetrics({ journalDir: dir, minFreeBytes: 0 }).registry.metrics();
    expect(sample(after, 'cbp_journal_waiting_segments')).toBe(1);
    expect(sample(after, 'cbp_journal_waiting_bytes')).toBeGreaterThan(0);
  });

  it('serves /metrics on its own address, not on the public port', async () => {
    const dir = tempDir();
    const rx = await startReceiver({ username: USER, password: PASS, journalDir: dir, port: 0, metricsAddr: '127.0.0.1:0', journal: { checkIntervalMs: 0 } });
    running.push(rx);
    expect(rx.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(rx.metricsUrl!).port).not.toBe(new URL(rx.url).port);
    const pushed = await fetch(rx.url, { method: 'POST', headers: { authorization: auth(), 'content-type': 'application/json' }, body: event('m1') });
    expect(pushed.status).toBe(200);
    const res = await fetch(rx.metricsUrl!);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(sample(text, 'cbp_webhook_requests_total{route="events",status="200"}')).toBe(1);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    // The public port has no /metrics.
    expect((await fetch(new URL('/metrics', rx.url))).status).toBe(404);
  });

  it('counts the connections open to the public port: 2 held by keep-alive clients, then 1, then 0', async () => {
    const dir = tempDir();
    // Idle connections are kept long enough for the test to count them itself.
    const rx = await startReceiver({ username: USER, password: PASS, journalDir: dir, port: 0, metricsAddr: '127.0.0.1:0', keepAliveTimeoutMs: 120_000, journal: { checkIntervalMs: 0 } });
    running.push(rx);
    const open = async () => sample(await (await fetch(rx.metricsUrl!)).text(), 'cbp_webhook_open_connections');
    // The server notices a client's close a moment after the client does: read again until it has (the test's own
    // timeout is the bound).
    const settled = async (want: number) => {
      let n = await open();
      while (n !== want) {
        await new Promise((r) => setTimeout(r, 10));
        n = await open();
      }
      return n;
    };
    expect(await open()).toBe(0);
    const a = await pushedConnection(rx.url, 'c1');
    const b = await pushedConnection(rx.url, 'c2');
    // The scrapes go to the metrics address: they are not counted.
    expect(await open()).toBe(2);
    await closeSocket(a);
    expect(await settled(1)).toBe(1);
    await closeSocket(b);
    expect(await settled(0)).toBe(0);
  });

  it('reads a metrics address as host:port or off, and refuses anything else', () => {
    expect(parseMetricsAddr('127.0.0.1:9787')).toEqual({ host: '127.0.0.1', port: 9787 });
    expect(parseMetricsAddr('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseMetricsAddr('off')).toBeNull();
    expect(() => parseMetricsAddr('9787')).toThrow(/host:port/);
    expect(() => parseMetricsAddr('localhost:70000')).toThrow(/host:port/);
  });

  it("cbp webhook refuses a metrics address on the receiver's own port (exit 2)", () => {
    const r = cbp(['webhook', '--port', '18787', '--metrics-addr', '127.0.0.1:18787', '--journal', tempDir()], { CBP_WEBHOOK_USERNAME: USER, CBP_WEBHOOK_PASSWORD: PASS });
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/the receiver's own port 18787: give \/metrics an address of its own/);
  });
});

describe('/readyz and pushes while the journal cannot store events', () => {
  it('answers 503 on /readyz and on a push when the journal folder is gone; /healthz stays liveness', async () => {
    const dir = path.join(tempDir(), 'journal');
    const rx = await startReceiver({ username: USER, password: PASS, journalDir: dir, port: 0, journal: { checkIntervalMs: 0 } });
    running.push(rx);
    const ready = await fetch(new URL('/readyz', rx.url));
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ready: true, reasons: [] });
    fs.rmSync(dir, { recursive: true, force: true });
    const not = await fetch(new URL('/readyz', rx.url));
    expect(not.status).toBe(503);
    expect(((await not.json()) as { reasons: string[] }).reasons.join()).toMatch(/the journal folder is not writable \(ENOENT\)/);
    const push = await fetch(rx.url, { method: 'POST', headers: { authorization: auth(), 'content-type': 'application/json' }, body: event('r1') });
    expect(push.status).toBe(503);
    expect(push.headers.get('retry-after')).toBe('30');
    expect(await push.text()).toMatch(/cannot store events now/);
    expect(rx.journal.status().appended).toBe(0);
    expect((await fetch(new URL('/healthz', rx.url))).status).toBe(200);
  });

  it('answers 503 when free space under the journal is below CBP_JOURNAL_MIN_FREE, and nothing is appended', async () => {
    const dir = tempDir();
    const rx = await startReceiver({ username: USER, password: PASS, journalDir: dir, port: 0, minFree: '1000TB', journal: { checkIntervalMs: 0 } });
    running.push(rx);
    const r = await fetch(new URL('/readyz', rx.url));
    expect(r.status).toBe(503);
    expect(((await r.json()) as { reasons: string[] }).reasons.join()).toMatch(/below CBP_JOURNAL_MIN_FREE/);
    const push = await fetch(rx.url, { method: 'POST', headers: { authorization: auth(), 'content-type': 'application/json' }, body: event('r2') });
    expect(push.status).toBe(503);
    expect(rx.journal.status().appended).toBe(0);
    expect(journalReadiness(dir, 0).ready).toBe(true);
  });
});

describe('cbp metrics', () => {
  it('has --help', () => {
    const r = cbp(['metrics', '--help']);
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/Prometheus' text\s+format/);
  });

  it("prints the journal's and the pipeline's gauges in the text format, from any process", () => {
    const data = tempDir();
    fs.mkdirSync(path.join(data, 'journal'));
    fs.writeFileSync(path.join(data, 'journal', 'seg-0000000001-20261101T000000000Z.closed'), '{"a":1}\n');
    const r = cbp(['metrics'], { CBP_DATA_DIR: data });
    expect(r.status, r.stderr).toBe(0);
    expect(sample(r.stdout, 'cbp_journal_waiting_segments')).toBe(1);
    expect(sample(r.stdout, 'cbp_journal_waiting_bytes')).toBe(8);
    expect(r.stdout).toMatch(/^# TYPE cbp_last_success_timestamp_seconds gauge$/m);
    const j = cbp(['metrics', '--json'], { CBP_DATA_DIR: data });
    expect(JSON.parse(j.stdout)).toMatchObject({ pipeline: null, journal: { waiting: { segments: 1, bytes: 8 }, ready: true } });
  });
});
