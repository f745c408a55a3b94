// Order change detection: an order is pushed again only when its content changed since the last push
// (or the last rejection) of the same order_id. Content = every field of the validated order, in a
// canonical form, hashed.
import type { MerchantOrder } from '../contract/orders.ts';
import { sha256Hex } from './sha256.ts';

/**
 * JSON with object keys sorted at every depth and "not given" values (undefined, null, "") left out, so
 * key order, a null against a missing field, and re-serialisation never count as a change. Array order
 * counts (a reordered list of notes is pushed again: harmless, and rarer than a real change).
 */
export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  if (typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    const keys = Object.keys(obj)
      .filter((k) => obj[k] !== undefined && obj[k] !== null && obj[k] !== '')
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(',')}}`;
  }
  if (typeof value === 'number' && !Number.isFinite(value)) return 'null';
  return JSON.stringify(value);
}

/** Content hash of an order: sha256 of its canonical JSON, hex. */
export function orderHash(order: MerchantOrder | Record<string, unknown>): string {
  return sha256Hex(canonicalJson(order));
}

export interface PlannedPush {
  order: MerchantOrder;
  hash: string;
  change: 'new' | 'changed';
}

export interface OrderPushPlan {
  push: PlannedPush[];
  /** order_ids whose content equals what was last recorded. */
  unchanged: string[];
  /** order_ids that appeared more than once in the batch (the last occurrence is used). */
  repeated: string[];
}

/**
 * Decide what to push from one batch, given the hash last recorded per order_id. Within a batch the last
 * occurrence of an order_id wins (a file lists an order, then its later state).
 */
export function planOrderPushes(orders: readonly MerchantOrder[], known: Readonly<Record<string, string>>): OrderPushPlan {
  const last = new Map<string, MerchantOrder>();
  const repeated = new Set<string>();
  for (const o of orders) {
    if (last.has(o.order_id)) {
      repeated.add(o.order_id);
      last.delete(o.order_id); // re-insert to keep the map in last-occurrence order
    }
    last.set(o.order_id, o);
  }
  const plan: OrderPushPlan = { push: [], unchanged: [], repeated: [...repeated] };
  for (const [id, order] of last) {
    const hash = orderHash(order);
    const before = Object.prototype.hasOwnProperty.call(known, id) ? known[id] : undefined;
    if (before === hash) plan.unchanged.push(id);
    else plan.push.push({ order, hash, change: before === undefined ? 'new' : 'changed' });
  }
  return plan;
}
