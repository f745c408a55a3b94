import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { EventSchema } from '../contract/index.ts';
import { parseDuration } from '../sandbox/clock.ts';
import { buildSandbox } from '../sandbox/server.ts';
import { basicOf, startReceiver, tinyWorld, type Receiver } from './sandbox-fixtures.ts';

const TYPES = ['chargeback.new', 'chargeback.result', 'chargeback.dnf', 'prevention.new', 'rdr.new'] as const;

describe('sandbox clock and event delivery', () => {
  let app: FastifyInstance;
  let hook: Receiver;
  let auth: Record<string, string>;

  beforeAll(async () => {
    hook = await startReceiver();
  });
  beforeEach(async () => {
    app = await buildSandbox({ world: tinyWorld() });
    hook.requests.length = 0;
    hook.respond = () => 200;
    const { token } = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json();
    auth = { authorization: `Bearer ${token}` };
  });
  afterEach(async () => {
    await app.close();
  });
  afterAll(async () => {
    await hook.close();
  });

  const subscribeAll = async () => {
    for (const t of TYPES) {
      const r = await app.inject({
        method: 'POST',
        url: '/events/v1/subscribe',
        headers: auth,
        payload: { email: 'ops@example.com', url: `${hook.url}/${t}`, event_type: t, auth: { username: 'u', password: 'p' } },
      });
      expect(r.statusCode).toBe(200);
    }
    hook.requests.length = 0;
  };
  const clock = (body: unknown) => app.inject({ method: 'POST', url: '/_sandbox/clock', payload: body as object });
  const events = (r: Receiver) => r.requests.filter((x) => x.method === 'POST').map((x) => x.body as Record<string, unknown>);

  it('parses ISO 8601 durations (PnD, PTnH, PTnM, PnW and combinations)', () => {
    expect(parseDuration('P3D')).toBe(3 * 86_400_000);
    expect(parseDuration('PT2H')).toBe(7_200_000);
    expect(parseDuration('PT30M')).toBe(1_800_000);
    expect(parseDuration('P1W')).toBe(7 * 86_400_000);
    expect(parseDuration('P1DT12H30M')).toBe(86_400_000 + 12 * 3_600_000 + 30 * 60_000);
    for (const bad of ['3D', 'P', 'PT', 'P1Y', 'soon']) expect(parseDuration(bad)).toBeUndefined();
  });

  it('reads the clock and moves it forward by a duration or to a time, never backwards', async () => {
    expect((await app.inject({ method: 'GET', url: '/_sandbox/clock' })).json()).toMatchObject({ now: '2026-01-10T00:00:00Z', realtime: false });
    expect((await clock({ advance: 'PT6H' })).json().now).toBe('2026-01-10T06:00:00Z');
    expect((await clock({ to: '2026-01-11T00:00:00Z' })).json().now).toBe('2026-01-11T00:00:00Z');
    const back = await clock({ to: '2026-01-10T00:00:00Z' });
    expect(back.statusCode).toBe(400);
    expect(back.json().message).toMatch(/never goes backwards/);
    expect((await clock({ advance: 'soon' })).statusCode).toBe(400);
  });

  it('emits every event due in a move, in time order, and delivers each to the active subscriptions of its type before answering', async () => {
    await subscribeAll();
    const res = await clock({ advance: 'P5D' });
    expect(res.statusCode).toBe(200);
    const got = events(hook);
    expect(got.map((e) => `${e.event_type}@${e.event_timestamp}`)).toEqual([
      'chargeback.new@2026-01-11T10:00:00Z',
      'prevention.new@2026-01-11T12:00:00Z',
      'rdr.new@2026-01-11T13:00:00Z',
      'chargeback.new@2026-01-12T06:00:00Z',
      'chargeback.result@2026-01-13T00:00:00Z',
      'chargeback.dnf@2026-01-14T00:00:00Z',
    ]);
    for (const e of got) expect(EventSchema.safeParse(e).success, JSON.stringify(e)).toBe(true);
    expect(got[4]).toMatchObject({ result: 'won', case_number: 'CASE-2' });
    expect(got[5]).toMatchObject({ dnf_reason: 'Amount below threshold', dnf_timestamp: '2026-01-14T00:00:00Z' });
    expect(hook.requests.every((r) => r.headers.authorization === basicOf('u', 'p'))).toBe(true);
    // Each event went to the url of its own type only.
    expect(hook.requests.every((r) => r.path.endsWith(`/${(r.body as { event_type: string }).event_type}`))).toBe(true);
    const all = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json();
    expect(all.map((e: { event_type: string }) => e.event_type)).toContain('order_validation.new');
  });

  it('does not deliver history (events before the clock start), nor to inactive subscriptions', async () => {
    await subscribeAll();
    const list = (await app.inject({ method: 'GET', url: '/events/v1/subscribe', headers: auth })).json();
    const cbNew = list.find((s: { event_type: string }) => s.event_type === 'chargeback.new');
    await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${cbNew.guid}`, headers: auth, payload: { active: false } });
    await clock({ advance: 'P5D' });
    const got = events(hook);
    expect(got.some((e) => e.chargeback_guid === 'cbk_00000000000000000000000000000001')).toBe(false);
    expect(got.some((e) => e.event_type === 'chargeback.new')).toBe(false);
    expect(got.some((e) => e.event_type === 'chargeback.result')).toBe(true);
  });

  it('re-sends an event the webhook did not answer with 200, on the backoff schedule in sandbox time', async () => {
    await subscribeAll();
    let failures = 2;
    hook.respond = (r) => ((r.body as { event_type?: string })?.event_type === 'rdr.new' && failures-- > 0 ? 500 : 200);
    await clock({ to: '2026-01-11T13:00:00Z' });
    expect(events(hook).filter((e) => e.event_type === 'rdr.new')).toHaveLength(1);
    await clock({ advance: 'PT1M' });
    expect(events(hook).filter((e) => e.event_type === 'rdr.new')).toHaveLength(2);
    await clock({ advance: 'PT5M' });
    const rdr = events(hook).filter((e) => e.event_type === 'rdr.new');
    expect(rdr).toHaveLength(3);
    expect(new Set(rdr.map((e) => e.event_guid)).size).toBe(1);
    const attempts = (await app.inject({ method: 'GET', url: '/_sandbox/deliveries' })).json().filter((d: { event_type: string }) => d.event_type === 'rdr.new');
    expect(attempts.map((d: { status: number; attempt: number; time: string }) => [d.status, d.attempt, d.time])).toEqual([
      [500, 1, '2026-01-11T13:00:00Z'],
      [500, 2, '2026-01-11T13:01:00Z'],
      [200, 3, '2026-01-11T13:06:00Z'],
    ]);
    expect(attempts[0].outcome).toBe('retry at 2026-01-11T13:01:00Z');
    expect(attempts[2].outcome).toBe('delivered');
  });

  it('gives up on an event once it is 72 h old', async () => {
    await subscribeAll();
    hook.respond = (r) => ((r.body as { event_type?: string })?.event_type === 'rdr.new' ? 503 : 200);
    await clock({ advance: 'P6D' });
    const attempts = (await app.inject({ method: 'GET', url: '/_sandbox/deliveries' })).json().filter((d: { event_type: string }) => d.event_type === 'rdr.new');
    expect(attempts.at(-1).outcome).toBe('gave up: too old');
    const span = Date.parse(attempts.at(-1).time) - Date.parse(attempts[0].time);
    expect(span).toBeLessThanOrEqual(72 * 3600_000);
    expect(attempts.length).toBe(9);
  });

  it('counts a webhook that does not answer as a failed delivery', async () => {
    await subscribeAll();
    await hook.close();
    await clock({ to: '2026-01-11T10:00:00Z' });
    const attempts = (await app.inject({ method: 'GET', url: '/_sandbox/deliveries' })).json();
    const first = attempts.find((d: { event_type: string }) => d.event_type === 'chargeback.new');
    expect(first.error).toBeTruthy();
    expect(first.outcome).toMatch(/^retry at/);
    hook = await startReceiver();
  });

  it('lets real time drive the clock with realtime', async () => {
    const rt = await buildSandbox({ world: tinyWorld(), realtime: true, realtimeSpeed: 3600, realtimeTickMs: 20 });
    try {
      let now = '2026-01-10T00:00:00Z';
      for (let i = 0; i < 200 && now === '2026-01-10T00:00:00Z'; i++) {
        await new Promise((r) => setTimeout(r, 20));
        now = (await rt.inject({ method: 'GET', url: '/_sandbox/clock' })).json().now;
      }
      expect(Date.parse(now)).toBeGreaterThan(Date.parse('2026-01-10T00:00:00Z'));
      expect((await rt.inject({ method: 'GET', url: '/_sandbox/clock' })).json().realtime).toBe(true);
    } finally {
      await rt.close();
    }
  });
});

describe('sandbox reset', () => {
  it('forgets subscriptions, orders, events and faults, and sets the clock back to its start', async () => {
    const app = await buildSandbox({ world: tinyWorld() });
    try {
      const { authorization_key: k } = (await app.inject({ method: 'POST', url: '/orders/v1/auth', payload: { username: 'sandbox-user', password: 'sandbox-password' } })).json();
      await app.inject({ method: 'POST', url: '/_sandbox/faults', payload: { interfaces: { reporting: { errorRate: 1 } } } });
      await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P5D' } });
      const first = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json();
      const res = await app.inject({ method: 'POST', url: '/_sandbox/reset' });
      expect(res.json().now).toBe('2026-01-10T00:00:00Z');
      expect((await app.inject({ method: 'GET', url: '/_sandbox/events' })).json()).toEqual([]);
      expect((await app.inject({ method: 'GET', url: '/_sandbox/faults' })).json().config).toEqual({});
      const push = await app.inject({ method: 'POST', url: '/orders/v1/order', headers: { authorization: `Bearer ${k}` }, payload: { order_id: 'x' } });
      expect(push.statusCode).toBe(401);
      await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P5D' } });
      expect((await app.inject({ method: 'GET', url: '/_sandbox/events' })).json()).toEqual(first);
    } finally {
      await app.close();
    }
  });
});
