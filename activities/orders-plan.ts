// Order change detection, inside the order activity (never in workflow history): an order is pushed again
// only when its content changed since the last push (or the last rejection) of the same order_id.
// Content = every field of the validated order, in a canonical form, hashed with SHA-256.
import { createHash } from 'node:crypto';
import type { MerchantOrder } from '../contract/orders.ts';
import type { OrderRecord } from './orders-file.ts';
import type { PushOrderBatchResult } from './types.ts';

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
  return createHash('sha256').update(canonicalJson(order)).digest('hex');
}

/** How an order was pushed: first time, content changed, or sent again unchanged after a rejection (--retry-rejected). */
export type PushChange = 'new' | 'changed' | 'retried';

/** What the store holds about an order_id's last push. */
export interface KnownPush {
  hash: string;
  status: 'pushed' | 'rejected';
  runId: string | null;
  /** The line of the source the recorded state came from. */
  line: number | null;
  change: PushChange | null;
}

export interface PlannedPush {
  order: MerchantOrder;
  line: number;
  hash: string;
  change: PushChange;
}

/** Every record of a batch lands in exactly one of these (pushes are counted when their outcome is known). */
export interface PlanCounts {
  /** Same content as last pushed. */
  unchanged: number;
  /** Same content as last rejected: not sent again (retryRejected sends them). */
  stillRejected: number;
  /** An order_id listed again later in the file: the later state is the one that counts. */
  repeated: number;
  /** Records this run already pushed or had rejected before the batch was retried (an activity attempt that failed halfway). */
  earlier: { new: number; changed: number; retried: number; rejected: number };
}

export interface OrderPushPlan {
  push: PlannedPush[];
  counts: PlanCounts;
}

/**
 * Decide what to push from one batch, given what the store knows per order_id. Within a batch the last
 * occurrence of an order_id wins (a file lists an order, then its later state); across batches of one run,
 * an order_id this run already handled from an earlier line counts as repeated when unchanged. A record this
 * very run already handled from the same line (a retried batch) is counted as it was, and not sent again.
 */
export function planOrderPushes(
  records: readonly OrderRecord[],
  known: ReadonlyMap<string, KnownPush>,
  opts: { runId: string; retryRejected?: boolean },
): OrderPushPlan {
  const last = new Map<string, OrderRecord>();
  const counts: PlanCounts = { unchanged: 0, stillRejected: 0, repeated: 0, earlier: { new: 0, changed: 0, retried: 0, rejected: 0 } };
  for (const r of records) {
    if (last.has(r.order.order_id)) {
      counts.repeated++;
      last.delete(r.order.order_id); // re-insert to keep the map in last-occurrence order
    }
    last.set(r.order.order_id, r);
  }
  const push: PlannedPush[] = [];
  for (const [id, { order, line }] of last) {
    const hash = orderHash(order);
    const k = known.get(id);
    if (!k) {
      push.push({ order, line, hash, change: 'new' });
      continue;
    }
    if (k.runId === opts.runId && k.hash === hash) {
      if (k.line === line) {
        if (k.status === 'rejected') counts.earlier.rejected++;
        else counts.earlier[k.change ?? 'changed']++;
      } else counts.repeated++;
      continue;
    }
    if (k.hash !== hash) push.push({ order, line, hash, change: 'changed' });
    else if (k.status === 'pushed') counts.unchanged++;
    else if (opts.retryRejected) push.push({ order, line, hash, change: 'retried' });
    else counts.stillRejected++;
  }
  return { push, counts };
}

/**
 * A batch's result before this attempt pushes anything: what an earlier attempt of this run already did, what
 * needs no push, and the file's own counts. Each push of the attempt then adds to new, changed, retried or rejected.
 */
export function resultBeforePushes(plan: OrderPushPlan, batch: { records: number; invalid: number; next: string | null }): PushOrderBatchResult {
  return {
    records: batch.records,
    new: plan.counts.earlier.new,
    changed: plan.counts.earlier.changed,
    retried: plan.counts.earlier.retried,
    unchanged: plan.counts.unchanged,
    stillRejected: plan.counts.stillRejected,
    rejected: plan.counts.earlier.rejected,
    invalid: batch.invalid,
    repeated: plan.counts.repeated,
    next: batch.next,
  };
}
