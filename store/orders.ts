// The order push bookkeeping (tables of migrations 006 and 009): what was last pushed or refused per order_id,
// and the invalid lines of each order file. Only order_ids, hashes, line numbers and the service's or the
// validator's messages are kept here, never the orders themselves.
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';
import { insertRows, jsonList, jsonParam, jsonRows } from './insert-rows.ts';
import { sqlTimestamp } from '../lib/utc.ts';

export interface OrderPushRow {
  order_id: string;
  hash: string;
  status: 'pushed' | 'rejected';
  run_id: string | null;
  source_line: number | null;
  change: 'new' | 'changed' | 'retried' | null;
}

export interface OrderPushRecord {
  order_id: string;
  hash: string;
  status: 'pushed' | 'rejected';
  /** The service's id (pushed). */
  serviceId?: string;
  httpStatus?: number;
  /** The service's message (rejected). */
  message?: string;
  change: 'new' | 'changed' | 'retried';
  line: number;
  runId: string;
}

export interface InvalidLineRecord {
  line: number;
  order_id?: string;
  message: string;
}

const stamp = sqlTimestamp;

/** The last recorded push (or refusal) of each order_id that has one. */
export async function lastOrderPushes(store: Store, orderIds: readonly string[]): Promise<Map<string, OrderPushRow>> {
  const out = new Map<string, OrderPushRow>();
  if (!orderIds.length) return out;
  const rows = await store.all<OrderPushRow>(`SELECT order_id, hash, status, run_id, source_line, change FROM order_pushes
    WHERE order_id IN (${jsonRows(1)})`, [jsonList(orderIds)]);
  for (const r of rows) out.set(r.order_id, { ...r, source_line: r.source_line === null ? null : Number(r.source_line) });
  return out;
}

/** A batch's start: its invalid lines recorded and its orders' last pushes read, in one transaction (one snapshot). */
export async function startOrderBatch(
  store: Store,
  o: { invalid: Parameters<typeof replaceInvalidOrderLines>[1]; orderIds: readonly string[] },
): Promise<Map<string, OrderPushRow>> {
  return store.transaction(async (s) => {
    await replaceInvalidOrderLines(s, o.invalid);
    return lastOrderPushes(s, o.orderIds);
  });
}

/** Records pushes and refusals; the last record of an order_id wins. One statement per call. */
export async function recordOrderPushes(store: Store, records: readonly OrderPushRecord[], at: Date): Promise<void> {
  if (records.length === 0) return;
  const list = [...new Map(records.map((r) => [r.order_id, r])).values()];
  const ts = stamp(at);
  await store.transaction(async (s) => {
    const rows = list.map((r) => [r.order_id, r.hash, r.status, r.serviceId ?? null, r.httpStatus ?? null, r.message ?? null, ts, r.runId, r.line, r.change]);
    await s.run(
      upsertSql(s, {
        into: 'order_pushes',
        columns: ['order_id', 'hash', 'status', 'service_id', 'http_status', 'last_error', 'pushed_at', 'run_id', 'source_line', 'change'],
        rows: jsonRows(10, ['', '', '', '', '::INTEGER', '', '::TIMESTAMP', '', '::INTEGER']),
        key: ['order_id'],
        set: {
          ...Object.fromEntries(['hash', 'status', 'http_status', 'last_error', 'pushed_at', 'run_id', 'source_line', 'change'].map((c) => [c, `excluded.${c}`])),
          service_id: 'coalesce(excluded.service_id, order_pushes.service_id)',
        },
      }),
      [jsonParam(rows)],
    );
  });
}

/**
 * The invalid lines of `source` between firstLine and lastLine (null: to the end of the file) become
 * exactly `lines`: a line fixed since the last read stops being listed.
 */
export async function replaceInvalidOrderLines(
  store: Store,
  o: { source: string; firstLine: number; lastLine: number | null; lines: readonly InvalidLineRecord[]; runId: string; at: Date },
): Promise<void> {
  const ts = stamp(o.at);
  await store.transaction(async (s) => {
    if (o.lastLine === null) await s.run('DELETE FROM order_rejects WHERE source = $1 AND line >= $2', [o.source, o.firstLine]);
    else await s.run('DELETE FROM order_rejects WHERE source = $1 AND line BETWEEN $2 AND $3', [o.source, o.firstLine, o.lastLine]);
    await insertRows(s, 'order_rejects', o.lines.map((l) => [o.source, l.line, l.order_id ?? null, l.message, ts, o.runId]),
      ['source', 'line', 'order_id', 'message', 'seen_at', 'run_id'], { seen_at: '::TIMESTAMP' });
  });
}

export interface RejectedOrder {
  order_id: string;
  http_status: number | null;
  message: string | null;
  /** When it was refused, ISO UTC. */
  at: string;
  run_id: string | null;
}

/** Orders whose last push the service refused, most recent first: how many, and the first `limit`. */
export async function rejectedOrders(store: Store, o: { runId?: string; limit: number }): Promise<{ total: number; orders: RejectedOrder[] }> {
  const where = o.runId === undefined ? "status = 'rejected'" : "status = 'rejected' AND run_id = $1";
  const params = o.runId === undefined ? [] : [o.runId];
  const [c] = await store.all<{ n: number | bigint }>(`SELECT count(*) AS n FROM order_pushes WHERE ${where}`, params);
  const orders = await store.all<RejectedOrder>(
    `SELECT order_id, http_status, last_error AS message, strftime(pushed_at, '%Y-%m-%dT%H:%M:%SZ') AS at, run_id
       FROM order_pushes WHERE ${where} ORDER BY pushed_at DESC, order_id LIMIT ${Math.max(0, Math.floor(o.limit))}`,
    params,
  );
  return { total: Number(c?.n ?? 0), orders: orders.map((r) => ({ ...r, http_status: r.http_status === null ? null : Number(r.http_status) })) };
}

export interface InvalidOrderLine {
  source: string;
  line: number;
  order_id: string | null;
  message: string;
}

/** Invalid lines a run read (in line order), or of every file (by file and line): how many, and the first `limit`. */
export async function invalidOrderLines(store: Store, o: { runId?: string; limit: number }): Promise<{ total: number; lines: InvalidOrderLine[] }> {
  const where = o.runId === undefined ? 'TRUE' : 'run_id = $1';
  const params = o.runId === undefined ? [] : [o.runId];
  const [c] = await store.all<{ n: number | bigint }>(`SELECT count(*) AS n FROM order_rejects WHERE ${where}`, params);
  const lines = await store.all<InvalidOrderLine>(
    `SELECT source, line, order_id, message FROM order_rejects WHERE ${where} ORDER BY source, line LIMIT ${Math.max(0, Math.floor(o.limit))}`,
    params,
  );
  return { total: Number(c?.n ?? 0), lines: lines.map((l) => ({ ...l, line: Number(l.line) })) };
}
