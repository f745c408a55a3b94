// The server over a generated world (the built-in scenario): what it emits parses with the contract, in
// time order, and the scenario's merchant orders, once pushed, match their cases.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { ChargebackSchema, EventSchema } from '../contract/index.ts';
import { buildSandbox } from '../sandbox/server.ts';

describe('sandbox over the generated world', () => {
  let app: FastifyInstance;
  let auth: Record<string, string>;
  beforeAll(async () => {
    app = await buildSandbox({ seed: 42, start: '2026-01-01' });
    const { token } = (await app.inject({ method: 'POST', url: '/auth/v1/auth', headers: { authorization: 'Bearer sandbox-api-secret' } })).json();
    auth = { authorization: `Bearer ${token}` };
  });
  afterAll(async () => {
    await app.close();
  });

  it('emits only events that parse with the contract, in time order, as the clock passes them', async () => {
    const res = await app.inject({ method: 'POST', url: '/_sandbox/clock', payload: { advance: 'P30D' } });
    expect(res.json().events).toBeGreaterThan(100);
    const events = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json() as Array<Record<string, string>>;
    const bad = events.map((e) => [e, EventSchema.safeParse(e)] as const).filter(([, r]) => !r.success);
    expect(bad.slice(0, 3).map(([e, r]) => `${e.event_type}: ${JSON.stringify(r.error?.issues)}`)).toEqual([]);
    const stamps = events.map((e) => e.event_timestamp);
    expect(stamps).toEqual([...stamps].sort());
    expect(stamps[0] >= '2026-01-01T00:00:00Z').toBe(true);
    const types = new Set(events.map((e) => e.event_type));
    for (const t of ['chargeback.new', 'prevention.new', 'chargeback.result']) expect(types.has(t), t).toBe(true);
    const cb = events.find((e) => e.event_type === 'chargeback.new')!;
    const look = await app.inject({ method: 'GET', url: `/events/v1/chargeback/${cb.chargeback_guid}`, headers: auth });
    expect(ChargebackSchema.parse(look.json()).case_number).toBe(cb.case_number);
  });

  it('matches the scenario\'s merchant orders to their cases once pushed', async () => {
    const { authorization_key: k } = (await app.inject({ method: 'POST', url: '/orders/stage/auth', payload: { username: 'sandbox-user', password: 'sandbox-password' } })).json();
    const orders = app.sandbox.world.orders.slice(0, 400);
    for (const o of orders) {
      const r = await app.inject({ method: 'POST', url: '/orders/stage/order', headers: { authorization: `Bearer ${k}` }, payload: o });
      expect(r.statusCode, r.body).toBe(200);
    }
    await app.inject({ method: 'POST', url: '/_sandbox/settle' });
    const matches = (await app.inject({ method: 'GET', url: '/_sandbox/events' })).json().filter((e: { event_type: string }) => e.event_type.endsWith('.match'));
    expect(matches.length).toBeGreaterThan(0);
    // Each match names an order pushed, and it is the case's own: the same MID, card and amount.
    const pushed = new Map(orders.map((o) => [o.order_id, o]));
    for (const m of matches) {
      expect(EventSchema.safeParse(m).success).toBe(true);
      const o = pushed.get(m.order_id);
      expect(o, `${m.event_type} ${m.case_number ?? m.alert_case_id} names order ${m.order_id}, never pushed`).toBeDefined();
      expect({ last4: o!.cc_last_4, amount: Number(o!.order_total) }).toEqual({ last4: m.card_last_4, amount: Number(m.amount) });
      if (m.mid !== undefined) expect(o!.transaction_merchant_id).toBe(m.mid);
    }
  });
});
