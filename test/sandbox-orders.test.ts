import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { EventSchema, OrderSchema } from '../contract/index.ts';
import { buildSandbox } from '../sandbox/server.ts';
import { startReceiver, tinyWorld, type Receiver } from './sandbox-fixtures.ts';

describe('sandbox order data interface and matching', () => {
  let app: FastifyInstance;
  let hook: Receiver;

  beforeAll(async () => {
    hook = await startReceiver();
  });
  beforeEach(async () => {
    app = await buildSandbox({ world: tinyWorld() });
    hook.requests.length = 0;
  });
  afterEach(async () => {
    await app.close();
  });
  afterAll(async () => {
    await hook.close();
  });

  const key = async (prefix = '/orders/v1') => {
    const res = await app.inject({ method: 'POST', url: `${prefix}/auth`, payload: { username: 'sandbox-user', password: 'sandbox-password' } });
    expect(res.statusCode).toBe(200);
    return res.json().authorization_key as string;
  };
  const push = (k: string | undefined, body: unknown, prefix = '/orders/v1') =>
    app.inject({
      method: 'POST',
      url: `${prefix}/order`,
      headers: { 'content-type': 'application/json', ...(k ? { authorization: `Bearer ${k}` } : {}) },
      payload: JSON.stringify(body),
    });
  const order = (over: Record<string, unknown> = {}) => ({
    order_id: 'A-1001',
    order_date: '2026-01-02 12:00:00',
    order_total: '94.76',
    currency: 'USD',
    cc_first_6: '522222',
    cc_last_4: '4444',
    cc_type: 'MasterCard',
    transaction_merchant_id: 'gw-tiny',
    billing_first_name: 'Ada',
    billing_last_name: 'Lovelace',
    fulfillment: { shipments: [{ tracking_number: '1Z999' }] },
    ...over,
  });

  it('POST /auth answers a fresh key per call (under /orders/v1 and /orders/stage)', async () => {
    const a = await key();
    const b = await key('/orders/stage');
    expect(a).not.toBe(b);
    expect((await push(b, order())).statusCode).toBe(200);
  });

  it('POST /auth answers 401 for wrong credentials and 400 for missing fields', async () => {
    const wrong = await app.inject({ method: 'POST', url: '/orders/v1/auth', payload: { username: 'sandbox-user', password: 'nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error).toBe(true);
    const missing = await app.inject({ method: 'POST', url: '/orders/v1/auth', payload: { username: 'sandbox-user' } });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().message).toMatch(/password/);
  });

  it('creates an order and answers the same {id} when the order_id is pushed again (update)', async () => {
    const k = await key();
    const first = await push(k, order());
    expect(first.statusCode).toBe(200);
    const { id } = first.json();
    expect(id).toMatch(/^ord_[0-9a-f]{32}$/);
    const again = await push(k, { order_id: 'A-1001', order_status: 'Refunded', is_refund: 1, refunded_to_date: '94.76' });
    expect(again.json()).toEqual({ id });
    const other = await push(k, order({ order_id: 'A-1002' }));
    expect(other.json().id).not.toBe(id);
  });

  it('answers 422 naming invalid fields, and the fields a first push needs', async () => {
    const k = await key();
    const bad = await push(k, order({ cc_last_4: '44', order_date: 'yesterday' }));
    expect(bad.statusCode).toBe(422);
    expect(bad.json().message).toMatch(/cc_last_4/);
    expect(bad.json().message).toMatch(/order_date/);
    const incomplete = await push(k, { order_id: 'NEW-1' });
    expect(incomplete.statusCode).toBe(422);
    expect(incomplete.json().message).toMatch(/order_date/);
    expect(incomplete.json().message).toMatch(/order_total/);
  });

  it('answers 401 without a valid key', async () => {
    expect((await push(undefined, order())).statusCode).toBe(401);
    expect((await push('key_unknown', order())).statusCode).toBe(401);
  });

  it('rejects a body that is not application/json (400)', async () => {
    const k = await key();
    const res = await app.inject({
      method: 'POST',
      url: '/orders/v1/order',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Bearer ${k}` },
      payload: 'order_id=A-1',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toMatch(/application\/json/);
    const auth = await app.inject({ method: 'POST', url: '/orders/v1/auth', headers: { 'content-type': 'text/plain' }, payload: 'x' });
    expect(auth.statusCode).toBe(400);
  });

  it('matches a pushed order to its chargeback: chargeback.match with order_id, order_guid, crm_account_guid; lookups show it', async () => {
    const { token } = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json();
    const auth = { authorization: `Bearer ${token}` };
    await app.inject({
      method: 'POST',
      url: '/events/v1/subscribe',
      headers: auth,
      payload: { email: 'ops@example.com', url: hook.url, event_type: 'chargeback.match', auth: { username: 'u', password: 'p' } },
    });
    const k = await key();
    const { id } = (await push(k, order())).json();
    // The chargeback arrives later on the clock: new, then match, in that order.
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { to: '2026-01-11T12:00:00Z' } });
    const events = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json() as Array<Record<string, unknown>>;
    const types = events.map((e) => e.event_type);
    expect(types.indexOf('chargeback.new')).toBeLessThan(types.indexOf('chargeback.match'));
    const match = events.find((e) => e.event_type === 'chargeback.match')!;
    expect(match).toMatchObject({ order_id: 'A-1001', order_guid: id, chargeback_guid: 'cbk_00000000000000000000000000000002' });
    expect(match.crm_account_guid).toMatch(/^crm_[0-9a-f]{32}$/);
    expect(EventSchema.parse(match).event_type).toBe('chargeback.match');
    const delivered = hook.requests.filter((r) => (r.body as { event_type?: string })?.event_type === 'chargeback.match');
    expect(delivered).toHaveLength(1);
    const cb = (await app.inject({ method: 'GET', url: '/events/v1/chargeback/cbk_00000000000000000000000000000002', headers: auth })).json();
    expect(cb).toMatchObject({ order_id: 'A-1001', order_guid: id });
    const o = OrderSchema.parse((await app.inject({ method: 'GET', url: `/events/v1/order/${id}`, headers: auth })).json());
    expect(o).toMatchObject({ order_guid: id, crm_order_id: 'A-1001', mid: '860100000001', amount: 94.76, card_brand: 'mastercard', order_date: '2026-01-02T12:00:00Z' });
  });

  it('matches a chargeback already known (history) at the moment its order is pushed', async () => {
    const k = await key();
    const { id } = (await push(k, order({ order_id: 'H-1', order_total: 50, cc_first_6: '411111', cc_last_4: '1111', cc_type: 'visa' }))).json();
    const events = (await app.inject({ method: 'GET', url: '/_sandbox/events?type=chargeback.match' })).json();
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ order_guid: id, order_id: 'H-1', chargeback_guid: 'cbk_00000000000000000000000000000001', event_timestamp: '2026-01-10T00:00:00Z' });
  });

  it('does not match on another amount or another merchant account', async () => {
    const k = await key();
    await push(k, order({ order_id: 'X-1', order_total: '94.75' }));
    await push(k, order({ order_id: 'X-2', transaction_merchant_id: 'someone-else' }));
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P2D' } });
    expect((await app.inject({ method: 'GET', url: '/_sandbox/events?type=chargeback.match' })).json()).toHaveLength(0);
  });

  it('matches prevention, RDR and order validation to their orders (prevention.match, rdr.match, order_validation.match)', async () => {
    const k = await key();
    await push(k, order({ order_id: 'P-1', order_total: '30', cc_first_6: '444444', cc_last_4: '4448' }));
    await push(k, order({ order_id: 'R-1', order_total: '12.50', cc_first_6: '455555', cc_last_4: '5555' }));
    await push(k, order({ order_id: 'V-1', order_total: '70', cc_first_6: '466666', cc_last_4: '6666' }));
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P2D' } });
    const events = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json() as Array<Record<string, unknown>>;
    for (const [type, orderId] of [['prevention.match', 'P-1'], ['rdr.match', 'R-1'], ['order_validation.match', 'V-1']]) {
      const e = events.find((x) => x.event_type === type);
      expect(e, type).toMatchObject({ order_id: orderId });
      expect(EventSchema.safeParse(e).success, type).toBe(true);
    }
  });
});
