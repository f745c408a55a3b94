// The local runner: the same workflow bodies, called directly with the real activities and the wall clock
// (or a test's clock). No Temporal server needed; no durability either: a killed backfill resumes from
// the windows recorded in the store, a killed push from the hashes recorded per order.
import type { Activities, IngestResult, WorkflowActs } from '../activities/types.ts';
import { backfill, type BackfillInput, type BackfillResult } from '../workflows/backfill.ts';
import { ingestEvents, type IngestInput } from '../workflows/ingest.ts';
import { nightly, type NightlyInput, type NightlyResult } from '../workflows/nightly.ts';
import { pushOrders, type PushOrdersInput, type PushOrdersResult } from '../workflows/push-orders.ts';
import { reconcileSubscriptions, type ReconcileInput, type ReconcileResult } from '../workflows/reconcile.ts';
import { sendDigest, type SendDigestInput } from '../workflows/digest.ts';
import type { DigestSummary } from '../activities/types.ts';

export interface LocalOptions {
  /** Default: the wall clock. */
  now?: () => string;
}

export function localActs(activities: Activities, opts: LocalOptions = {}): WorkflowActs {
  return { ...activities, now: opts.now ?? (() => new Date().toISOString()) };
}

/** Continued runs (windowsPerRun) are followed here, as Temporal's continue-as-new would. */
const MAX_CONTINUES = 100_000;

export function createLocalRunner(activities: Activities, opts: LocalOptions = {}) {
  const acts = localActs(activities, opts);
  return {
    nightly: (input: NightlyInput): Promise<NightlyResult> => nightly(input, acts),
    async backfill(input: BackfillInput): Promise<BackfillResult> {
      let r = await backfill(input, acts);
      for (let i = 0; r.status === 'continue' && i < MAX_CONTINUES; i++) r = await backfill(r.next, acts);
      return r;
    },
    ingestEvents: (input: IngestInput = {}): Promise<IngestResult> => ingestEvents(input, acts),
    reconcileSubscriptions: (input: ReconcileInput): Promise<ReconcileResult> => reconcileSubscriptions(input, acts),
    pushOrders: (input: PushOrdersInput): Promise<PushOrdersResult> => pushOrders(input, acts),
    sendDigest: (input: SendDigestInput = {}): Promise<DigestSummary> => sendDigest(input, acts),
  };
}

export type LocalRunner = ReturnType<typeof createLocalRunner>;
