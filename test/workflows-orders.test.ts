import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MerchantOrderSchema, type MerchantOrder } from '../contract/index.ts';
import { canonicalJson, orderHash, planOrderPushes, type KnownPush } from '../activities/orders-plan.ts';
import type { PushOrderBatchInput } from '../activities/types.ts';
import { pushOrders, type PushOrdersCounts, type PushOrdersInput, type PushOrdersResult } from '../workflows/push-orders.ts';
import { callsOf, createFakes } from './workflows-fakes.ts';

const order = (id: string, over: Record<string, unknown> = {}): MerchantOrder =>
  MerchantOrderSchema.parse({ order_id: id, order_date: '2026-03-01T10:00:00Z', order_total: '94.76', currency: 'USD', order_status: 'Complete', ...over });

const at = (orders: MerchantOrder[]) => orders.map((o, i) => ({ line: i + 1, order: o }));
const known = (entries: Array<[string, Partial<KnownPush> & { hash: string }]>) =>
  new Map(entries.map(([id, k]) => [id, { status: 'pushed' as const, runId: 'earlier-run', line: 1, change: 'new' as const, ...k }]));

/** read = pushed + unchanged + stillRejected + rejected + invalid + repeated; pushed = new + changed + retried. */
function balanced(c: PushOrdersCounts): boolean {
  return c.read === c.pushed + c.unchanged + c.stillRejected + c.rejected + c.invalid + c.repeated && c.pushed === c.new + c.changed + c.retried;
}

describe('order change detection', () => {
  it('hashes the canonical form with SHA-256 (node:crypto, inside the activity)', () => {
    const o = order('A1');
    expect(orderHash(o)).toBe(createHash('sha256').update(canonicalJson(o)).digest('hex'));
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
    const k = known([['A1', { hash: orderHash(order('A1')) }], ['B2', { hash: orderHash(order('B2')) }]]);
    const plan = planOrderPushes(at([order('A1'), order('B2', { order_status: 'Refunded' }), order('C3'), order('C3', { note: 'x' })]), k, { runId: 'r' });
    expect(plan.counts).toMatchObject({ unchanged: 1, repeated: 1, stillRejected: 0 });
    expect(plan.push.map((p) => `${p.order.order_id}:${p.change}:${p.line}`)).toEqual(['B2:changed:2', 'C3:new:4']);
    expect(plan.push[1]!.order).toMatchObject({ note: 'x' });
  });

  it('holds back an unchanged order the service refused before, unless asked to retry it', () => {
    const k = known([['R1', { hash: orderHash(order('R1')), status: 'rejected' }]]);
    expect(planOrderPushes(at([order('R1')]), k, { runId: 'r' })).toMatchObject({ push: [], counts: { stillRejected: 1 } });
    expect(planOrderPushes(at([order('R1')]), k, { runId: 'r', retryRejected: true }).push.map((p) => p.change)).toEqual(['retried']);
    // Changed since: pushed whatever the flag.
    expect(planOrderPushes(at([order('R1', { order_total: '1.00' })]), k, { runId: 'r' }).push.map((p) => p.change)).toEqual(['changed']);
  });

  it('counts what this run already did from the same line as done (a retried batch), and a later identical line as repeated', () => {
    const k = known([
      ['A1', { hash: orderHash(order('A1')), runId: 'r', line: 1, change: 'new' }],
      ['B2', { hash: orderHash(order('B2')), runId: 'r', line: 2, status: 'rejected' }],
      ['C3', { hash: orderHash(order('C3')), runId: 'r', line: 1 }],
    ]);
    const plan = planOrderPushes([{ line: 1, order: order('A1') }, { line: 2, order: order('B2') }, { line: 9, order: order('C3') }], k, { runId: 'r' });
    expect(plan.push).toEqual([]);
    expect(plan.counts).toMatchObject({ earlier: { new: 1, changed: 0, retried: 0, rejected: 1 }, repeated: 1, unchanged: 0 });
  });
});

describe('pushOrders', () => {
  const SOURCE = 'orders.ndjson';
  const pushedIds = (state: ReturnType<typeof createFakes>['state']) => state.pushRecords.map((p) => p.order_id);

  it('pushes every new order once and records each push with its hash', async () => {
    const orders = [order('A1'), order('B2'), order('C3')];
    const { acts, state } = createFakes({ sources: { [SOURCE]: orders } });
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(r).toMatchObject({ status: 'done', read: 3, pushed: 3, new: 3, changed: 0, unchanged: 0, rejected: 0 });
    expect(state.pushRecords.map((p) => [p.order_id, p.status, p.hash])).toEqual(orders.map((o) => [o.order_id, 'pushed', orderHash(o)]));
    expect(state.runs).toMatchObject([{ workflow: 'pushOrders', status: 'ok', summary: { source: SOURCE, new: 3, read: 3 } }]);
    expect(balanced(r)).toBe(true);
  });

  it('pushes nothing twice when run again on the same file', async () => {
    const { acts, state } = createFakes({ sources: { [SOURCE]: [order('A1'), order('B2')] } });
    await pushOrders({ source: SOURCE }, acts);
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(pushedIds(state)).toEqual(['A1', 'B2']);
    expect(r).toMatchObject({ read: 2, pushed: 0, unchanged: 2 });
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
    expect(pushedIds(state).slice(4)).toEqual(['A1', 'B2', 'C3', 'E5']);
    expect(r).toMatchObject({ changed: 3, new: 1, unchanged: 1, read: 5 });
    expect(state.pushedOrders.at(-4)).toMatchObject({ order_id: 'A1', order_status: 'Refunded', is_refund: 1 });
  });

  it('records a refused order, holds it back while unchanged, and sends it again when asked (retryRejected)', async () => {
    const sources: Record<string, MerchantOrder[]> = { [SOURCE]: [order('A1'), order('BAD')] };
    const refuse: Record<string, { status: number; message: string }> = { BAD: { status: 422, message: 'order_total must be positive' } };
    const { acts, state } = createFakes({ sources, refuse });
    const r1 = await pushOrders({ source: SOURCE }, acts);
    expect(r1).toMatchObject({ new: 1, rejected: 1, read: 2 });
    expect(state.pushRecords.find((p) => p.order_id === 'BAD')).toMatchObject({ status: 'rejected', httpStatus: 422, message: 'order_total must be positive' });

    const r2 = await pushOrders({ source: SOURCE }, acts);
    expect(r2).toMatchObject({ rejected: 0, unchanged: 1, stillRejected: 1 });
    expect(balanced(r2)).toBe(true);

    delete refuse.BAD; // the service now takes it as it is
    const r3 = await pushOrders({ source: SOURCE, retryRejected: true }, acts);
    expect(r3).toMatchObject({ retried: 1, pushed: 1, unchanged: 1, stillRejected: 0 });
    expect(callsOf(state, 'pushOrderBatch').at(-1)![0]).toMatchObject({ retryRejected: true });
    expect(pushedIds(state)).toEqual(['A1', 'BAD', 'BAD']);
  });

  it('goes through the file batch by batch, carrying only the source, a cursor and sizes into each activity', async () => {
    const orders = Array.from({ length: 23 }, (_, i) => order(`O${i}`));
    const { acts, state } = createFakes({ sources: { [SOURCE]: orders } });
    const r = await pushOrders({ source: SOURCE, batchSize: 10, pushBatchSize: 4 }, acts);
    const inputs = callsOf(state, 'pushOrderBatch').map(([i]) => i as PushOrderBatchInput);
    expect(inputs.map((i) => i.cursor)).toEqual([undefined, '10', '20']);
    expect(inputs.every((i) => Object.keys(i).sort().join() === 'batchSize,pushBatchSize,runId,source' || Object.keys(i).sort().join() === 'batchSize,cursor,pushBatchSize,runId,source')).toBe(true);
    expect(inputs[0]).toMatchObject({ source: SOURCE, batchSize: 10, pushBatchSize: 4, runId: r.runId });
    expect(r).toMatchObject({ read: 23, new: 23 });
  });

  it('pauses between batches when asked and continues from the cursor with the counts carried', async () => {
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
    expect(pushedIds(state)).toHaveLength(25);
    expect(state.runs).toHaveLength(1);
  });

  it('adds up invalid lines with the rest, every record counted once', async () => {
    const { acts } = createFakes({ sources: { [SOURCE]: [order('A1'), order('A1'), order('B2')] } });
    const batch = acts.pushOrderBatch;
    acts.pushOrderBatch = async (i) => {
      const b = await batch(i);
      return { ...b, records: b.records + 2, invalid: 2 };
    };
    const r = await pushOrders({ source: SOURCE }, acts);
    expect(r).toMatchObject({ read: 5, invalid: 2, new: 2, repeated: 1 });
    expect(balanced(r)).toBe(true);
  });

  it('fails the run (and records it) when a batch fails, with the activity error as the run error', async () => {
    const { acts, state } = createFakes({ sources: { [SOURCE]: [order('A1')] } });
    acts.pushOrderBatch = async () => {
      throw Object.assign(new Error('the order data interface gave no authorization key: POST /auth failed with HTTP 400'), { code: 'CBP_ERR_DATA_KEY', retryable: false });
    };
    await expect(pushOrders({ source: SOURCE }, acts)).rejects.toThrow(/POST \/auth/);
    expect(state.runs).toMatchObject([{ status: 'failed', error: expect.stringMatching(/POST \/auth failed with HTTP 400/) }]);
  });

  it('refuses a batch that does not move the cursor (the file would be read forever)', async () => {
    const { acts, state } = createFakes({ sources: { [SOURCE]: [order('A1')] } });
    acts.pushOrderBatch = async (i) => ({ records: 0, new: 0, changed: 0, retried: 0, unchanged: 0, stillRejected: 0, rejected: 0, invalid: 0, repeated: 0, next: i.cursor ?? 'x' });
    await expect(pushOrders({ source: SOURCE, cursor: 'x' }, acts)).rejects.toThrow(/did not advance/);
    expect(state.runs).toMatchObject([{ status: 'failed' }]);
  });
});
