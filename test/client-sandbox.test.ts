// The clients against the sandbox over real sockets: every operation of the four interfaces, record
// parsing of both report formats, token expiry met and survived, and injected faults retried through.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { createEventsClient, type EventsClient } from '../client/events.ts';
import { createOrderDataClient, type OrderDataClient } from '../client/order-data.ts';
import { createReportingClient, type ReportingClient } from '../client/reporting.ts';
import { readReportRecords } from '../client/report-records.ts';
import { createTokenClient, type TokenClient } from '../client/token.ts';
import { RECORD_SCHEMAS, REPORT_KINDS } from '../contract/index.ts';
import { createLogger } from '../lib/log.ts';
import { startSandbox, type RunningSandbox } from '../sandbox/index.ts';
import { startReceiver, type Receiver } from './sandbox-fixtures.ts';

const logger = createLogger({ level: 'silent' });
const retry = { sleep: async () => undefined, retries: 8 };

describe('clients against the sandbox', () => {
  let sb: RunningSandbox;
  let hook: Receiver;
  let tokens: TokenClient;
  let events: EventsClient;
  let data: OrderDataClient;
  let reporting: ReportingClient;
  let dir: string;
  // The token interface's real-time clock, moved by the test to expire tokens.
  let realNow = Math.floor(Date.now() / 1000);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-'));
    hook = await startReceiver();
    sb = await startSandbox({ port: 0, seed: 42, start: '2026-01-01', tokenTtlSeconds: 300, tokenClock: () => realNow });
    const c = sb.credentials;
    tokens = createTokenClient({ authBaseUrl: sb.baseUrls.auth, apiSecret: c.apiSecret }, { retry, logger });
    events = createEventsClient({ eventsBaseUrl: sb.baseUrls.events }, tokens, { retry, logger });
    data = createOrderDataClient({ dataBaseUrl: sb.baseUrls.ordersStage, dataUsername: c.dataUsername, dataPassword: c.dataPassword }, { retry, logger });
    reporting = createReportingClient({ reportingBaseUrl: sb.baseUrls.reporting, reportingKey: c.reportingKey, companyToken: c.companyToken }, { retry, logger });
  });
  afterAll(async () => {
    await Promise.all([tokens.close(), events.close(), data.close(), reporting.close()]);
    await sb.close();
    await hook.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const faults = (cfg: unknown) =>
    request(`${sb.admin}/faults`, { method: cfg === null ? 'DELETE' : 'POST', headers: { 'content-type': 'application/json' }, body: cfg === null ? undefined : JSON.stringify(cfg) }).then((r) => r.body.dump());

  it('manages a subscription through its whole life: create (vetted), list, get, update, ping, delete', async () => {
    const created = await events.createSubscription({ email: 'ops@example.com', url: hook.url, event_type: 'chargeback.new', auth: { username: 'hook', password: 'hook-pass' } });
    expect(created.active).toBe(false);
    expect((await events.getSubscription(created.guid)).active).toBe(true);
    expect((await events.listSubscriptions()).map((s) => s.guid)).toContain(created.guid);
    expect((await events.updateSubscription(created.guid, { active: false })).active).toBe(false);
    expect((await events.ping('chargeback.new')).urls).toEqual([hook.url]);
    const del = await events.deleteSubscription(created.guid);
    expect(del.status).toBe(200);
    const gone = await events.getSubscription(created.guid).catch((e: unknown) => e);
    expect(gone).toMatchObject({ iface: 'events', operation: 'get subscription', httpStatus: 404 });
  });

  it('refreshes an expired token on the 401 and carries on', async () => {
    await events.listSubscriptions();
    // Past the token's exp (and the client's own refresh time): the sandbox refuses it, the client renews it.
    realNow += 10_000;
    await expect(events.listSubscriptions()).resolves.toBeInstanceOf(Array);
  });

  it('pushes an order (create, then update with the same id) and looks up the four resources', async () => {
    const w = sb.state.world;
    const cb = w.chargebacks.find((c) => c.received_at < '2026-01-01')!;
    const first = await data.pushOrder({
      order_id: 'CLI-1',
      order_date: '2025-12-01 10:00:00',
      order_total: String(cb.amount),
      currency: 'USD',
      cc_first_6: cb.card_first_6,
      cc_last_4: cb.card_last_4,
      is_refund: 0,
    });
    const again = await data.pushOrder({ order_id: 'CLI-1', order_status: 'Refunded', is_refund: '1' } as never);
    expect(again.id).toBe(first.id);
    expect((await events.getOrder(first.id)).order_guid).toBe(first.id);
    expect((await events.getChargeback(cb.chargeback_guid)).case_number).toBe(cb.case_number);
    const al = w.alerts.find((a) => a.prevention_at < '2026-01-01')!;
    expect((await events.getPrevention(al.prevention_guid)).prevention_guid).toBe(al.prevention_guid);
    const ov = w.orderValidations.find((o) => o.received_at < '2026-01-01')!;
    expect((await events.getOrderValidation(ov.order_validation_guid)).card_first_6).toBe(ov.card_first_6);
    await expect(events.getChargeback('cb_00000000000000000000000000000000')).rejects.toMatchObject({ httpStatus: 404 });
  });

  it('downloads the three reports as JSON and CSV whose records parse with the contract and agree', async () => {
    for (const kind of REPORT_KINDS) {
      const counts: number[] = [];
      for (const format of ['JSON', 'CSV'] as const) {
        const dl = await reporting.fetchReport({ kind, start: '2025-12-01 00:00:00', end: '2025-12-31T23:59:59Z', format, dest: path.join(dir, `${kind}.${format}`) });
        expect(dl.empty).toBe(false);
        let n = 0;
        for await (const rec of readReportRecords(dl.path, kind, format)) {
          const r = RECORD_SCHEMAS[kind].safeParse(rec);
          expect(r.success, `${kind} ${format}: ${JSON.stringify(r.error?.issues)}`).toBe(true);
          n++;
        }
        counts.push(n);
      }
      expect(counts[0], kind).toBeGreaterThan(0);
      expect(counts[1], kind).toBe(counts[0]);
    }
    const none = await reporting.fetchReport({ kind: 'chargebacks', start: '2025-12-01 00:00:00', end: '2025-12-31 23:59:59', mids: ['no-such-mid'], dest: path.join(dir, 'none.json') });
    expect(none).toMatchObject({ empty: true, status: 200, bytes: 0 });
  });

  it('retries through injected 500, 502, 503, 504 and 429 answers on every interface', async () => {
    const spec = { errorRate: 0.5, errorStatuses: [500, 502, 503, 504], tooManyRate: 0.2, retryAfterSeconds: 0, limit: 6 };
    await faults({ seed: 3, interfaces: { auth: spec, events: spec, orders: spec, reporting: spec } });
    try {
      tokens.invalidate();
      data.invalidateKey();
      const s = await events.createSubscription({ email: 'ops@example.com', url: `${hook.url}/2`, event_type: 'prevention.new', auth: { username: 'hook', password: 'hook-pass' } });
      // However many times the create was repeated, one subscription exists for the url.
      expect((await events.listSubscriptions()).filter((x) => x.url === s.url)).toHaveLength(1);
      await data.pushOrder({ order_id: 'CLI-2', order_date: '2025-12-02T10:00:00Z', order_total: '5.00' });
      const dl = await reporting.fetchReport({ kind: 'mid_report', start: '2025-12-01 00:00:00', end: '2025-12-31 23:59:59', dest: path.join(dir, 'mid-faults.json') });
      expect(dl.empty).toBe(false);
      const { injected } = (await (await request(`${sb.admin}/faults`)).body.json()) as { injected: Record<string, number> };
      expect(Object.values(injected).reduce((a, b) => a + b, 0)).toBeGreaterThan(3);
    } finally {
      await faults(null);
    }
  });
});
