// Push the merchant's orders from a file to the order data interface. An order is pushed when it is new or
// its content changed since the last recorded push; a re-run pushes nothing twice. A refused order
// (400/422) is recorded with the service's message and not pushed again until it changes.
import type { InvalidOrderLine, OrderActivities, PipelineActivities, PushRecord } from '../activities/types.ts';
import { WorkflowInputError } from './errors.ts';
import { planOrderPushes } from './orders.ts';
import { checkInt, defaultRunId, recorded } from './run.ts';

export interface PushOrdersInput {
  /** NDJSON or CSV file. */
  source: string;
  /** Orders read per batch. Default 500. */
  batchSize?: number;
  /** Orders per push call; each call's outcomes are recorded before the next. Default 50. */
  pushBatchSize?: number;
  runId?: string;
  /** Set by a continued run. */
  cursor?: string;
  /** Set by a continued run. */
  carried?: PushOrdersCounts;
}

export interface PushOrdersCounts {
  read: number;
  new: number;
  changed: number;
  unchanged: number;
  rejected: number;
  invalid: number;
  /** An order_id listed again later in the same batch (its last state is pushed). */
  repeated: number;
}

/** At most this many rejected / invalid details are kept in a result (counts stay complete). */
export const DETAIL_LIMIT = 100;

export interface PushOrdersResult extends PushOrdersCounts {
  status: 'done' | 'continue';
  runId: string;
  rejectedOrders: Array<{ order_id: string; status: number; message: string }>;
  invalidLines: InvalidOrderLine[];
  /** status 'continue': the input of the next run. */
  next?: PushOrdersInput;
}

export type PushOrdersActs = OrderActivities & Pick<PipelineActivities, 'recordRun'> & { now(): string };

export interface PushOrdersHooks {
  shouldPause?: () => boolean;
}

export async function pushOrders(input: PushOrdersInput, acts: PushOrdersActs, hooks: PushOrdersHooks = {}): Promise<PushOrdersResult> {
  const startedAt = acts.now();
  if (!input.source || typeof input.source !== 'string') throw new WorkflowInputError('source must name an NDJSON or CSV file of orders');
  const batchSize = checkInt(input.batchSize ?? 500, 'batchSize', 1);
  const pushBatchSize = checkInt(input.pushBatchSize ?? 50, 'pushBatchSize', 1);
  const runId = input.runId ?? defaultRunId('pushOrders', startedAt);
  const counts: PushOrdersCounts = input.carried
    ? { ...input.carried }
    : { read: 0, new: 0, changed: 0, unchanged: 0, rejected: 0, invalid: 0, repeated: 0 };
  const rejectedOrders: PushOrdersResult['rejectedOrders'] = [];
  const invalidLines: InvalidOrderLine[] = [];

  return recorded<PushOrdersResult>(acts, { runId, workflow: 'pushOrders', startedAt }, async () => {
    let cursor = input.cursor;
    for (;;) {
      const batch = await acts.readOrders({ source: input.source, cursor, batchSize });
      counts.read += batch.orders.length;
      counts.invalid += batch.invalid.length;
      for (const l of batch.invalid) if (invalidLines.length < DETAIL_LIMIT) invalidLines.push(l);

      if (batch.orders.length > 0) {
        const known = await acts.pushedHashes([...new Set(batch.orders.map((o) => o.order_id))]);
        const plan = planOrderPushes(batch.orders, known);
        counts.unchanged += plan.unchanged.length;
        counts.repeated += plan.repeated.length;
        for (let i = 0; i < plan.push.length; i += pushBatchSize) {
          const slice = plan.push.slice(i, i + pushBatchSize);
          const outcomes = await acts.pushOrders(slice.map((p) => p.order));
          const byId = new Map(outcomes.map((o) => [o.order_id, o]));
          const records: PushRecord[] = [];
          for (const p of slice) {
            const o = byId.get(p.order.order_id);
            if (!o) throw new WorkflowInputError(`pushOrders returned no outcome for order ${p.order.order_id}`);
            if (o.ok) {
              counts[p.change] += 1;
              records.push({ order_id: o.order_id, hash: p.hash, status: 'pushed', id: o.id, runId });
            } else {
              counts.rejected += 1;
              if (rejectedOrders.length < DETAIL_LIMIT) rejectedOrders.push({ order_id: o.order_id, status: o.status, message: o.message });
              records.push({ order_id: o.order_id, hash: p.hash, status: 'rejected', httpStatus: o.status, message: o.message, runId });
            }
          }
          await acts.recordPushes(records);
        }
      }

      if (batch.next === null) break;
      if (batch.next === cursor) throw new WorkflowInputError(`readOrders did not advance past cursor ${JSON.stringify(cursor)}`);
      cursor = batch.next;
      if (hooks.shouldPause?.()) {
        const next: PushOrdersInput = { ...input, runId, cursor, carried: { ...counts } };
        return { result: { status: 'continue', runId, ...counts, rejectedOrders, invalidLines, next }, summary: {}, record: false };
      }
    }
    const result: PushOrdersResult = { status: 'done', runId, ...counts, rejectedOrders, invalidLines };
    return { result, summary: { source: input.source, ...counts, rejectedOrders: rejectedOrders.slice(0, 20) } };
  });
}
