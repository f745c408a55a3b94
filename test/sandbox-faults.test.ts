import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startSandbox, type RunningSandbox } from '../sandbox/server.ts';
import { startReceiver, tinyWorld, type Receiver } from './sandbox-fixtures.ts';

// A seed whose rolls hold back some first sends and not others (rolls are repeatable, so this stays true).
const SEED = 1;

describe('sandbox fault injection', () => {
  let sb: RunningSandbox;
  let hook: Receiver;

  beforeAll(async () => {
    hook = await startReceiver();
  });
  beforeEach(async () => {
    sb = await startSandbox({ world: tinyWorld(), port: 0 });
    hook.requests.length = 0;
  });
  afterEach(async () => {
    await sb.close();
  });
  afterAll(async () => {
    await hook.close();
  });

  const setFaults = async (cfg: unknown) => {
    const r = await request(`${sb.admin}/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(cfg) });
    const text = await r.body.text();
    expect(r.statusCode, text).toBe(200);
  };
  const token = () => request(`${sb.baseUrls.auth}/auth`, { method: 'POST', headers: { authorization: `Bearer ${sb.credentials.apiSecret}` } });
  const statuses = async (n: number) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      const r = await token();
      await r.body.dump();
      out.push(r.statusCode);
    }
    return out;
  };

  it('is off by default, and GET /_sandbox/faults reads the configuration', async () => {
    expect(await statuses(5)).toEqual([200, 200, 200, 200, 200]);
    const r = await request(`${sb.admin}/faults`);
    expect(await r.body.json()).toEqual({ config: {}, injected: {} });
  });

  it('answers a seeded share of requests with 503, the same ones on every run with the seed', async () => {
    await setFaults({ seed: 9, interfaces: { auth: { errorRate: 0.5, errorStatuses: [503] } } });
    const first = await statuses(40);
    expect(first.filter((s) => s === 503).length).toBeGreaterThan(5);
    expect(first.filter((s) => s === 200).length).toBeGreaterThan(5);
    expect(new Set(first)).toEqual(new Set([200, 503]));
    await setFaults({ seed: 9, interfaces: { auth: { errorRate: 0.5, errorStatuses: [503] } } });
    expect(await statuses(40)).toEqual(first);
  });

  it('answers 429 with Retry-After', async () => {
    await setFaults({ interfaces: { auth: { tooManyRate: 1, retryAfterSeconds: 7 } } });
    const r = await token();
    expect(r.statusCode).toBe(429);
    expect(r.headers['retry-after']).toBe('7');
    expect(await r.body.json()).toMatchObject({ error: true });
  });

  it('drops the connection without an answer', async () => {
    await setFaults({ interfaces: { auth: { dropRate: 1 } } });
    await expect(token().then((r) => r.body.text())).rejects.toThrow();
  });

  it('stops after `limit` faults, targets one route, and DELETE clears every fault', async () => {
    await setFaults({ routes: { 'POST /auth/v1/auth': { errorRate: 1, errorStatuses: [500], limit: 2 } } });
    expect(await statuses(4)).toEqual([500, 500, 200, 200]);
    await setFaults({ interfaces: { orders: { errorRate: 1, errorStatuses: [504] } } });
    expect(await statuses(2)).toEqual([200, 200]);
    const o = await request(`${sb.baseUrls.ordersStage}/auth`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    await o.body.dump();
    expect(o.statusCode).toBe(504);
    const del = await request(`${sb.admin}/faults`, { method: 'DELETE' });
    await del.body.dump();
    const again = await request(`${sb.baseUrls.orders}/auth`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: sb.credentials.dataUsername, password: sb.credentials.dataPassword }),
    });
    expect(again.statusCode).toBe(200);
    await again.body.dump();
  });

  it('adds latency and still answers', async () => {
    await setFaults({ interfaces: { auth: { latencyMs: 50 } } });
    expect(await statuses(1)).toEqual([200]);
  });

  it('refuses an invalid fault configuration (400 naming the field)', async () => {
    const r = await request(`${sb.admin}/faults`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ interfaces: { auth: { errorRate: 2 } } }) });
    expect(r.statusCode).toBe(400);
    expect((await r.body.json() as { message: string }).message).toMatch(/errorRate/);
  });

  async function subscribe(type: string) {
    const { token: t } = (await (await token()).body.json()) as { token: string };
    const r = await request(`${sb.baseUrls.events}/subscribe`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'ops@example.com', url: hook.url, event_type: type, auth: { username: 'u', password: 'p' } }),
    });
    expect(r.statusCode).toBe(200);
    await r.body.dump();
  }
  const advance = async (d: string) => {
    const r = await request(`${sb.admin}/clock`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ advance: d }) });
    expect(r.statusCode).toBe(200);
    await r.body.dump();
  };

  it('sends deliveries twice with duplicateRate', async () => {
    await subscribe('chargeback.new');
    hook.requests.length = 0;
    await setFaults({ deliveries: { duplicateRate: 1 } });
    await advance('P3D');
    const got = hook.requests.map((r) => (r.body as { event_guid: string }).event_guid);
    expect(got).toHaveLength(4);
    expect(got[0]).toBe(got[1]);
    expect(got[2]).toBe(got[3]);
    expect(got[0]).not.toBe(got[2]);
  });

  it('holds first sends back with outOfOrderRate, so later events overtake them', async () => {
    await subscribe('chargeback.new');
    await subscribe('prevention.new');
    hook.requests.length = 0;
    await setFaults({ seed: SEED, deliveries: { outOfOrderRate: 0.5, outOfOrderDelaySeconds: 86_400 } });
    await advance('P5D');
    const bodies = hook.requests.map((r) => r.body as { event_type: string; event_guid: string; event_timestamp: string });
    expect(bodies).toHaveLength(3);
    const stamps = bodies.map((b) => b.event_timestamp);
    expect(stamps).not.toEqual([...stamps].sort());
    const r = await request(`${sb.admin}/deliveries`);
    const attempts = (await r.body.json()) as Array<{ time: string; event_guid: string; event_type: string }>;
    // Each first send happened at its event's time or a day after it.
    for (const a of attempts.filter((x) => x.event_type !== 'registration.new')) {
      const ev = bodies.find((b) => b.event_guid === a.event_guid)!;
      expect([0, 86_400_000]).toContain(Date.parse(a.time) - Date.parse(ev.event_timestamp));
    }
  });
});
