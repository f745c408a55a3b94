import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createEventsClient, type EventsClient } from '../client/events.ts';
import { createTokenClient, type TokenClient } from '../client/token.ts';
import { ServiceHttpError, ServiceResponseError } from '../client/errors.ts';
import { ValidationError } from '../lib/errors.ts';
import { createLogger } from '../lib/log.ts';
import { fakeJwt, startScriptedServer, type ScriptedServer } from './helpers/scripted-server.ts';

let srv: ScriptedServer;
let tokens: TokenClient;
let ev: EventsClient;
const logger = createLogger({ level: 'silent' });
const retry = { sleep: async () => {}, random: () => 0, retries: 2 };
const exp = () => Math.floor(Date.now() / 1000) + 3600;
const T1 = fakeJwt({ exp: exp(), n: 1 });
const T2 = fakeJwt({ exp: exp(), n: 2 });

const GUID = 'sub_540385dce935441baca73ae04d319c35';
const subscription = {
  guid: GUID,
  email: 'ops@example.com',
  url: 'https://merchant.example.com/events',
  event_type: 'chargeback.new',
  active: false,
  created_at: '2026-11-01T10:00:00Z',
  updated_at: '2026-11-01 10:00:00',
  auth: { username: 'svc', password: 'hook-secret-pw' },
};

beforeAll(async () => {
  srv = await startScriptedServer();
});
afterAll(() => srv.close());
beforeEach(async () => {
  await ev?.close();
  await tokens?.close();
  srv.reset();
  srv.script('POST', '/v1/auth', { body: { token: T1 } }, { body: { token: T2 } });
  tokens = createTokenClient({ authBaseUrl: `${srv.url}/v1`, apiSecret: 'events-api-secret' }, { retry, logger });
  ev = createEventsClient({ eventsBaseUrl: `${srv.url}/v1` }, tokens, { retry, logger });
});

describe('events interface', () => {
  it('creates a subscription with POST /subscribe and the bearer token', async () => {
    srv.script('POST', '/v1/subscribe', { body: subscription });
    const got = await ev.createSubscription({
      email: 'ops@example.com',
      url: 'https://merchant.example.com/events',
      event_type: 'chargeback.new',
      auth: { username: 'svc', password: 'hook-secret-pw' },
    });
    expect(got).toMatchObject({ guid: GUID, active: false, updated_at: '2026-11-01T10:00:00Z' });
    const [req] = srv.requestsTo('POST', '/v1/subscribe');
    expect(req.headers.authorization).toBe(`Bearer ${T1}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.json()).toEqual({ email: 'ops@example.com', url: 'https://merchant.example.com/events', event_type: 'chargeback.new', auth: { username: 'svc', password: 'hook-secret-pw' } });
  });

  it('refuses a subscription request that does not match the contract before sending it', async () => {
    const e = await ev.createSubscription({ email: 'not-an-email', url: 'https://x.example.com', event_type: 'order_validation.new', auth: { username: 'u', password: 'p' } } as never).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as Error).message).toMatch(/email/);
    expect((e as Error).message).toMatch(/event_type/);
    expect(srv.requestsTo('POST', '/v1/subscribe')).toHaveLength(0);
  });

  it('lists subscriptions with GET /subscribe', async () => {
    srv.script('GET', '/v1/subscribe', { body: [subscription, { ...subscription, guid: 'sub_2', active: true }] });
    const got = await ev.listSubscriptions();
    expect(got.map((s) => s.guid)).toEqual([GUID, 'sub_2']);
  });

  it("reads a list holding another consumer's subscription of a shape cbp does not know, and parses only the items asked for", async () => {
    const basic = 'Basic Y3JtOkNSTVNFQ1JFVA==';
    const crm = { guid: 'sub_crm', email: 'crm@merchant.example', url: 'https://u:CRMSECRET@crm.example/h', event_type: 'order_validation.new', active: true, auth: basic };
    srv.script('GET', '/v1/subscribe', { body: [subscription, crm, 'not an object', { guid: 7, active: 'yes' }], headers: { date: 'Sun, 15 Mar 2026 12:00:00 GMT' } });
    const { items, date } = await ev.listSubscriptionItems();
    expect(date).toBe('2026-03-15T12:00:00Z');
    expect(items.map(({ index, guid, url, email, event_type, active }) => ({ index, guid, url, email, event_type, active }))).toEqual([
      { index: 0, guid: GUID, url: subscription.url, email: subscription.email, event_type: 'chargeback.new', active: false },
      { index: 1, guid: 'sub_crm', url: crm.url, email: crm.email, event_type: 'order_validation.new', active: true },
      { index: 2, guid: undefined, url: undefined, email: undefined, event_type: undefined, active: undefined },
      { index: 3, guid: '7', url: undefined, email: undefined, event_type: undefined, active: undefined },
    ]);
    // Nothing of the item is kept beyond those fields (its auth is not even read).
    expect(JSON.stringify(items)).not.toContain('Y3Jt');
    expect(items[0]!.subscription()).toMatchObject({ guid: GUID, updated_at: '2026-11-01T10:00:00Z' });
    // Parsed strictly, a mismatch names the item and its fields, never a value; so does the whole list.
    for (const e of [(() => { try { return items[1]!.subscription(); } catch (x) { return x; } })(), await ev.listSubscriptions().catch((x: unknown) => x)]) {
      expect(e).toBeInstanceOf(ServiceResponseError);
      const m = (e as Error).message;
      expect(m).toContain('item 1 (sub_crm): event_type: expected one of chargeback.new');
      expect(m).toContain('item 1 (sub_crm): auth: expected object (got a string)');
      expect(m).toContain('item 1 (sub_crm): created_at');
      for (const v of ['Y3Jt', 'CRMSECRET', 'order_validation.new', 'crm.example', 'crm@merchant']) expect(m, v).not.toContain(v);
    }
  });

  it('never quotes a subscription list that is not JSON or not an array (other consumers\' data is in it)', async () => {
    srv.script('GET', '/v1/subscribe', { body: '[{"guid":"sub_crm","auth":"Basic Y3JtOkNSTVNFQ1JFVA=="' }, { body: { subscriptions: [{ auth: 'Basic Y3JtOkNSTVNFQ1JFVA==' }] } });
    const cut = (await ev.listSubscriptionItems().catch((x: unknown) => x)) as ServiceResponseError;
    expect(cut).toBeInstanceOf(ServiceResponseError);
    expect(cut.message).toMatch(/characters that are not JSON/);
    const obj = (await ev.listSubscriptionItems().catch((x: unknown) => x)) as ServiceResponseError;
    expect(obj.message).toContain('expected array (got an object)');
    for (const m of [cut.message, obj.message]) expect(m).not.toMatch(/Y3Jt|sub_crm/);
  });

  it('gets one subscription with GET /subscribe/{guid}', async () => {
    srv.script('GET', `/v1/subscribe/${GUID}`, { body: subscription });
    expect((await ev.getSubscription(GUID)).guid).toBe(GUID);
  });

  it('updates a subscription with PUT /subscribe/{guid}', async () => {
    srv.script('PUT', `/v1/subscribe/${GUID}`, { body: { ...subscription, active: true } });
    const got = await ev.updateSubscription(GUID, { active: true });
    expect(got.active).toBe(true);
    expect(srv.requestsTo('PUT', `/v1/subscribe/${GUID}`)[0].json()).toEqual({ active: true });
  });

  it('refuses an empty update before sending it', async () => {
    await expect(ev.updateSubscription(GUID, {})).rejects.toBeInstanceOf(ValidationError);
    expect(srv.requestsTo('PUT', `/v1/subscribe/${GUID}`)).toHaveLength(0);
  });

  it('deletes a subscription with DELETE /subscribe/{guid}, whatever the answer body (none, JSON or text)', async () => {
    srv.script('DELETE', `/v1/subscribe/${GUID}`, { status: 200 }, { status: 200, body: { success: true } }, { status: 200, body: 'deleted' }, { status: 204 });
    expect(await ev.deleteSubscription(GUID)).toEqual({ status: 200, body: undefined });
    expect(await ev.deleteSubscription(GUID)).toEqual({ status: 200, body: { success: true } });
    expect(await ev.deleteSubscription(GUID)).toEqual({ status: 200, body: 'deleted' });
    expect(await ev.deleteSubscription(GUID)).toEqual({ status: 204, body: undefined });
  });

  it('tests subscriptions with GET /ping/{event_type}', async () => {
    srv.script('GET', '/v1/ping/chargeback.new', { body: { urls: ['https://merchant.example.com/events'] } });
    expect(await ev.ping('chargeback.new')).toEqual({ urls: ['https://merchant.example.com/events'] });
    await expect(ev.ping('nope')).rejects.toBeInstanceOf(ValidationError);
  });

  it('looks up a chargeback, a prevention alert, an order validation request and an order', async () => {
    srv.script('GET', '/v1/chargeback/cb_1', { body: { chargeback_guid: 'cb_1', amount: '94.76', case_number: 'C1', mid: 'M1', card_brand: 'MasterCard' } });
    srv.script('GET', '/v1/prevention/pre_1', { body: { prevention_guid: 'pre_1', amount: 10, prevention_type: 'Ethoca' } });
    srv.script('GET', '/v1/order_validation/ov_1', { body: { order_validation_guid: 'ov_1', order_validation_type: 'order_insight', amount: '5.00', card_first_6: 411111 } });
    srv.script('GET', '/v1/order/ord_1', { body: { order_guid: 'ord_1', amount: 12.5, order_date: '2026-10-01 12:00:00' } });
    expect(await ev.getChargeback('cb_1')).toMatchObject({ amount: 94.76, card_brand: 'mastercard' });
    expect(await ev.getPrevention('pre_1')).toMatchObject({ prevention_type: 'ethoca' });
    expect(await ev.getOrderValidation('ov_1')).toMatchObject({ amount: 5, card_first_6: '411111' });
    expect(await ev.getOrder('ord_1')).toMatchObject({ order_date: '2026-10-01T12:00:00Z' });
    for (const r of srv.requests.filter((x) => x.method === 'GET')) expect(r.headers.authorization).toBe(`Bearer ${T1}`);
  });

  it('encodes a guid so it cannot change the path', async () => {
    srv.script('GET', '/v1/order/a%2F..%2Fb', { body: { order_guid: 'a/../b', amount: 1 } });
    expect((await ev.getOrder('a/../b')).order_guid).toBe('a/../b');
  });

  it('names the fields of an answer that does not match the contract', async () => {
    srv.script('GET', '/v1/chargeback/cb_2', { body: { chargeback_guid: 'cb_2', amount: 'lots', mid: 'M1' } });
    const e = (await ev.getChargeback('cb_2').catch((x: unknown) => x)) as ServiceResponseError;
    expect(e).toBeInstanceOf(ServiceResponseError);
    expect(e.code).toBe('CBP_ERR_SERVICE_RESPONSE');
    expect(e.message).toContain('amount');
    expect(e.message).toContain('case_number');
    expect(e.retryable).toBe(false);
  });

  it('reports a lookup of an entity that does not exist as a not-found error, without retrying', async () => {
    srv.script('GET', '/v1/chargeback/cb_none', { status: 404, body: { error: true, message: 'chargeback not found' } });
    const e = (await ev.getChargeback('cb_none').catch((x: unknown) => x)) as ServiceHttpError;
    expect(e).toMatchObject({ code: 'CBP_ERR_SERVICE_NOT_FOUND', httpStatus: 404, iface: 'events', operation: 'get chargeback', retryable: false });
    expect(e.serviceMessage).toBe('chargeback not found');
    expect(srv.requestsTo('GET', '/v1/chargeback/cb_none')).toHaveLength(1);
  });

  it('on a 401 fetches a fresh token and sends the request once more', async () => {
    srv.script('GET', `/v1/subscribe/${GUID}`, { status: 401, body: { error: true, message: 'token expired' } }, { body: subscription });
    expect((await ev.getSubscription(GUID)).guid).toBe(GUID);
    const reqs = srv.requestsTo('GET', `/v1/subscribe/${GUID}`);
    expect(reqs.map((r) => r.headers.authorization)).toEqual([`Bearer ${T1}`, `Bearer ${T2}`]);
    expect(srv.requestsTo('POST', '/v1/auth')).toHaveLength(2);
  });

  it('gives up after the second 401 and says to check CBP_API_SECRET', async () => {
    srv.script('GET', '/v1/subscribe', { status: 401, body: { error: true, message: 'invalid authorization header' } });
    const e = (await ev.listSubscriptions().catch((x: unknown) => x)) as ServiceHttpError;
    expect(e).toBeInstanceOf(ServiceHttpError);
    expect(e.message).toContain('CBP_API_SECRET');
    expect(e.message).not.toContain(T2);
    expect(srv.requestsTo('GET', '/v1/subscribe')).toHaveLength(2);
  });

  it('keeps a 400 with the fields the service named, without retrying', async () => {
    srv.script('PUT', `/v1/subscribe/${GUID}`, { status: 400, body: { error: true, message: 'event_type cannot be changed', fields: ['event_type'] } });
    const e = (await ev.updateSubscription(GUID, { active: false, event_type: 'rdr.new' } as never).catch((x: unknown) => x)) as ServiceHttpError;
    expect(e.code).toBe('CBP_ERR_SERVICE_BAD_REQUEST');
    expect(e.message).toContain('fix the request (fields: event_type)');
    expect(e.message).toContain('event_type cannot be changed');
    expect(srv.requestsTo('PUT', `/v1/subscribe/${GUID}`)).toHaveLength(1);
  });

  it('never carries on a webhook password the service echoes in an error', async () => {
    const echo = { error: true, message: 'auth rejected: {"username":"svc","password":"rotated-hook-pw"} is not allowed' };
    srv.script('PUT', `/v1/subscribe/${GUID}`, { status: 400, body: echo });
    srv.script('POST', '/v1/subscribe', { status: 400, body: { ...echo, message: echo.message.replace('rotated-hook-pw', 'hook-secret-pw') } });
    const update = (await ev.updateSubscription(GUID, { auth: { username: 'svc', password: 'rotated-hook-pw' } }).catch((x: unknown) => x)) as ServiceHttpError;
    const create = (await ev
      .createSubscription({ email: 'ops@example.com', url: 'https://merchant.example.com/events', event_type: 'chargeback.new', auth: { username: 'svc', password: 'hook-secret-pw' } })
      .catch((x: unknown) => x)) as ServiceHttpError;
    for (const e of [update, create]) {
      expect(e.code).toBe('CBP_ERR_SERVICE_BAD_REQUEST');
      expect(e.message).toContain('auth rejected');
      expect(JSON.stringify({ message: e.message, details: (e as { details?: unknown }).details })).not.toMatch(/rotated-hook-pw|hook-secret-pw/);
    }
  });

  it('retries a lookup after a dropped connection and a 503', async () => {
    srv.script('GET', '/v1/order/ord_9', 'destroy', { status: 503 }, { body: { order_guid: 'ord_9', amount: 3 } });
    expect((await ev.getOrder('ord_9')).order_guid).toBe('ord_9');
    expect(srv.requestsTo('GET', '/v1/order/ord_9')).toHaveLength(3);
  });
});
