// pushOrders with the REAL activities against the sandbox's order data interface: new, changed and
// unchanged orders (by content hash, kept in the store), refusals recorded with the service's message and
// sent again on request, invalid lines of NDJSON and CSV files reported with the file's own line numbers,
// every record counted, and key failures (POST /auth, a fresh key refused) failing the run without
// marking any order rejected.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import type { Pipeline } from '../cli/pipeline.ts';
import { readOrderBatch, type OrderBatch } from '../activities/orders-file.ts';
import { ServiceHttpError } from '../client/errors.ts';
import { PUSH_ORDER } from '../client/order-data.ts';
import { invalidOrderLines, rejectedOrders } from '../store/orders.ts';
import type { PushOrdersCounts } from '../workflows/push-orders.ts';
import { admin, configFor, pipelineFor, rmrf, sandbox, tempDir } from './activities-fixtures.ts';

let sb: RunningSandbox;
let p: Pipeline;
let dir: string;

beforeAll(async () => {
  dir = tempDir();
  sb = await sandbox();
  p = await pipelineFor(configFor(sb, dir));
});
afterAll(async () => {
  await p?.close();
  await sb?.close();
  rmrf(dir);
});

const order = (id: string, extra: Record<string, unknown> = {}) => ({
  order_id: id,
  order_date: '2025-12-01T10:00:00Z',
  order_total: '42.50',
  currency: 'USD',
  cc_first_6: '411111',
  cc_last_4: '1234',
  ...extra,
});

function ndjson(name: string, lines: Array<Record<string, unknown> | string>): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n');
  return f;
}

function file(name: string, text: string): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, text);
  return f;
}

/** Every record counted once. */
function balanced(c: PushOrdersCounts): boolean {
  return c.read === c.pushed + c.unchanged + c.stillRejected + c.rejected + c.invalid + c.repeated && c.pushed === c.new + c.changed + c.retried;
}

async function readAll(f: string, batchSize: number): Promise<OrderBatch[]> {
  const out: OrderBatch[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 1000; i++) {
    const b = await readOrderBatch(f, cursor, batchSize);
    out.push(b);
    if (b.next === null) break;
    cursor = b.next;
  }
  return out;
}

const serviceOrders = async (prefix: string) => (await admin<Array<{ order_id: string; fields: Record<string, unknown> }>>(sb, 'GET', '/orders')).filter((o) => o.order_id.startsWith(prefix));

describe('pushOrders with the real activities', () => {
  it('pushes new orders, then only the changed one, and skips the unchanged', async () => {
    const first = ndjson('orders-1.ndjson', [order('A-1'), order('A-2'), order('A-3')]);
    const r1 = await p.runner.pushOrders({ source: first, pushBatchSize: 2 });
    expect(r1).toMatchObject({ status: 'done', read: 3, pushed: 3, new: 3, changed: 0, unchanged: 0, rejected: 0, invalid: 0 });
    expect((await serviceOrders('A-')).map((o) => o.order_id).sort()).toEqual(['A-1', 'A-2', 'A-3']);

    const second = ndjson('orders-2.ndjson', [order('A-1'), order('A-2', { order_total: '43.00' }), order('A-3')]);
    const r2 = await p.runner.pushOrders({ source: second });
    expect(r2).toMatchObject({ read: 3, new: 0, changed: 1, unchanged: 2, rejected: 0 });

    const r3 = await p.runner.pushOrders({ source: second });
    expect(r3).toMatchObject({ read: 3, new: 0, changed: 0, unchanged: 3 });

    const rows = await p.store.all<{ order_id: string; status: string; service_id: string; change: string; source_line: number }>(
      "SELECT order_id, status, service_id, change, source_line FROM order_pushes WHERE order_id LIKE 'A-%' ORDER BY order_id",
    );
    expect(rows.map((r) => [r.order_id, r.status, r.change, r.source_line])).toEqual([['A-1', 'pushed', 'new', 1], ['A-2', 'pushed', 'changed', 2], ['A-3', 'pushed', 'new', 3]]);
    expect(rows.every((r) => /^ord_/.test(r.service_id))).toBe(true);
  });

  it('records an order the service refuses with 422, holds it back while unchanged, and pushes it once fixed', async () => {
    // A first push without order_total: the schema allows it, the service needs it on an order's first push.
    const f = ndjson('orders-422.ndjson', [{ order_id: 'R-1', order_date: '2025-12-02T10:00:00Z', currency: 'USD' }]);
    const r = await p.runner.pushOrders({ source: f });
    expect(r).toMatchObject({ read: 1, new: 0, rejected: 1 });
    const listed = await rejectedOrders(p.store, { runId: r.runId, limit: 10 });
    expect(listed.total).toBe(1);
    expect(listed.orders[0]).toMatchObject({ order_id: 'R-1', http_status: 422, message: expect.stringMatching(/order_total/) });
    // Unchanged: not sent again, and said so (it used to count as "unchanged").
    expect(await p.runner.pushOrders({ source: f })).toMatchObject({ rejected: 0, unchanged: 0, stillRejected: 1 });
    const fixed = ndjson('orders-422-fixed.ndjson', [{ order_id: 'R-1', order_date: '2025-12-02T10:00:00Z', currency: 'USD', order_total: '10.00' }]);
    expect(await p.runner.pushOrders({ source: fixed })).toMatchObject({ changed: 1, rejected: 0 });
    expect((await rejectedOrders(p.store, { limit: 10 })).orders.map((o) => o.order_id)).not.toContain('R-1');
  });

  it('reports invalid lines with the file line number and the field at fault, counts them as read, and pushes the rest', async () => {
    const f = ndjson('orders-bad.ndjson', [order('B-1'), '', order('B-2', { cc_first_6: '12' }), 'not json', '   ', order('B-3')]);
    const r = await p.runner.pushOrders({ source: f });
    expect(r).toMatchObject({ read: 4, new: 2, invalid: 2 });
    expect(balanced(r)).toBe(true);
    const invalid = await invalidOrderLines(p.store, { runId: r.runId, limit: 10 });
    expect(invalid.lines.map((l) => [l.line, l.order_id])).toEqual([[3, 'B-2'], [4, null]]);
    expect(invalid.lines[0]!.message).toMatch(/cc_first_6/);
    expect(invalid.lines[1]!.message).toMatch(/not valid JSON/);
    // Fixed in the file: its line is no longer listed.
    ndjson('orders-bad.ndjson', [order('B-1'), '', order('B-2'), 'not json', '   ', order('B-3')]);
    const again = await p.runner.pushOrders({ source: f });
    expect(again).toMatchObject({ invalid: 1, new: 1, unchanged: 2 });
    expect((await p.store.all<{ line: number }>('SELECT line FROM order_rejects WHERE source = $1', [f])).map((x) => Number(x.line))).toEqual([4]);
  });

  it('sends again, on request, orders the service refused before (--retry-rejected)', async () => {
    const f = ndjson('orders-retry.ndjson', [order('T-1'), order('T-2')]);
    await admin(sb, 'POST', '/faults', { routes: { 'POST /orders/stage/order': { errorRate: 1, errorStatuses: [400], limit: 1 } } });
    try {
      const r1 = await p.runner.pushOrders({ source: f, pushBatchSize: 1 });
      expect(r1).toMatchObject({ read: 2, new: 1, rejected: 1 });
    } finally {
      await admin(sb, 'DELETE', '/faults');
    }
    expect(await p.runner.pushOrders({ source: f })).toMatchObject({ stillRejected: 1, unchanged: 1, pushed: 0 });
    const r3 = await p.runner.pushOrders({ source: f, retryRejected: true });
    expect(r3).toMatchObject({ retried: 1, pushed: 1, unchanged: 1, stillRejected: 0, rejected: 0 });
    expect(await serviceOrders('T-')).toHaveLength(2);
    const [row] = await p.store.all<{ change: string; status: string }>(
      `SELECT change, status FROM order_pushes WHERE order_id IN ('T-1', 'T-2') AND change = 'retried'`,
    );
    expect(row).toMatchObject({ change: 'retried', status: 'pushed' });
  });

  it('counts an order listed twice once as repeated, whether in one batch or across batches', async () => {
    const f = ndjson('orders-twice.ndjson', [order('D-1'), order('D-2'), order('D-1', { order_total: '50.00' }), order('D-2')]);
    const r = await p.runner.pushOrders({ source: f, batchSize: 3 });
    expect(r).toMatchObject({ read: 4, new: 2, repeated: 2 });
    expect(balanced(r)).toBe(true);
    expect((await serviceOrders('D-1'))[0]!.fields).toMatchObject({ order_total: '50.00' });
  });

  it('counts what a failed attempt of a batch already pushed as pushed when the batch is run again (no double count, nothing lost)', async () => {
    const f = ndjson('orders-halfway.ndjson', Array.from({ length: 12 }, (_, i) => order(`H-${i}`)));
    const input = { source: f, batchSize: 100, pushBatchSize: 4, runId: 'halfway-run' };
    // The 6th POST /order answers 412 (not an order refusal, not retried): the batch fails after recording the first slice.
    let n = 0;
    const data = p.clients.data;
    const push = data.pushOrder.bind(data);
    data.pushOrder = async (o, opts) => {
      if (++n === 6) throw new ServiceHttpError({ iface: 'data', operation: PUSH_ORDER, httpStatus: 412 });
      return push(o, opts);
    };
    try {
      await expect(p.activities.pushOrderBatch(input)).rejects.toThrow(/HTTP 412/);
    } finally {
      data.pushOrder = push;
    }
    const recorded = await p.store.all("SELECT order_id FROM order_pushes WHERE run_id = 'halfway-run'");
    expect(recorded.length).toBeGreaterThanOrEqual(4);
    expect(recorded.length).toBeLessThan(12);
    const again = await p.activities.pushOrderBatch(input);
    expect(again).toMatchObject({ records: 12, new: 12, unchanged: 0, rejected: 0, next: null });
    expect(await serviceOrders('H-')).toHaveLength(12);
  });
});

describe('order files', () => {
  it('gives CSV errors the file line where the record starts: header, blank lines and quoted line breaks count', async () => {
    const f = file(
      'lines.csv',
      [
        'order_id,order_date,order_total,currency,cc_first_6,cc_last_4,rma_reason,notes', // line 1
        '', // 2
        'C-1,2025-12-03T10:00:00Z,10.00,USD,411111,1111,,', // 3
        'C-2,2025-12-03T11:00:00Z,11.00,USD,4111,2222,,', // 4: invalid
        'C-3,2025-12-03T12:00:00Z,12.00,usd,411111,3333,"damaged in', // 5: a record over 3 lines
        'transit, and', // 6
        'returned","[{""timestamp"":""2025-12-03T12:01:00Z"",""note"":""gift""}]"', // 7
        '', // 8
        'C-4,not a date,13.00,USD,411111,4444,"line one', // 9: invalid, over two lines
        'line two",', // 10
        'C-5,2025-12-03T14:00:00Z,14.00,USD,411111,5555,,,extra', // 11: one value too many
        ' , , ', // 12: blank record
        'C-6,2025-12-03T15:00:00Z,15.00,USD,411111,6666', // 13: short row (missing cells are not given)
      ].join('\r\n') + '\r\n',
    );
    for (const size of [1, 2, 100]) {
      const batches = await readAll(f, size);
      const orders = batches.flatMap((b) => b.orders);
      const invalid = batches.flatMap((b) => b.invalid);
      expect(orders.map((o) => [o.order.order_id, o.line])).toEqual([['C-1', 3], ['C-3', 5], ['C-6', 13]]);
      expect(invalid.map((l) => [l.line, l.order_id ?? null])).toEqual([[4, 'C-2'], [9, 'C-4'], [11, null]]);
      expect(invalid[0]!.message).toMatch(/cc_first_6/);
      expect(invalid[1]!.message).toMatch(/order_date/);
      expect(invalid[2]!.message).toMatch(/9 values but the header has 8 columns/);
      expect(batches.reduce((n, b) => n + b.records, 0)).toBe(6);
      expect(orders[1]!.order).toMatchObject({ currency: 'USD', rma_reason: 'damaged in\r\ntransit, and\r\nreturned', notes: [{ note: 'gift' }] });
    }
  });

  it('gives NDJSON errors the file line, across batches and with CRLF line ends', async () => {
    const f = file('lines.ndjson', ['', JSON.stringify(order('N-1')), '{"order_id": "N-2", "order_total": "x"}', '', '{oops', JSON.stringify(order('N-3'))].join('\r\n'));
    for (const size of [1, 2, 100]) {
      const batches = await readAll(f, size);
      expect(batches.flatMap((b) => b.orders).map((o) => [o.order.order_id, o.line])).toEqual([['N-1', 2], ['N-3', 6]]);
      expect(batches.flatMap((b) => b.invalid).map((l) => l.line)).toEqual([3, 5]);
      expect(batches.reduce((n, b) => n + b.records, 0)).toBe(4);
    }
  });

  it('refuses a CSV whose header names no order_id, or whose quote is never closed, naming the line', async () => {
    const noId = file('no-id.csv', 'id,total\n1,2\n');
    await expect(readOrderBatch(noId, undefined, 10)).rejects.toThrow(/no order_id column/);
    const open = file('open-quote.csv', 'order_id,order_total\nQ-1,1.00\nQ-2,"2.00\nQ-3,3.00\n');
    const err = (await readOrderBatch(open, undefined, 10).catch((e: unknown) => e)) as Error & { code: string };
    expect(err.code).toBe('CBP_ERR_ORDER_FILE');
    expect(err.message).toMatch(/from line 3/);
  });

  for (const example of ['orders.ndjson', 'orders.csv']) {
    it(`reads examples/${example} without an invalid line, and the sandbox takes every order in it`, async () => {
      const f = path.join(import.meta.dirname, '..', 'examples', example);
      const batches = await readAll(f, 500);
      expect(batches.flatMap((b) => b.invalid)).toEqual([]);
      const orders = batches.flatMap((b) => b.orders);
      expect(orders.length).toBeGreaterThanOrEqual(3);
      expect(orders.some((o) => o.order.fulfillment?.shipments?.length)).toBe(true);
      expect(orders.some((o) => o.order.notes?.length)).toBe(true);
      expect(orders.some((o) => o.order.products?.length)).toBe(true);
      const r = await p.runner.pushOrders({ source: f });
      expect(r).toMatchObject({ read: orders.length, invalid: 0, rejected: 0 });
      expect(r.pushed + r.unchanged).toBe(orders.length);
    });
  }
});

describe('a key request that fails (issue #10)', () => {
  it('a 400 on POST /auth fails the run naming the request and what to check, rejects no order, and a re-run pushes every order', async () => {
    const orders = Array.from({ length: 50 }, (_, i) => order(`K-${i}`));
    const f = ndjson('orders-key.ndjson', orders);
    // The key cached by earlier tests would hide the fault: a fresh pipeline asks for its own.
    const q = await pipelineFor(configFor(sb, dir));
    try {
      await admin(sb, 'POST', '/faults', { routes: { 'POST /orders/stage/auth': { errorRate: 1, errorStatuses: [400], limit: 1 } } });
      const err = (await q.runner.pushOrders({ source: f }).catch((e: unknown) => e)) as Error & { code?: string };
      expect(err).toBeInstanceOf(Error);
      expect(err.code).toBe('CBP_ERR_DATA_KEY');
      expect(err.message).toMatch(/POST \/auth failed with HTTP 400/);
      expect(err.message).toMatch(/CBP_DATA_USERNAME and CBP_DATA_PASSWORD/);
      expect(err.message).toMatch(/allow-listed/);
      expect(err.message).not.toContain(sb.credentials.dataPassword);
      const runs = await q.store.all<{ status: string; error: string }>("SELECT status, error FROM runs WHERE workflow = 'pushOrders' ORDER BY finished_at DESC LIMIT 1");
      expect(runs[0]).toMatchObject({ status: 'failed', error: expect.stringMatching(/POST \/auth/) });
      expect(runs[0]!.error).not.toContain(sb.credentials.dataPassword);
      expect(await q.store.all("SELECT order_id FROM order_pushes WHERE order_id LIKE 'K-%'")).toEqual([]);

      const again = await q.runner.pushOrders({ source: f });
      expect(again).toMatchObject({ new: 50, rejected: 0 });
      expect(await serviceOrders('K-')).toHaveLength(50);
    } finally {
      await admin(sb, 'DELETE', '/faults');
      await q.close();
    }
  });

  it('a key refused on POST /order is renewed once; refused again, the run fails and no order is rejected', async () => {
    const f = ndjson('orders-key-401.ndjson', [order('L-1'), order('L-2')]);
    const q = await pipelineFor(configFor(sb, dir));
    try {
      // One 401: the key is renewed and the order sent once more.
      await admin(sb, 'POST', '/faults', { routes: { 'POST /orders/stage/order': { errorRate: 1, errorStatuses: [401], limit: 1 } } });
      expect(await q.runner.pushOrders({ source: f, pushBatchSize: 1 })).toMatchObject({ new: 2, rejected: 0 });
      // Two in a row: the fresh key is refused too.
      const g = ndjson('orders-key-401b.ndjson', [order('L-3')]);
      await admin(sb, 'POST', '/faults', { routes: { 'POST /orders/stage/order': { errorRate: 1, errorStatuses: [401], limit: 2 } } });
      const err = (await q.runner.pushOrders({ source: g }).catch((e: unknown) => e)) as Error & { code?: string };
      expect(err.code).toBe('CBP_ERR_DATA_KEY');
      expect(err.message).toMatch(/refused a key it had just issued/);
      expect(await q.store.all("SELECT order_id FROM order_pushes WHERE order_id = 'L-3'")).toEqual([]);
    } finally {
      await admin(sb, 'DELETE', '/faults');
      await q.close();
    }
  });
});
