import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MerchantOrderSchema, type MerchantOrder } from '../contract/index.ts';
import { canonicalJson, orderHash, planOrderPushes } from '../workflows/orders.ts';
import { pushOrders, type PushOrdersInput, type PushOrdersResult } from '../workflows/push-orders.ts';
import { sha256Hex } from '../workflows/sha256.ts';
import { callsOf, createFakes } from './workflows-fakes.ts';

const order = (id: string, over: Record<string, unknown> = {}): MerchantOrder =>
  MerchantOrderSchema.parse({ order_id: id, order_date: '2026-03-01T10:00:00Z', order_total: '94.76', currency: 'USD', order_status: 'Complete', ...over });

const pushedIds = (calls: unknown[][]) => calls.flatMap(([orders]) => (orders as MerchantOrder[]).map((o) => o.order_id));

describe('order change detection', () => {
  it('hashes with SHA-256, the same as node:crypto', () => {
    for (const s of ['', 'abc', 'x'.repeat(55), 'x'.repeat(56), 'x'.repeat(119), 'héllo wörld 😀 €', '\u{10FFFF}']) {
      expect(sha256Hex(s)).toBe(createHash('sha256').update(s).digest('hex'));
    }
  });

  it('ignores key order and fields that are not given (absent, null, empty)', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null }, e: '' })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
    expect(orderHash({ order_id: 'A1', order_total: '10.00', notes: undefined })).toBe(orderHash({ order_total: '10.00', order_id: 'A1', rma_reason: null }));
  });

  it('sees a refund, a new note and a status change as changes', () => {
    const base = orderHash(order('A1'));
    expect(orderHash(order('A1', { is_refund: 1, refunded_to_date: '10.00' }))).not.toBe(base);
    expect(orderHash(order('A1', { notes: [{ timestamp: '2026-03-02T09:00:00Z', note: 'customer called' }] }))).not.toBe(base);
    expect(orderHash(order('A1', { order_status: 'Refunded' }))).not.toBe(base);
    expect(orderHash(order('A1'))).toBe(base);
  });

  it('reads a number and its string spelling as the same order (validated form)', () => {
    expect(orderHash(order('A1', { order_total: 94.76 }))).toBe(orderHash(order('A1', { order_total: '94.76' })));
    expect(orderHash(order('A1', { is_test_cc: true }))).toBe(orderHash(order('A1', { is_test_cc: '1' })));
  });

  it('plans new, changed and unchanged orders, the last occurrence in a batch winning', () => {
    const known = { A1: orderHash(order('A1')), B2: orderHash(order('B2')) };
    const plan = planOrderPushes([order('A1'), order('B2', { order_status: 'Refunded' }), order('C3'), order('C3', { note: 'x' })], known);
    expect(plan.unchanged).toEqual(['A1']);
    expect(plan.push.map((p) => `${p.order.order_id}:${p.change}`)).toEqual(['B2:changed', 'C3:new']);
    expect(plan.push[1]!.order).toMatchObject({ note: 'x' });
    expect(plan.repeated).toEqual(['C3']);
  });
});

describe('pushOrders', () => {
  const SOURCE = 'orders.ndjson';

  it('pushes every new order once and records each push with its hash', async () => {
    const orders = [order('A1'), order('B2'), order('C3')];
    const { acts, state } = createFakes({ sources: { [SOURCE]: orders } });
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(pushedIds(callsOf(state, 'pushOrders'))).toEqual(['A1', 'B2', 'C3']);
    expect(r).toMatchObject({ status: 'done', read: 3, new: 3, changed: 0, unchanged: 0, rejected: 0 });
    expect(state.pushRecords.map((p) => [p.order_id, p.status, p.id, p.hash])).toEqual(orders.map((o) => [o.order_id, 'pushed', `svc-${o.order_id}`, orderHash(o)]));
    expect(state.runs).toMatchObject([{ workflow: 'pushOrders', status: 'ok', summary: { new: 3 } }]);
  });

  it('pushes nothing twice when run again on the same file', async () => {
    const { acts, state } = createFakes({ sources: { [SOURCE]: [order('A1'), order('B2')] } });
    await pushOrders({ source: SOURCE }, acts);
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(pushedIds(callsOf(state, 'pushOrders'))).toEqual(['A1', 'B2']);
    expect(r).toMatchObject({ new: 0, changed: 0, unchanged: 2 });
  });

  it('pushes an order again only when it changed (refund, note, status)', async () => {
    const sources: Record<string, MerchantOrder[]> = { [SOURCE]: [order('A1'), order('B2'), order('C3'), order('D4')] };
    const { acts, state } = createFakes({ sources });
    await pushOrders({ source: SOURCE }, acts);
    sources[SOURCE] = [
      order('A1', { is_refund: 1, refunded_to_date: '94.76', order_status: 'Refunded' }),
      order('B2', { notes: [{ timestamp: '2026-03-03T08:00:00Z', note: 'shipped late' }] }),
      order('C3', { order_status: 'Cancelled' }),
      order('D4'),
      order('E5'),
    ];
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(pushedIds(callsOf(state, 'pushOrders').slice(1))).toEqual(['A1', 'B2', 'C3', 'E5']);
    expect(r).toMatchObject({ changed: 3, new: 1, unchanged: 1 });
    expect(state.pushedOrders.at(-4)).toMatchObject({ order_id: 'A1', order_status: 'Refunded', is_refund: 1 });
  });

  it('records a refused order with the service message and does not push it again until it changes', async () => {
    const sources: Record<string, MerchantOrder[]> = { [SOURCE]: [order('A1'), order('BAD')] };
    const refuse = { BAD: { status: 422, message: 'order_total must be positive' } };
    const { acts, state } = createFakes({ sources, refuse });
    const r1 = await pushOrders({ source: SOURCE }, acts);
    expect(r1).toMatchObject({ new: 1, rejected: 1, rejectedOrders: [{ order_id: 'BAD', status: 422, message: 'order_total must be positive' }] });
    expect(state.pushRecords.find((p) => p.order_id === 'BAD')).toMatchObject({ status: 'rejected', httpStatus: 422, message: 'order_total must be positive' });

    const r2 = await pushOrders({ source: SOURCE }, acts);
    expect(r2).toMatchObject({ rejected: 0, unchanged: 2 });
    expect(pushedIds(callsOf(state, 'pushOrders'))).toEqual(['A1', 'BAD']);

    sources[SOURCE] = [order('A1'), order('BAD', { order_total: '12.00' })];
    const r3 = await pushOrders({ source: SOURCE }, acts);
    expect(r3).toMatchObject({ rejected: 1 }); // changed, so tried once more
    expect(pushedIds(callsOf(state, 'pushOrders'))).toEqual(['A1', 'BAD', 'BAD']);
  });

  it('reads the file batch by batch and pushes in slices, recording after each slice', async () => {
    const orders = Array.from({ length: 23 }, (_, i) => order(`O${i}`));
    const { acts, state } = createFakes({ sources: { [SOURCE]: orders } });
    const r = await pushOrders({ source: SOURCE, batchSize: 10, pushBatchSize: 4 }, acts);
    expect(callsOf(state, 'readOrders').map(([i]) => (i as { cursor?: string }).cursor)).toEqual([undefined, '10', '20']);
    expect(callsOf(state, 'pushOrders').map(([o]) => (o as unknown[]).length)).toEqual([4, 4, 2, 4, 4, 2, 3]);
    expect(callsOf(state, 'recordPushes')).toHaveLength(7);
    expect(r.new).toBe(23);
  });

  it('pauses between batches when asked and continues from the cursor', async () => {
    const orders = Array.from({ length: 25 }, (_, i) => order(`O${i}`));
    const { acts, state } = createFakes({ sources: { [SOURCE]: orders } });
    let input: PushOrdersInput = { source: SOURCE, batchSize: 10 };
    let r: PushOrdersResult | undefined;
    for (let i = 0; i < 5; i++) {
      r = await pushOrders(input, acts, { shouldPause: () => true });
      if (r.status === 'done') break;
      input = r.next!;
    }
    expect(r).toMatchObject({ status: 'done', read: 25, new: 25 });
    expect(pushedIds(callsOf(state, 'pushOrders'))).toHaveLength(25);
    expect(state.runs).toHaveLength(1);
  });

  it('counts lines that failed validation without pushing them', async () => {
    const { acts } = createFakes({ sources: { [SOURCE]: [order('A1')] } });
    const read = acts.readOrders;
    acts.readOrders = async (i) => ({ ...(await read(i)), invalid: [{ line: 2, message: 'order_id: expected a non-empty identifier' }] });
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(r).toMatchObject({ invalid: 1, new: 1, invalidLines: [{ line: 2 }] });
  });

  it('fails the run (and records it) when a push fails for a reason a retry may fix', async () => {
    const { acts, state } = createFakes({ sources: { [SOURCE]: [order('A1')] } });
    acts.pushOrders = async () => {
      throw Object.assign(new Error('order data POST /order failed with HTTP 504'), { code: 'CBP_ERR_SERVICE_UNAVAILABLE', retryable: true });
    };
    await expect(pushOrders({ source: SOURCE }, acts)).rejects.toThrow(/504/);
    expect(state.runs).toMatchObject([{ status: 'failed', error: expect.stringMatching(/504/) }]);
    expect(state.pushRecords).toEqual([]);
  });
});
