// Temporal bindings: each workflow passes proxied activities to the same plain body the local runner uses.
// Only deterministic code is imported here (the bodies, pure helpers, types); bundleWorkflowCode checks it.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { ApplicationFailure, continueAsNew, log, proxyActivities, TemporalFailure, workflowInfo } from '@temporalio/workflow';
import type { Activities, DigestSummary, IngestResult, MaintainSummary, WorkflowActs } from '../activities/types.ts';
import { ACTIVITY_GROUPS, ORDER_ACTIVITY_OPTIONS, REPORT_ACTIVITY_OPTIONS, SERVICE_ACTIVITY_OPTIONS, STORE_ACTIVITY_OPTIONS } from './activity-options.ts';
import { backfill, type BackfillInput, type BackfillResult } from './backfill.ts';
import { ingestEvents, type IngestInput } from './ingest.ts';
import { maintainStore, type MaintainStoreInput } from './maintain.ts';
import { sendDigest, type SendDigestInput } from './digest.ts';
import { nightly, type NightlyInput, type NightlyResult } from './nightly.ts';
import { pushOrders, type PushOrdersInput, type PushOrdersResult } from './push-orders.ts';
import { reconcileSubscriptions, type ReconcileInput, type ReconcileResult } from './reconcile.ts';

const proxies = {
  report: proxyActivities<Activities>(REPORT_ACTIVITY_OPTIONS),
  service: proxyActivities<Activities>(SERVICE_ACTIVITY_OPTIONS),
  store: proxyActivities<Activities>(STORE_ACTIVITY_OPTIONS),
  orders: proxyActivities<Activities>(ORDER_ACTIVITY_OPTIONS),
};

function activities(): WorkflowActs {
  const acts: Record<string, unknown> = {};
  for (const [name, group] of Object.entries(ACTIVITY_GROUPS)) acts[name] = proxies[group][name as keyof Activities];
  // The workflow clock: deterministic on replay, and not an activity.
  acts.now = () => new Date().toISOString();
  return acts as unknown as WorkflowActs;
}

/** Set by the server on runs a Schedule starts (and backfills): the nominal time, not the real start. */
export const SCHEDULED_START_TIME = defineSearchAttributeKey('TemporalScheduledStartTime', SearchAttributeType.DATETIME);

function scheduledTime(): string | undefined {
  const t = workflowInfo().typedSearchAttributes.get(SCHEDULED_START_TIME);
  return t ? new Date(t).toISOString() : undefined;
}

function runIdOf(): string {
  const i = workflowInfo();
  return `${i.workflowId}/${i.runId}`;
}

/**
 * A body's own errors (bad input: CbpError with code and retryable) fail the workflow instead of the
 * workflow task, which Temporal would retry forever; activity failures pass through as they are.
 */
async function run<T>(body: () => Promise<T>): Promise<T> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof TemporalFailure) throw e;
    const err = e as { code?: unknown; message?: unknown; retryable?: unknown };
    if (typeof err?.code === 'string') {
      throw ApplicationFailure.create({ type: err.code, message: String(err.message ?? err.code), nonRetryable: err.retryable !== true });
    }
    throw e;
  }
}

export async function nightlyWorkflow(input: NightlyInput): Promise<NightlyResult> {
  const asOf = input.asOf ?? scheduledTime() ?? workflowInfo().startTime.toISOString();
  const result = await run(() => nightly({ ...input, asOf, runId: input.runId ?? runIdOf() }, activities()));
  // The worker's log (the SDK's workflow logger: not repeated on replay); the run record has it too.
  if (result.warning) log.warn(result.warning, { runId: result.runId, asOf: result.asOf, serviceTime: result.serviceTime });
  return result;
}

export async function backfillWorkflow(input: BackfillInput): Promise<BackfillResult> {
  const result = await run(() =>
    backfill({ ...input, runId: input.runId ?? runIdOf() }, activities(), { shouldPause: () => workflowInfo().continueAsNewSuggested }),
  );
  if (result.status === 'continue') return continueAsNew<typeof backfillWorkflow>(result.next);
  if (result.warning) log.warn(result.warning, { runId: result.runId, open: result.open, serviceTime: result.serviceTime });
  return result;
}

export async function sendDigestWorkflow(input: SendDigestInput = {}): Promise<DigestSummary> {
  return run(() => sendDigest({ ...input, runId: input.runId ?? runIdOf() }, activities()));
}

export async function maintainStoreWorkflow(input: MaintainStoreInput = {}): Promise<MaintainSummary> {
  return run(() => maintainStore({ ...input, runId: input.runId ?? runIdOf() }, activities()));
}

export async function ingestEventsWorkflow(input: IngestInput = {}): Promise<IngestResult> {
  return run(() => ingestEvents({ ...input, runId: input.runId ?? runIdOf() }, activities()));
}

export async function reconcileSubscriptionsWorkflow(input: ReconcileInput): Promise<ReconcileResult> {
  return run(() => reconcileSubscriptions({ ...input, runId: input.runId ?? runIdOf() }, activities()));
}

export async function pushOrdersWorkflow(input: PushOrdersInput): Promise<PushOrdersResult> {
  const result = await run(() =>
    pushOrders({ ...input, runId: input.runId ?? runIdOf() }, activities(), { shouldPause: () => workflowInfo().continueAsNewSuggested }),
  );
  if (result.status === 'continue' && result.next) return continueAsNew<typeof pushOrdersWorkflow>(result.next);
  return result;
}
