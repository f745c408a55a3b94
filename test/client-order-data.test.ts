import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOrderDataClient, DataKeyError, isOrderRefusal } from '../client/order-data.ts';
import { ServiceHttpError } from '../client/errors.ts';
import { ValidationError } from '../lib/errors.ts';
import { createLogger } from '../lib/log.ts';
import { startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

let srv: ScriptedServer;
const logger = createLogger({ level: 'silent' });
const sleeps: number[] = [];
const retry = { sleep: async (ms: number) => void sleeps.push(ms), random: () => 1, retries: 3 };
const PASSWORD = 'data-password-77a1';
const KEY1 = 'authkey-11111111';
const KEY2 = 'authkey-22222222';

const order = {
  order_id: 'INV-1001',
  order_date: '2026-11-02T08:30:00Z',
  order_total: 94.76,
  currency: 'usd',
  order_status: 'complete',
  is_refund: false,
  is_test_cc: true,
  cc_first_6: '555555',
  cc_last_4: '4444',
  fulfillment: { shipments: [{ shipping_method: 'UPS', tracking_number: '1Z999' }] },
};

beforeAll(async () => {
  srv = await startScriptedServer();
});
afterAll(() => srv.close());
beforeEach(() => {
  srv.reset();
  sleeps.length = 0;
});

// The sandbox base of the order data interface ends in `stage`.
const client = () =>
  createOrderDataClient({ dataBaseUrl: `${srv.url}/stage`, dataUsername: 'merchant', dataPassword: PASSWORD }, { retry, logger });

describe('order data interface', () => {
  it('gets a key with POST /auth {username, password} as JSON and caches it', async () => {
    srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } });
    const c = client();
    expect(await c.getKey()).toBe(KEY1);
    expect(await c.getKey()).toBe(KEY1);
    const reqs = srv.requestsTo('POST', '/stage/auth');
    expect(reqs).toHaveLength(1);
    expect(reqs[0].headers['content-type']).toBe('application/json');
    expect(reqs[0].json()).toEqual({ username: 'merchant', password: PASSWORD });
    await c.close();
  });

  it('pushes an order with POST /order, the key as bearer, booleans as 1/0, and returns the id', async () => {
    srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } });
    srv.script('POST', '/stage/order', { body: { id: 'svc-order-1' } });
    const c = client();
    expect(await c.pushOrder(order)).toEqual({ id: 'svc-order-1' });
    const [req] = srv.requestsTo('POST', '/stage/order');
    expect(req.headers.authorization).toBe(`Bearer ${KEY1}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.json()).toMatchObject({ order_id: 'INV-1001', order_total: '94.76', currency: 'USD', order_status: 'Complete', is_refund: 0, is_test_cc: 1 });
    await c.close();
  });

  it('refuses an order that does not match the contract before sending it', async () => {
    const c = client();
    const e = await c.pushOrder({ ...order, cc_last_4: '44', order_date: 'yesterday' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as Error).message).toContain('cc_last_4');
    expect((e as Error).message).toContain('order_date');
    expect(srv.requests).toHaveLength(0);
    await c.close();
  });

  it('renews the key on a 401 and sends the order once more', async () => {
    srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } }, { body: { authorization_key: KEY2 } });
    srv.script('POST', '/stage/order', { status: 401, body: { error: true, message: 'key revoked' } }, { body: { id: 'svc-order-2' } });
    const c = client();
    expect(await c.pushOrder(order)).toEqual({ id: 'svc-order-2' });
    expect(srv.requestsTo('POST', '/stage/order').map((r) => r.headers.authorization)).toEqual([`Bearer ${KEY1}`, `Bearer ${KEY2}`]);
    await c.close();
  });

  it('says to check the data credentials when the key itself is refused, without the password', async () => {
    srv.script('POST', '/stage/auth', { status: 401, body: { error: true, message: `bad password ${PASSWORD}` } });
    const c = client();
    const e = (await c.getKey().catch((x: unknown) => x)) as DataKeyError;
    expect(e).toBeInstanceOf(DataKeyError);
    expect(e.iface).toBe('data');
    expect(e.httpStatus).toBe(401);
    expect(e.message).toContain('CBP_DATA_PASSWORD');
    expect(e.message).not.toContain(PASSWORD);
    expect(JSON.stringify(e.toJSON())).not.toContain(PASSWORD);
    await c.close();
  });

  it('retries POST /order after a 500 and a 504 (an order push is idempotent by order_id)', async () => {
    srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } });
    srv.script('POST', '/stage/order', { status: 500 }, { status: 504 }, { body: { id: 'svc-order-3' } });
    const c = client();
    expect(await c.pushOrder(order)).toEqual({ id: 'svc-order-3' });
    expect(sleeps).toEqual([500, 1000]);
    const bodies = srv.requestsTo('POST', '/stage/order').map((r) => r.body);
    expect(new Set(bodies).size).toBe(1);
    await c.close();
  });

  for (const status of [412, 422]) {
    it(`does not retry a ${status} and passes on the service's message`, async () => {
      srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } });
      srv.script('POST', '/stage/order', { status, body: { error: true, message: 'order_total is required' } });
      const c = client();
      const e = (await c.pushOrder({ order_id: 'INV-2' }).catch((x: unknown) => x)) as ServiceHttpError;
      expect(e.httpStatus).toBe(status);
      expect(e.message).toContain('order_total is required');
      expect(e.message).toContain('fix the request');
      expect(srv.requestsTo('POST', '/stage/order')).toHaveLength(1);
      await c.close();
    });
  }

  it('calls a 400 on POST /auth a key failure that names the request and what to check, never an order refusal', async () => {
    srv.script('POST', '/stage/auth', { status: 400, body: { error: true, message: 'username and password are required' } });
    const c = client();
    const e = (await c.pushOrder(order).catch((x: unknown) => x)) as DataKeyError;
    expect(e).toBeInstanceOf(DataKeyError);
    expect(e).toMatchObject({ code: 'CBP_ERR_DATA_KEY', retryable: false, httpStatus: 400, operation: 'get key (POST /auth)' });
    expect(e.message).toMatch(/POST \/auth failed with HTTP 400 \(username and password are required\)/);
    expect(e.message).toMatch(/CBP_DATA_USERNAME and CBP_DATA_PASSWORD, CBP_DATA_BASE_URL, and that this machine's IP address is allow-listed/);
    expect(e.message).not.toContain(PASSWORD);
    expect(isOrderRefusal(e)).toBeUndefined();
    expect(srv.requestsTo('POST', '/stage/order')).toHaveLength(0);
    await c.close();
  });

  it("calls a 400 or 422 on the order's own POST /order its refusal, naming the request", async () => {
    srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } });
    srv.script('POST', '/stage/order', { status: 400, body: { error: true, message: 'order_date is not a date' } });
    const c = client();
    const e = (await c.pushOrder(order).catch((x: unknown) => x)) as ServiceHttpError;
    expect(e).toBeInstanceOf(ServiceHttpError);
    expect(e.message).toMatch(/push order \(POST \/order\) failed with HTTP 400/);
    expect(isOrderRefusal(e)).toEqual({ status: 400, message: 'order_date is not a date' });
    await c.close();
  });

  it('renews a refused key once; a fresh key refused too is a key failure, not the order refused', async () => {
    srv.script('POST', '/stage/auth', { body: { authorization_key: KEY1 } }, { body: { authorization_key: KEY2 } });
    srv.script('POST', '/stage/order', { status: 401, body: { error: true, message: 'invalid authorization key' } });
    const c = client();
    const e = (await c.pushOrder(order).catch((x: unknown) => x)) as DataKeyError;
    expect(e).toBeInstanceOf(DataKeyError);
    expect(e.message).toMatch(/refused a key it had just issued: POST \/order failed with HTTP 401 twice/);
    expect(isOrderRefusal(e)).toBeUndefined();
    expect(srv.requestsTo('POST', '/stage/auth')).toHaveLength(2);
    expect(srv.requestsTo('POST', '/stage/order')).toHaveLength(2);
    await c.close();
  });

  it('keeps a 5xx on POST /auth retryable and named as the key request (not a key refusal)', async () => {
    srv.script('POST', '/stage/auth', { status: 503 }, { status: 503 }, { status: 503 }, { status: 503 });
    const c = client();
    const e = (await c.getKey().catch((x: unknown) => x)) as ServiceHttpError;
    expect(e).toBeInstanceOf(ServiceHttpError);
    expect(e).toMatchObject({ retryable: true, httpStatus: 503 });
    expect(e.message).toMatch(/get key \(POST \/auth\) failed with HTTP 503/);
    expect(isOrderRefusal(e)).toBeUndefined();
    await c.close();
  });
});
