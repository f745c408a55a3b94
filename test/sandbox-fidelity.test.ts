// The sandbox against the spec's text, field by field and status by status: every field the events table
// lists is in every payload of its type, every field a lookup resource lists is in the lookup (matched or
// not), and odd-but-allowed or wrong requests get the spec's status with {error: true, message}.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ChargebackSchema, OrderSchema, OrderValidationSchema, PreventionAlertSchema } from '../contract/index.ts';
import { buildSandbox } from '../sandbox/server.ts';
import { tinyWorld } from './sandbox-fixtures.ts';

const BASE = ['event_guid', 'event_timestamp', 'event_type'];
const CB_NEW = [
  'alternate_transaction_id', 'amount', 'arn', 'auth_code', 'card_brand', 'card_first_6', 'card_last_4', 'case_number', 'chargeback_date',
  'chargeback_guid', 'currency', 'date_received', 'due_date', 'mid', 'processor_transaction_date', 'processor_transaction_id', 'reason_code',
  'reason_description',
];
const OV_NEW = [
  'order_validation_type', 'order_validation_timestamp', 'order_validation_guid', 'transaction_timestamp', 'amount', 'currency', 'card_first_6',
  'card_last_4', 'arn', 'auth_code', 'card_brand',
];
const PRE_NEW = [
  'amount', 'arn', 'card_first_6', 'card_last_4', 'currency', 'merchant_descriptor', 'mid', 'prevention_case_number', 'prevention_guid',
  'prevention_timestamp', 'prevention_type', 'transaction_timestamp',
];
const RDR_NEW = [
  'amount', 'arn', 'auth_code', 'card_first_6', 'card_last_4', 'currency', 'merchant_descriptor', 'rdr_case_number', 'rdr_guid', 'rdr_date',
  'rdr_resolution', 'prevention_type', 'transaction_date',
];
/** The spec's events table, field for field. */
const EVENT_FIELDS: Record<string, string[]> = {
  'chargeback.new': CB_NEW,
  'chargeback.match': [...CB_NEW, 'crm_account_guid', 'order_guid', 'order_id'],
  'chargeback.result': ['arn', 'case_number', 'chargeback_guid', 'mid', 'result'],
  'chargeback.dnf': ['arn', 'case_number', 'chargeback_guid', 'mid', 'dnf_reason', 'dnf_timestamp'],
  'order_validation.new': OV_NEW,
  'order_validation.match': [...OV_NEW, 'order_guid', 'order_id', 'crm_account_guid', 'mid'],
  'prevention.new': PRE_NEW,
  'prevention.match': [...PRE_NEW, 'crm_account_guid', 'order_guid', 'order_id'],
  'rdr.new': RDR_NEW,
  'rdr.match': [...RDR_NEW, 'order_guid', 'order_id', 'crm_account_guid'],
};
/** The spec's lookup resources, field for field. */
const RESOURCE_FIELDS = {
  chargeback: [
    'amount', 'arn', 'card_brand', 'card_first_6', 'card_last_4', 'case_number', 'chargeback_date', 'chargeback_guid', 'currency', 'date_received',
    'mid', 'order_guid', 'order_id', 'reason_code',
  ],
  prevention: [
    'amount', 'arn', 'card_brand', 'card_first_6', 'card_last_4', 'currency', 'merchant_descriptor', 'mid', 'order_guid', 'order_id',
    'prevention_case_number', 'prevention_guid', 'prevention_timestamp', 'prevention_type', 'transaction_timestamp',
  ],
  order_validation: [
    'order_validation_type', 'order_validation_timestamp', 'order_validation_guid', 'transaction_timestamp', 'amount', 'currency', 'card_first_6',
    'card_last_4', 'arn', 'auth_code', 'card_brand', 'order_guid', 'order_id', 'crm_account_guid', 'mid',
  ],
  order: [
    'order_guid', 'crm_order_id', 'mid', 'card_first_6', 'card_last_4', 'card_brand', 'amount', 'currency', 'billing_first_name', 'billing_last_name',
    'order_date',
  ],
};

const missing = (o: Record<string, unknown>, fields: string[]) => fields.filter((f) => !(f in o));

describe('sandbox payloads carry every field the spec lists', () => {
  let app: FastifyInstance;
  let auth: Record<string, string>;
  beforeAll(async () => {
    app = await buildSandbox({ seed: 42, start: '2026-01-01' });
    const { token } = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json();
    auth = { authorization: `Bearer ${token}` };
    const { authorization_key: k } = (await app.inject({ method: 'POST', url: '/orders/v1/auth', payload: { username: 'sandbox-user', password: 'sandbox-password' } })).json();
    for (const o of app.sandbox.world.orders.slice(0, 600)) {
      await app.inject({ method: 'POST', url: '/orders/v1/order', headers: { authorization: `Bearer ${k}` }, payload: o });
    }
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P45D' } });
  });
  afterAll(async () => {
    await app.close();
  });

  it('every emitted event of each type has the fields of the events table (an unavailable arn is an empty string)', async () => {
    const events = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json() as Array<Record<string, unknown>>;
    const seen = new Set<string>();
    const problems: string[] = [];
    for (const e of events) {
      const t = String(e.event_type);
      const fields = EVENT_FIELDS[t];
      expect(fields, `unexpected event type ${t}`).toBeDefined();
      seen.add(t);
      const m = missing(e, [...BASE, ...fields]);
      if (m.length) problems.push(`${t} ${String(e.event_guid)} lacks ${m.join(', ')}`);
    }
    expect(problems.slice(0, 5)).toEqual([]);
    for (const t of ['chargeback.new', 'chargeback.match', 'chargeback.result', 'chargeback.dnf', 'prevention.new', 'prevention.match', 'rdr.new']) {
      expect(seen.has(t), t).toBe(true);
    }
    const noArn = events.find((e) => e.arn === '');
    if (noArn) expect(typeof noArn.arn).toBe('string');
  });

  it('lookups carry every field of their resource, matched or not, and parse with the contract', async () => {
    const w = app.sandbox.world;
    const get = async (p: string) => {
      const r = await app.inject({ method: 'GET', url: `/events/v1/${p}`, headers: auth });
      expect(r.statusCode, r.body).toBe(200);
      return r.json() as Record<string, unknown>;
    };
    const matched = new Set(app.sandbox.matches.keys());
    const cbs = [w.chargebacks.find((c) => matched.has(c.chargeback_guid)), w.chargebacks.find((c) => !matched.has(c.chargeback_guid))];
    for (const c of cbs) {
      const r = await get(`chargeback/${c!.chargeback_guid}`);
      expect(missing(r, RESOURCE_FIELDS.chargeback)).toEqual([]);
      ChargebackSchema.parse(r);
    }
    for (const a of [w.alerts.find((x) => matched.has(x.prevention_guid)), w.alerts.find((x) => !matched.has(x.prevention_guid))]) {
      const r = await get(`prevention/${a!.prevention_guid}`);
      expect(missing(r, RESOURCE_FIELDS.prevention)).toEqual([]);
      PreventionAlertSchema.parse(r);
    }
    const ov = await get(`order_validation/${w.orderValidations[0].order_validation_guid}`);
    expect(missing(ov, RESOURCE_FIELDS.order_validation)).toEqual([]);
    // The resource table types card_first_6 (and amount) as numbers.
    expect(typeof ov.card_first_6).toBe('number');
    expect(typeof ov.amount).toBe('number');
    OrderValidationSchema.parse(ov);
    const order = [...app.sandbox.ordersByGuid.values()][0];
    const o = await get(`order/${order.id}`);
    expect(missing(o, RESOURCE_FIELDS.order)).toEqual([]);
    expect(typeof o.amount).toBe('number');
    OrderSchema.parse(o);
  });

  it('MID records have the spec fields, every network object its six numbers, master_card its previous month', async () => {
    const r = await app.inject({
      method: 'POST',
      url: '/reporting/mid_report',
      headers: { authorization: 'Bearer sandbox-reporting-key' },
      payload: { start_date: '2025-12-01 00:00:00', end_date: '2025-12-31 23:59:59', company_token: 'sandbox-company-token' },
    });
    const recs = r.json() as Array<Record<string, any>>;
    expect(recs.length).toBeGreaterThan(0);
    const six = ['chargeback_amount_ratio', 'chargeback_amount', 'chargeback_count', 'chargeback_ratio', 'transaction_amount', 'transaction_count'];
    for (const rec of recs) {
      expect(typeof rec.mid).toBe('string');
      expect(typeof rec.alias).toBe('string');
      expect(Array.isArray(rec.gateways)).toBe(true);
      for (const f of six) expect(typeof rec[f], `${rec.mid} ${f}`).toBe('number');
      for (const n of ['visa', 'master_card', 'discover', 'amex']) {
        for (const f of six) expect(typeof rec[n][f], `${rec.mid} ${n}.${f}`).toBe('number');
        expect(Number.isInteger(rec[n].chargeback_count) && Number.isInteger(rec[n].transaction_count)).toBe(true);
      }
      expect(typeof rec.master_card.previous_month_transaction_amount).toBe('number');
      expect(Number.isInteger(rec.master_card.previous_month_transaction_count)).toBe(true);
    }
  });
});

describe('sandbox answers odd and wrong requests as the spec says', () => {
  let app: FastifyInstance;
  let token: string;
  let key: string;
  beforeAll(async () => {
    app = await buildSandbox({ world: tinyWorld() });
    token = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json().token;
    key = (await app.inject({ method: 'POST', url: '/orders/v1/auth', payload: { username: 'sandbox-user', password: 'sandbox-password' } })).json().authorization_key;
  });
  afterAll(async () => {
    await app.close();
  });

  const report = (body: unknown, headers: Record<string, string> = {}, path = 'chargebacks') =>
    app.inject({
      method: 'POST',
      url: `/reporting/${path}`,
      headers: { authorization: 'Bearer sandbox-reporting-key', 'content-type': 'application/json', ...headers },
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
  const range = { start_date: '2026-01-01 00:00:00', end_date: '2026-01-31 23:59:59', company_token: 'sandbox-company-token' };

  it('accepts both date-time spellings, lower-case csv, mids: [], no output_format and a charset in Content-Type', async () => {
    await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { to: '2026-01-20T00:00:00Z' } });
    const a = await report(range, { 'content-type': 'application/json; charset=utf-8' });
    expect(a.statusCode).toBe(200);
    expect(Array.isArray(a.json())).toBe(true);
    const b = await report({ ...range, start_date: '2026-01-01T00:00:00Z', end_date: '2026-01-31T23:59:59Z', mids: [] });
    expect(b.json()).toEqual(a.json());
    const c = await report({ ...range, output_format: 'csv' });
    expect(c.statusCode).toBe(200);
    expect(c.headers['content-type']).toMatch(/^text\/csv/);
    expect(c.body.split('\n')[0]).toMatch(/^case_number,status,/);
    for (const kind of ['prevention', 'mid_report']) expect((await report({ ...range, output_format: 'Json' }, {}, kind)).statusCode).toBe(200);
    // Optional fields sent as null read as left out.
    const d = await report({ ...range, mids: null, output_format: null });
    expect(d.statusCode, d.body).toBe(200);
    expect(d.json()).toEqual(a.json());
  });

  it('answers wrong requests with the spec status and {error: true, message}', async () => {
    const ev = (headers: Record<string, string>, url = '/events/v1/subscribe') => app.inject({ method: 'GET', url, headers });
    const cases: Array<[string, Promise<{ statusCode: number; json(): unknown }>, number]> = [
      ['token: no Authorization', app.inject({ method: 'POST', url: '/auth/v1/auth' }), 400],
      ['token: Bearer with no secret', app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer ' } }), 400],
      ['token: wrong secret', app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer nope' } }), 401],
      ['events: no Authorization', ev({}), 400],
      ['events: Bearer with no token', ev({ authorization: 'Bearer ' }), 400],
      ['events: a token that is not ours', ev({ authorization: 'Bearer aaa.bbb.ccc' }), 401],
      ['events: unknown chargeback guid', ev({ authorization: `Bearer ${token}` }, '/events/v1/chargeback/cb_00000000000000000000000000000000'), 404],
      // Named as the event_type in the chargeback.result/.dnf field descriptions, but not one of the 8 subscribable types.
      ['events: subscribe to chargeback.responded', app.inject({ method: 'POST', url: '/events/v1/subscribe', headers: { authorization: `Bearer ${token}` }, payload: { email: 'ops@example.com', url: 'https://hooks.example.com/x', event_type: 'chargeback.responded', auth: { username: 'u', password: 'p' } } }), 400],
      ['events: ping chargeback.responded', ev({ authorization: `Bearer ${token}` }, '/events/v1/ping/chargeback.responded'), 400],
      ['events: unknown subscription guid', ev({ authorization: `Bearer ${token}` }, '/events/v1/subscribe/sub_00000000000000000000000000000000'), 404],
      ['reporting: no Authorization', report(range, { authorization: '' }), 401],
      ['reporting: Bearer with no key', report(range, { authorization: 'Bearer ' }), 401],
      ['reporting: wrong company_token', report({ ...range, company_token: 'nope' }), 401],
      ['reporting: start after end', report({ ...range, start_date: '2026-02-01 00:00:00' }), 400],
      ['reporting: unknown output_format', report({ ...range, output_format: 'XML' }), 400],
      ['reporting: a body that is not JSON', report('{"start_date":'), 400],
      ['reporting: text/plain', report(range, { 'content-type': 'text/plain' }), 400],
      ['orders: no key', app.inject({ method: 'POST', url: '/orders/v1/order', payload: { order_id: 'X' } }), 401],
      ['orders: invalid fields', app.inject({ method: 'POST', url: '/orders/v1/order', headers: { authorization: `Bearer ${key}` }, payload: { order_id: 'X', order_date: 'soon', order_total: '1' } }), 422],
      ['orders: text/plain', app.inject({ method: 'POST', url: '/orders/v1/order', headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' }, payload: '{}' }), 400],
    ];
    for (const [what, p, status] of cases) {
      const r = await p;
      expect(r.statusCode, what).toBe(status);
      const body = r.json() as Record<string, unknown>;
      expect(body.error, what).toBe(true);
      expect(typeof body.message, what).toBe('string');
    }
  });

  it('never echoes a body that is not valid JSON (it may hold a credential) in the error message', async () => {
    const r = await app.inject({ method: 'POST', url: '/orders/v1/auth', headers: { 'content-type': 'application/json' }, payload: '{"username":"sandbox-user","password":sandbox-password}' });
    expect(r.statusCode).toBe(400);
    expect(r.json().error).toBe(true);
    expect(r.json().message).toMatch(/not valid JSON/);
    expect(r.body).not.toContain('sandbox-pa');
  });

  it('takes order booleans as "1", 1 or true and order_date in either spelling; an update answers the same id', async () => {
    const h = { authorization: `Bearer ${key}`, 'content-type': 'application/json; charset=utf-8' };
    const first = await app.inject({
      method: 'POST',
      url: '/orders/v1/order',
      headers: h,
      payload: JSON.stringify({ order_id: 'B-1', order_date: '2026-01-05 10:00:00', order_total: '10.00', is_refund: '0', is_recurring: true, is_test_cc: 1, cc_first_6: '411111', cc_last_4: '1111' }),
    });
    expect(first.statusCode, first.body).toBe(200);
    const again = await app.inject({ method: 'POST', url: '/orders/v1/order', headers: h, payload: JSON.stringify({ order_id: 'B-1', order_date: '2026-01-05T10:00:00Z', is_refund: '1', refunded_to_date: '10.00' }) });
    expect(again.json()).toEqual({ id: first.json().id });
    const o = (await app.inject({ method: 'GET', url: `/events/v1/order/${first.json().id}`, headers: { authorization: `Bearer ${token}` } })).json();
    // Pushed without cc_type: the card network comes from the BIN.
    expect(o).toMatchObject({ order_date: '2026-01-05T10:00:00Z', card_brand: 'visa', amount: 10 });
  });

  it('answers the token request by POST and by GET on /auth and /auth/ (the method is not shown)', async () => {
    for (const [method, url] of [['POST', '/auth/v1/auth'], ['POST', '/auth/v1/auth/'], ['GET', '/auth/v1/auth']] as const) {
      const r = await app.inject({ method, url, headers: { authorization: 'Bearer sandbox-api-secret' } });
      expect(r.statusCode, `${method} ${url}`).toBe(200);
      expect(typeof r.json().token).toBe('string');
    }
  });

  it('updates a subscription by PUT, and by PATCH or POST on the same path (the method is not shown)', async () => {
    const h = { authorization: `Bearer ${token}` };
    const created = await app.inject({
      method: 'POST',
      url: '/events/v1/subscribe',
      headers: h,
      payload: { email: 'ops@example.com', url: 'http://127.0.0.1:9/none', event_type: 'rdr.new', auth: { username: 'u', password: 'p' } },
    });
    const guid = created.json().guid as string;
    for (const [method, active] of [['PUT', true], ['PATCH', false], ['POST', true]] as const) {
      const r = await app.inject({ method, url: `/events/v1/subscribe/${guid}`, headers: h, payload: { active } });
      expect(r.statusCode, method).toBe(200);
      expect(r.json().active, method).toBe(active);
    }
  });
});
