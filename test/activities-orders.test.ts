// pushOrders with the REAL activities against the sandbox's order data interface: new, changed and
// unchanged orders (by content hash, kept in the store), a 422 refusal recorded with the service's message,
// and invalid lines of NDJSON and CSV files reported with their number and field.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import type { Pipeline } from '../cli/pipeline.ts';
import { readOrderBatch } from '../activities/orders-file.ts';
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

describe('pushOrders with the real activities', () => {
  it('pushes new orders, then only the changed one, and skips the unchanged', async () => {
    const first = ndjson('orders-1.ndjson', [order('A-1'), order('A-2'), order('A-3')]);
    const r1 = await p.runner.pushOrders({ source: first, pushBatchSize: 2 });
    expect(r1).toMatchObject({ status: 'done', read: 3, new: 3, changed: 0, unchanged: 0, rejected: 0, invalid: 0 });
    const pushed = await admin<Array<{ order_id: string }>>(sb, 'GET', '/orders');
    expect(pushed.map((o) => o.order_id).sort()).toEqual(['A-1', 'A-2', 'A-3']);

    const second = ndjson('orders-2.ndjson', [order('A-1'), order('A-2', { order_total: '43.00' }), order('A-3')]);
    const r2 = await p.runner.pushOrders({ source: second });
    expect(r2).toMatchObject({ read: 3, new: 0, changed: 1, unchanged: 2, rejected: 0 });

    const r3 = await p.runner.pushOrders({ source: second });
    expect(r3).toMatchObject({ read: 3, new: 0, changed: 0, unchanged: 3 });

    const rows = await p.store.all<{ order_id: string; status: string; service_id: string }>('SELECT order_id, status, service_id FROM order_pushes ORDER BY order_id');
    expect(rows.map((r) => [r.order_id, r.status])).toEqual([['A-1', 'pushed'], ['A-2', 'pushed'], ['A-3', 'pushed']]);
    expect(rows.every((r) => /^ord_/.test(r.service_id))).toBe(true);
  });

  it('records an order the service refuses with 422, with its message, and does not push it again until it changes', async () => {
    // A first push without order_total: the schema allows it, the service needs it on an order's first push.
    const f = ndjson('orders-422.ndjson', [{ order_id: 'R-1', order_date: '2025-12-02T10:00:00Z', currency: 'USD' }]);
    const r = await p.runner.pushOrders({ source: f });
    expect(r).toMatchObject({ read: 1, new: 0, rejected: 1 });
    expect(r.rejectedOrders[0]).toMatchObject({ order_id: 'R-1', status: 422 });
    expect(r.rejectedOrders[0]!.message).toMatch(/order_total/);
    const [row] = await p.store.all<{ status: string; http_status: number; last_error: string }>("SELECT status, http_status, last_error FROM order_pushes WHERE order_id = 'R-1'");
    expect(row).toMatchObject({ status: 'rejected', http_status: 422 });
    expect(row!.last_error).toMatch(/order_total/);
    expect(await p.runner.pushOrders({ source: f })).toMatchObject({ rejected: 0, unchanged: 1 });
    // Fixed in the file: pushed.
    const fixed = ndjson('orders-422-fixed.ndjson', [{ order_id: 'R-1', order_date: '2025-12-02T10:00:00Z', currency: 'USD', order_total: '10.00' }]);
    expect(await p.runner.pushOrders({ source: fixed })).toMatchObject({ changed: 1, rejected: 0 });
  });

  it('reports invalid lines with their number and the field at fault, and pushes the rest', async () => {
    const f = ndjson('orders-bad.ndjson', [order('B-1'), order('B-2', { cc_first_6: '12' }), 'not json', order('B-3')]);
    const r = await p.runner.pushOrders({ source: f });
    expect(r).toMatchObject({ read: 2, new: 2, invalid: 2 });
    expect(r.invalidLines[0]).toMatchObject({ line: 2, order_id: 'B-2' });
    expect(r.invalidLines[0]!.message).toMatch(/cc_first_6/);
    expect(r.invalidLines[1]).toMatchObject({ line: 3 });
    expect(r.invalidLines[1]!.message).toMatch(/not valid JSON/);
    const rejects = await p.store.all<{ line: number; message: string }>('SELECT line, message FROM order_rejects ORDER BY line');
    expect(rejects.map((x) => x.line)).toEqual([2, 3]);
  });

  it('reads CSV orders in batches, with JSON cells for nested fields and record numbers for invalid rows', async () => {
    const f = path.join(dir, 'orders.csv');
    fs.writeFileSync(
      f,
      [
        'order_id,order_date,order_total,currency,cc_first_6,cc_last_4,notes',
        'C-1,2025-12-03T10:00:00Z,10.00,USD,411111,1111,',
        'C-2,2025-12-03T11:00:00Z,11.00,USD,4111,2222,',
        'C-3,2025-12-03T12:00:00Z,12.00,usd,411111,3333,"[{""timestamp"":""2025-12-03T12:01:00Z"",""note"":""gift""}]"',
      ].join('\n') + '\n',
    );
    const b1 = await readOrderBatch(f, undefined, 2);
    expect(b1.orders.map((o) => o.order_id)).toEqual(['C-1']);
    expect(b1.invalid).toEqual([expect.objectContaining({ line: 2, order_id: 'C-2', message: expect.stringMatching(/cc_first_6/) })]);
    expect(b1.next).not.toBeNull();
    const b2 = await readOrderBatch(f, b1.next!, 2);
    expect(b2.orders.map((o) => [o.order_id, o.currency, o.notes?.[0]?.note])).toEqual([['C-3', 'USD', 'gift']]);
    expect(b2.next).toBeNull();
    const r = await p.runner.pushOrders({ source: f, batchSize: 1 });
    expect(r).toMatchObject({ read: 2, new: 2, invalid: 1 });
  });

  it('reads NDJSON in batches from byte offsets, every line once', async () => {
    const lines = Array.from({ length: 7 }, (_, i) => order(`N-${i}`));
    const f = ndjson('batches.ndjson', lines);
    const ids: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const b = await readOrderBatch(f, cursor, 3);
      ids.push(...b.orders.map((o) => o.order_id));
      if (b.next === null) break;
      cursor = b.next;
    }
    expect(ids).toEqual(lines.map((l) => l.order_id));
  });
});
