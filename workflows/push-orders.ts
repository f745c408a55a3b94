// Push the merchant's orders from a file to the order data interface. An order is pushed when it is new or
// its content changed since the last recorded push; a re-run pushes nothing twice. An order the service
// refuses (its own POST /order answered 400/422) is recorded with the service's message and not sent again
// until it changes, or until a run asks for retryRejected.
//
// The orders themselves never pass through here: each batch is one activity that reads, hashes, compares,
// pushes and records (orders hold names, addresses, e-mails and card digits, and Temporal keeps every input
// and result in its history). The body carries the file's path, a cursor and counts.
import type { OrderActivities, OrderBatchCounts, PipelineActivities } from '../activities/types.ts';
import { WorkflowInputError } from './errors.ts';
import { checkInt, defaultRunId, recorded } from './run.ts';

export interface PushOrdersInput {
  /** NDJSON or CSV file, as the worker sees it. */
  source: string;
  /** Records read per batch (one activity each). Default 500. */
  batchSize?: number;
  /** Pushes whose outcomes are recorded together (one store write each). Default 200. */
  pushBatchSize?: number;
  /** Send again the orders the service refused before, even when unchanged. Default false. */
  retryRejected?: boolean;
  runId?: string;
  /** Set by a continued run. */
  cursor?: string;
  /** Set by a continued run. */
  carried?: PushOrdersCounts;
}

/**
 * Every record of the file is counted once: read = pushed + unchanged + stillRejected + rejected + invalid +
 * repeated, and pushed = new + changed + retried.
 */
export interface PushOrdersCounts {
  read: number;
  pushed: number;
  new: number;
  changed: number;
  retried: number;
  unchanged: number;
  stillRejected: number;
  rejected: number;
  invalid: number;
  repeated: number;
}

export interface PushOrdersResult extends PushOrdersCounts {
  status: 'done' | 'continue';
  runId: string;
  source: string;
  /** status 'continue': the input of the next run. */
  next?: PushOrdersInput;
}

export type PushOrdersActs = OrderActivities & Pick<PipelineActivities, 'recordRun'> & { now(): string };

export interface PushOrdersHooks {
  shouldPause?: () => boolean;
}

export const NO_ORDERS: PushOrdersCounts = { read: 0, pushed: 0, new: 0, changed: 0, retried: 0, unchanged: 0, stillRejected: 0, rejected: 0, invalid: 0, repeated: 0 };

function add(counts: PushOrdersCounts, b: OrderBatchCounts): void {
  counts.read += b.records;
  counts.new += b.new;
  counts.changed += b.changed;
  counts.retried += b.retried;
  counts.pushed += b.new + b.changed + b.retried;
  counts.unchanged += b.unchanged;
  counts.stillRejected += b.stillRejected;
  counts.rejected += b.rejected;
  counts.invalid += b.invalid;
  counts.repeated += b.repeated;
}

/** Whether the file holds orders the service has not accepted (invalid, refused now or before). */
export function ordersNeedAttention(c: PushOrdersCounts): boolean {
  return c.invalid + c.rejected + c.stillRejected > 0;
}

export async function pushOrders(input: PushOrdersInput, acts: PushOrdersActs, hooks: PushOrdersHooks = {}): Promise<PushOrdersResult> {
  const startedAt = acts.now();
  if (!input.source || typeof input.source !== 'string') throw new WorkflowInputError('source must name an NDJSON or CSV file of orders');
  const batchSize = checkInt(input.batchSize ?? 500, 'batchSize', 1);
  const pushBatchSize = checkInt(input.pushBatchSize ?? 200, 'pushBatchSize', 1);
  const runId = input.runId ?? defaultRunId('pushOrders', startedAt);
  const retryRejected = input.retryRejected === true;
  const counts: PushOrdersCounts = { ...NO_ORDERS, ...input.carried };

  return recorded<PushOrdersResult>(acts, { runId, workflow: 'pushOrders', startedAt }, async () => {
    let cursor = input.cursor;
    for (;;) {
      const b = await acts.pushOrderBatch({ source: input.source, ...(cursor === undefined ? {} : { cursor }), batchSize, pushBatchSize, runId, ...(retryRejected ? { retryRejected } : {}) });
      add(counts, b);
      if (b.next === null) break;
      if (b.next === cursor) throw new WorkflowInputError(`pushOrderBatch did not advance past cursor ${JSON.stringify(cursor)}`);
      cursor = b.next;
      if (hooks.shouldPause?.()) {
        const next: PushOrdersInput = { ...input, runId, cursor, carried: { ...counts } };
        return { result: { status: 'continue', runId, source: input.source, ...counts, next }, summary: {}, record: false };
      }
    }
    const result: PushOrdersResult = { status: 'done', runId, source: input.source, ...counts };
    return { result, summary: { source: input.source, ...(retryRejected ? { retryRejected } : {}), ...counts } };
  });
}
