// Order activities: one batch of an order file at a time. Orders stay inside the activity (they hold names,
// addresses, e-mails and card digits, and Temporal records every input and result): only counts and a cursor
// leave it.
import path from 'node:path';
import { isOrderRefusal } from '../client/order-data.ts';
import { settleBounded } from '../lib/pool.ts';
import { recordOrderPushes, startOrderBatch, type OrderPushRecord } from '../store/orders.ts';
import type { ActivityContext } from './deps.ts';
import { withHeartbeat } from './heartbeat.ts';
import { readOrderBatch } from './orders-file.ts';
import { planOrderPushes, resultBeforePushes } from './orders-plan.ts';
import type { OrderActivities, PushOrderBatchInput, PushOrderBatchResult } from './types.ts';

export function createOrderActivities(ctx: ActivityContext): OrderActivities {
  const { withStore, now, logger } = ctx;

  /** See OrderActivities.pushOrderBatch. */
  async function pushOrderBatch(input: PushOrderBatchInput, signal: AbortSignal): Promise<PushOrderBatchResult> {
    const { source, cursor, batchSize, pushBatchSize, runId } = input;
    const batch = await readOrderBatch(source, cursor, batchSize);
    const src = path.resolve(source);
    const rows = await withStore('pushOrderBatch', (store) => startOrderBatch(store, {
      invalid: { source: src, firstLine: batch.firstLine, lastLine: batch.lastLine, lines: batch.invalid, runId, at: now() },
      orderIds: batch.orders.map((r) => r.order.order_id),
    }));
    const known = new Map([...rows].map(([id, r]) => [id, { hash: r.hash, status: r.status, runId: r.run_id, line: r.source_line, change: r.change }]));
    const plan = planOrderPushes(batch.orders, known, { runId, retryRejected: input.retryRejected === true });
    const out = resultBeforePushes(plan, { records: batch.records, invalid: batch.invalid.length, next: batch.next });
    const client = ctx.clients.data;
    for (let i = 0; i < plan.push.length; i += pushBatchSize) {
      const slice = plan.push.slice(i, i + pushBatchSize);
      // After the first failure that is not the order's own refusal no further push starts, so a key that
      // fails is asked for once, not once per order; started ones finish and are recorded.
      const { outcomes } = await settleBounded(slice, ctx.deps.pushConcurrency ?? 4, async (p) => client.pushOrder(p.order, { signal }), {
        shouldStop: () => signal.aborted,
        stopsOnFailure: (e) => !isOrderRefusal(e),
      });
      const records: OrderPushRecord[] = [];
      let failure: { error: unknown } | undefined;
      outcomes.forEach((r, j) => {
        const p = slice[j]!;
        const base = { order_id: p.order.order_id, hash: p.hash, change: p.change, line: p.line, runId };
        if (r === undefined) return; // not attempted: a lane failed first
        if (r.ok) {
          out[p.change]++;
          records.push({ ...base, status: 'pushed', serviceId: r.value.id });
          return;
        }
        const refused = isOrderRefusal(r.error);
        if (refused) {
          out.rejected++;
          records.push({ ...base, status: 'rejected', httpStatus: refused.status, message: refused.message });
        } else failure ??= { error: r.error };
      });
      // What went through is recorded even when the slice fails: a re-run counts it as done, not as new.
      await withStore('pushOrderBatch', (store) => recordOrderPushes(store, records, now()));
      if (failure) throw failure.error;
      if (signal.aborted) throw signal.reason ?? new Error('order batch cancelled');
    }
    logger?.debug({ runId, cursor: cursor ?? null, next: out.next, records: out.records }, 'order batch pushed');
    return out;
  }

  return {
    async pushOrderBatch(input) {
      return withHeartbeat(async (signal) => pushOrderBatch(input, signal));
    },
  };
}
