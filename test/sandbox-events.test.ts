import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ChargebackSchema, EventSchema, OrderValidationSchema, PreventionAlertSchema, SubscriptionSchema } from '../contract/index.ts';
import { buildSandbox } from '../sandbox/server.ts';
import { basicOf, startReceiver, tinyWorld, type Receiver } from './sandbox-fixtures.ts';

describe('sandbox events interface', () => {
  let app: FastifyInstance;
  let hook: Receiver;
  let auth: Record<string, string>;

  beforeAll(async () => {
    hook = await startReceiver();
  });
  beforeEach(async () => {
    app = await buildSandbox({ world: tinyWorld(), deliveryTimeoutMs: 2000 });
    const { token } = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json();
    auth = { authorization: `Bearer ${token}` };
    hook.requests.length = 0;
    hook.respond = () => 200;
  });
  afterEach(async () => {
    await app.close();
  });
  afterAll(async () => {
    await hook.close();
  });

  const subscribe = (body: unknown) => app.inject({ method: 'POST', url: '/events/v1/subscribe', headers: auth, payload: body as object });
  const sub = (over: Record<string, unknown> = {}) => ({
    email: 'ops@example.com',
    url: hook.url,
    event_type: 'chargeback.new',
    auth: { username: 'hook-user', password: 'hook-pass' },
    ...over,
  });
  const advance = (d: string) => app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: d } });

  it('creates a subscription inactive, vets it with registration.new (Basic auth) and activates it', async () => {
    const res = await subscribe(sub());
    expect(res.statusCode).toBe(200);
    const created = SubscriptionSchema.parse(res.json());
    expect(created.active).toBe(false);
    expect(created.guid).toMatch(/^sub_[0-9a-f]{32}$/);
    expect(hook.requests).toHaveLength(1);
    const r = hook.requests[0];
    expect(r.method).toBe('POST');
    expect(r.headers.authorization).toBe(basicOf('hook-user', 'hook-pass'));
    expect(r.headers['content-type']).toMatch(/application\/json/);
    expect(r.body).toEqual({
      event_guid: created.guid,
      event_type: 'registration.new',
      subscribed_event_type: 'chargeback.new',
      event_timestamp: created.created_at,
    });
    expect(EventSchema.safeParse(r.body).success).toBe(true);
    const got = (await app.inject({ method: 'GET', url: `/events/v1/subscribe/${created.guid}`, headers: auth })).json();
    expect(got.active).toBe(true);
    const outbox = (await app.inject({ method: 'GET', url: '/_sandbox/outbox' })).json();
    expect(outbox).toHaveLength(1);
    expect(outbox[0]).toMatchObject({ to: 'ops@example.com', subject: expect.stringMatching(/active/) });
  });

  it('activates by the HTTP OPTIONS test when the registration POST fails', async () => {
    hook.respond = (r) => (r.method === 'POST' ? 500 : 204);
    const created = (await subscribe(sub())).json();
    expect(hook.requests.map((r) => r.method)).toEqual(['POST', 'OPTIONS']);
    expect(hook.requests[1].headers.authorization).toBe(basicOf('hook-user', 'hook-pass'));
    const got = (await app.inject({ method: 'GET', url: `/events/v1/subscribe/${created.guid}`, headers: auth })).json();
    expect(got.active).toBe(true);
  });

  it('after a failed vetting e-mails, retries 8 more times over 24 h of sandbox time, and a later success activates', async () => {
    hook.respond = () => 503;
    const created = (await subscribe(sub())).json();
    let outbox = (await app.inject({ method: 'GET', url: '/_sandbox/outbox' })).json();
    expect(outbox).toHaveLength(1);
    expect(outbox[0].subject).toMatch(/failed/);
    // 12 h later: 4 more checks (every 3 h), each e-mailed.
    await advance('PT12H');
    outbox = (await app.inject({ method: 'GET', url: '/_sandbox/outbox' })).json();
    expect(outbox).toHaveLength(5);
    expect(hook.requests.filter((r) => r.method === 'POST')).toHaveLength(5);
    // The webhook recovers: the next check (at 15 h) activates it, later checks do not run.
    hook.respond = () => 200;
    await advance('PT12H');
    const got = (await app.inject({ method: 'GET', url: `/events/v1/subscribe/${created.guid}`, headers: auth })).json();
    expect(got.active).toBe(true);
    outbox = (await app.inject({ method: 'GET', url: '/_sandbox/outbox' })).json();
    expect(outbox).toHaveLength(6);
    expect(outbox[5].subject).toMatch(/active/);
    expect(outbox[5].at).toBe('2026-01-10T15:00:00Z');
    expect(hook.requests.filter((r) => r.method === 'POST')).toHaveLength(6);
  });

  it('stops after 9 failed checks (8 retries within 24 h) and tells the subscriber to re-create', async () => {
    hook.respond = () => 500;
    const created = (await subscribe(sub())).json();
    await advance('P3D');
    const checks = hook.requests.filter((r) => r.method === 'POST');
    expect(checks).toHaveLength(9);
    const outbox = (await app.inject({ method: 'GET', url: '/_sandbox/outbox' })).json();
    expect(outbox).toHaveLength(9);
    expect(outbox[8].at).toBe('2026-01-11T00:00:00Z');
    expect(outbox[8].body).toMatch(/delete it and create a new one/);
    const got = (await app.inject({ method: 'GET', url: `/events/v1/subscribe/${created.guid}`, headers: auth })).json();
    expect(got.active).toBe(false);
  });

  it('refuses to activate by update a subscription whose vetting failed (only delete and re-create resolves it), and changes nothing', async () => {
    hook.respond = () => 500;
    const created = (await subscribe(sub())).json();
    await advance('P2D'); // all 9 checks failed
    const res = await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${created.guid}`, headers: auth, payload: { active: true, email: 'new@example.com' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: true, message: expect.stringMatching(/vetting failed.*delete the subscription and create a new one/) });
    const got = (await app.inject({ method: 'GET', url: `/events/v1/subscribe/${created.guid}`, headers: auth })).json();
    expect(got).toMatchObject({ active: false, email: 'ops@example.com' });
    // Other changes are still accepted: they do not activate it.
    const mail = await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${created.guid}`, headers: auth, payload: { email: 'new@example.com' } });
    expect(mail.statusCode).toBe(200);
  });

  it('re-activates by update a subscription that passed vetting and was switched off', async () => {
    const created = (await subscribe(sub())).json();
    await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${created.guid}`, headers: auth, payload: { active: false } });
    await advance('P3D');
    const on = await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${created.guid}`, headers: auth, payload: { active: true } });
    expect(on.statusCode).toBe(200);
    expect(on.json().active).toBe(true);
  });

  it('lists, gets, updates (active=false/true) and deletes subscriptions', async () => {
    const a = (await subscribe(sub())).json();
    const b = (await subscribe(sub({ event_type: 'prevention.new' }))).json();
    const list = (await app.inject({ method: 'GET', url: '/events/v1/subscribe', headers: auth })).json();
    expect(list.map((s: { guid: string }) => s.guid).sort()).toEqual([a.guid, b.guid].sort());
    const off = await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${a.guid}`, headers: auth, payload: { active: false } });
    expect(off.statusCode).toBe(200);
    expect(off.json().active).toBe(false);
    const on = await app.inject({
      method: 'PUT',
      url: `/events/v1/subscribe/${a.guid}`,
      headers: auth,
      payload: { active: true, email: 'new@example.com' },
    });
    expect(on.json()).toMatchObject({ active: true, email: 'new@example.com', event_type: 'chargeback.new' });
    const del = await app.inject({ method: 'DELETE', url: `/events/v1/subscribe/${a.guid}`, headers: auth });
    expect(del.statusCode).toBe(200);
    const gone = await app.inject({ method: 'GET', url: `/events/v1/subscribe/${a.guid}`, headers: auth });
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error).toBe(true);
  });

  it('refuses an update that changes event_type (400: delete and re-create)', async () => {
    const a = (await subscribe(sub())).json();
    const res = await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${a.guid}`, headers: auth, payload: { event_type: 'rdr.new' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/delete the subscription and create a new one/);
  });

  it('answers 400 naming the fields of an invalid subscribe request, and for a non-subscribable type', async () => {
    const res = await subscribe({ email: 'not-an-email', url: hook.url, event_type: 'chargeback.new' });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/email/);
    expect(res.json().message).toMatch(/auth/);
    const ov = await subscribe(sub({ event_type: 'order_validation.new' }));
    expect(ov.statusCode).toBe(400);
    expect(ov.json().message).toMatch(/event_type/);
  });

  it('refuses a plain-http webhook url that is not loopback, saying why', async () => {
    const res = await subscribe(sub({ url: 'http://example.com/hook' }));
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/https only/);
    const a = (await subscribe(sub())).json();
    const upd = await app.inject({ method: 'PUT', url: `/events/v1/subscribe/${a.guid}`, headers: auth, payload: { url: 'http://10.0.0.1/x' } });
    expect(upd.statusCode).toBe(400);
  });

  it('ping answers the urls of the type and sends them a test delivery (also at /ping/v1 on the root)', async () => {
    await subscribe(sub());
    hook.requests.length = 0;
    const res = await app.inject({ method: 'GET', url: '/events/v1/ping/chargeback.new', headers: auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ urls: [hook.url] });
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0].body).toMatchObject({ event_type: 'registration.new', subscribed_event_type: 'chargeback.new' });
    const root = await app.inject({ method: 'GET', url: '/ping/v1/chargeback.new', headers: auth });
    expect(root.json()).toEqual({ urls: [hook.url] });
    const none = await app.inject({ method: 'GET', url: '/events/v1/ping/rdr.new', headers: auth });
    expect(none.json()).toEqual({ urls: [] });
    expect((await app.inject({ method: 'GET', url: '/ping/v1/chargeback.new' })).statusCode).toBe(400);
  });

  it('looks up chargebacks, prevention alerts and order validations that exist at the clock, 404 otherwise', async () => {
    const known = await app.inject({ method: 'GET', url: '/events/v1/chargeback/cbk_00000000000000000000000000000001', headers: auth });
    expect(known.statusCode).toBe(200);
    const cb = ChargebackSchema.parse(known.json());
    expect(cb).toMatchObject({ case_number: 'CASE-1', date_received: '2026-01-05', amount: 50 });
    // Not received yet at the clock's now: does not exist.
    const future = await app.inject({ method: 'GET', url: '/events/v1/chargeback/cbk_00000000000000000000000000000002', headers: auth });
    expect(future.statusCode).toBe(404);
    expect(future.json()).toMatchObject({ error: true });
    await advance('P2D');
    expect((await app.inject({ method: 'GET', url: '/events/v1/chargeback/cbk_00000000000000000000000000000002', headers: auth })).statusCode).toBe(200);
    const pre = await app.inject({ method: 'GET', url: '/events/v1/prevention/pre_00000000000000000000000000000001', headers: auth });
    expect(PreventionAlertSchema.parse(pre.json()).prevention_type).toBe('ethoca');
    const ov = await app.inject({ method: 'GET', url: '/events/v1/order_validation/ovr_00000000000000000000000000000001', headers: auth });
    expect(OrderValidationSchema.parse(ov.json()).order_validation_type).toBe('order_insight');
    for (const p of ['chargeback', 'prevention', 'order_validation', 'order']) {
      const r = await app.inject({ method: 'GET', url: `/events/v1/${p}/nope_1`, headers: auth });
      expect(r.statusCode).toBe(404);
    }
  });
});
