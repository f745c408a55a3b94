// End to end against the sandbox: the service vets and pushes events (with duplicate deliveries injected) to
// the receiver, ingest loads them exactly once, and enrichment fetches the matched entities with the real
// events client.
import { afterAll, describe, expect, it } from 'vitest';
import * as fs from 'node:fs';
import path from 'node:path';
import { startSandbox, type RunningSandbox } from '../sandbox/server.ts';
import { createTokenClient } from '../client/token.ts';
import { createEventsClient } from '../client/events.ts';
import { SUBSCRIBABLE_EVENT_TYPES } from '../contract/index.ts';
import { startReceiver, type RunningReceiver } from '../webhook/start.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { ingestEvents } from '../store/ingest.ts';
import { enrichEvents } from '../activities/enrich.ts';
import { tempDir } from './helpers/tmp.ts';

const USER = 'sandbox-hook';
const PASS = 'sandbox-hook-password';

let sb: RunningSandbox | undefined;
let rx: RunningReceiver | undefined;
let store: Store | undefined;
const closers: Array<() => Promise<unknown> | unknown> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
  await rx?.close();
  await sb?.close();
  store?.close();
});

async function admin<T>(method: string, route: string, body?: unknown): Promise<T> {
  const r = await fetch(`${sb!.admin}${route}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  expect(r.status, `${method} ${route}`).toBe(200);
  return (await r.json()) as T;
}

describe('receiver fed by the sandbox service', () => {
  it('vets, receives, de-duplicates, loads and enriches the service\'s events', async () => {
    const base = tempDir();
    const journalDir = path.join(base, 'journal');
    rx = await startReceiver({ username: USER, password: PASS, journalDir, journal: { checkIntervalMs: 0 } });
    sb = await startSandbox({ port: 0, seed: 42 });
    const tokens = createTokenClient({ authBaseUrl: sb.baseUrls.auth, apiSecret: sb.credentials.apiSecret });
    const events = createEventsClient({ eventsBaseUrl: sb.baseUrls.events }, tokens);
    closers.push(() => events.close(), () => tokens.close());

    for (const type of SUBSCRIBABLE_EVENT_TYPES) {
      await events.createSubscription({ email: 'ops@example.com', url: rx.url, event_type: type, auth: { username: USER, password: PASS } });
    }
    const subs = await events.listSubscriptions();
    expect(subs.every((s) => s.active)).toBe(true); // vetting delivered registration.new and got 200

    await admin('POST', '/faults', { seed: 3, deliveries: { duplicateRate: 0.3 } });
    await admin('POST', '/clock', { advance: 'P10D' });

    // Match one chargeback: push an order with its card and amount through the order data interface.
    const emitted = await admin<Array<Record<string, unknown>>>('GET', '/events?type=chargeback.new');
    expect(emitted.length).toBeGreaterThan(0);
    const cb = emitted.find((e) => e.card_first_6 && e.card_last_4 && e.amount !== undefined)!;
    const auth = (await (
      await fetch(`${sb.baseUrls.orders}/auth`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: sb.credentials.dataUsername, password: sb.credentials.dataPassword }),
      })
    ).json()) as { authorization_key: string };
    const pushed = await fetch(`${sb.baseUrls.orders}/order`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${auth.authorization_key}` },
      body: JSON.stringify({
        order_id: 'E2E-1',
        order_date: '2025-12-01T10:00:00Z',
        order_total: Number(cb.amount).toFixed(2),
        currency: cb.currency ?? 'USD',
        order_status: 'Complete',
        cc_first_6: cb.card_first_6,
        cc_last_4: cb.card_last_4,
        billing_first_name: 'Ada',
        billing_last_name: 'Lovelace',
        fulfillment: { proof_of_service: [{ type: 'login', value: 'yes' }] },
      }),
    });
    expect(pushed.status, await pushed.clone().text()).toBe(200);
    await admin('POST', '/settle');

    await rx.close();
    const deliveries = await admin<Array<{ event_guid: string; status?: number; outcome: string }>>('GET', '/deliveries');
    const acked = new Set(deliveries.filter((d) => d.status === 200).map((d) => d.event_guid));
    const sends = deliveries.filter((d) => d.status === 200).length;
    expect(sends).toBeGreaterThan(acked.size); // duplicates were delivered

    store = await openTestStore({ dbPath: path.join(base, 'cbp.duckdb') });
    const r = await ingestEvents({ store, journalDir });
    expect(r.failed).toBe(0);
    expect(r.quarantined).toBe(0);
    const stored = (await store.all<{ event_guid: string }>('SELECT event_guid FROM events_raw')).map((x) => x.event_guid);
    expect(new Set(stored)).toEqual(acked);
    expect(r.duplicates).toBe(sends - acked.size);

    const matches = await store.all<{ chargeback_guid: string; order_guid: string }>('SELECT chargeback_guid, order_guid FROM stg_events__chargeback_match');
    expect(matches.length).toBeGreaterThanOrEqual(1);
    const regs = await store.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM stg_events__registration_new');
    expect(regs[0].n).toBe(SUBSCRIBABLE_EVENT_TYPES.length);

    const e1 = await enrichEvents({ store, events });
    expect(e1.failed).toEqual([]);
    expect(e1.fetched.chargeback).toBe(new Set(matches.map((m) => m.chargeback_guid)).size);
    const [c] = await store.all<{ found: boolean; payload: string }>(
      'SELECT found, payload FROM enriched_chargebacks WHERE chargeback_guid = $1',
      [matches[0].chargeback_guid],
    );
    expect(c.found).toBe(true);
    expect(JSON.parse(c.payload).chargeback_guid).toBe(matches[0].chargeback_guid);
    const [o] = await store.all<{ found: boolean }>('SELECT found FROM enriched_orders WHERE order_guid = $1', [matches[0].order_guid]);
    expect(o.found).toBe(true);
    const e2 = await enrichEvents({ store, events });
    expect(Object.values(e2.fetched).reduce((a, b) => a + b, 0) + Object.values(e2.notFound).reduce((a, b) => a + b, 0)).toBe(0);
  });
});
