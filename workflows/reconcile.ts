// Make the service's webhook subscriptions match the desired state, and report what changed.
import type { ForeignSubscription, PipelineActivities, SubscriptionActivities, WebhookUser } from '../activities/types.ts';
import { SUBSCRIBABLE_EVENT_TYPES, type SubscribableEventType } from '../contract/resources.ts';
import { WorkflowInputError } from './errors.ts';
import { defaultRunId, recorded } from './run.ts';
import {
  checkWebhookUrl,
  DEFAULT_VETTING_GRACE_HOURS,
  planSubscriptions,
  updateBody,
  type CreateReason,
  type DeleteReason,
  type DesiredSubscriptions,
  type UpdateField,
  type VettingNote,
} from './subscriptions.ts';

export interface ReconcileInput {
  webhookUrl: string;
  email: string;
  /**
   * The username of the Basic credentials the service pushes with. The password is not part of this input:
   * under Temporal the input is kept in the workflow history, so the activities add the password from the
   * worker's CBP_WEBHOOK_PASSWORD and report back only whether a listed one matches (docs/orchestration.md).
   */
  auth: WebhookUser;
  /** Default true. */
  active?: boolean;
  /** Default: all 8 subscribable event types. */
  eventTypes?: SubscribableEventType[];
  /** Re-send credentials to every subscription (password rotation; the list may not show passwords). */
  forceAuth?: boolean;
  /** Default 25 (24 h of vetting retries plus a margin). */
  vettingGraceHours?: number;
  runId?: string;
}

export interface ReconcileResult {
  runId: string;
  created: Array<{ event_type: SubscribableEventType; guid: string; reason: CreateReason }>;
  updated: Array<{ event_type: SubscribableEventType; guid: string; fields: UpdateField[] }>;
  deleted: Array<{ event_type: SubscribableEventType; guid: string; reason: DeleteReason }>;
  unchanged: number;
  pendingVetting: VettingNote[];
  failedVetting: VettingNote[];
  /** Other consumers' subscriptions, never touched: guid, event type, url host (never their auth). */
  leftAlone: ForeignSubscription[];
  /** The clock used to judge vetting age: the service's when it told us. */
  serviceTime: string;
}

/** Service codes of a refused request (400, 422): the same request would be refused again. */
const REFUSED = new Set(['CBP_ERR_SERVICE_BAD_REQUEST', 'CBP_ERR_SERVICE_UNPROCESSABLE']);

/** The error code along a chain: a CbpError's `code` here, an ApplicationFailure's `type` under ActivityFailure in Temporal. */
function errorCodes(e: unknown): string[] {
  const out: string[] = [];
  let cur: unknown = e;
  for (let depth = 0; depth < 8 && typeof cur === 'object' && cur !== null; depth++) {
    const { code, type, cause } = cur as { code?: unknown; type?: unknown; cause?: unknown };
    if (typeof code === 'string') out.push(code);
    if (typeof type === 'string') out.push(type);
    cur = cause;
  }
  return out;
}

export type ReconcileActs = SubscriptionActivities & Pick<PipelineActivities, 'recordRun'> & { now(): string };

export async function reconcileSubscriptions(input: ReconcileInput, acts: ReconcileActs): Promise<ReconcileResult> {
  const startedAt = acts.now();
  // Refused before anything is called: the service would push credentials in clear text.
  checkWebhookUrl(input.webhookUrl);
  if (!input.email || !input.email.includes('@')) throw new WorkflowInputError(`email must be an e-mail address, got ${JSON.stringify(input.email)}`);
  // Refused rather than dropped: by the time this runs under Temporal, the caller's password is already in the
  // history, and they should learn to stop sending it. The value is never echoed.
  if (input.auth && Object.prototype.hasOwnProperty.call(input.auth, 'password')) {
    throw new WorkflowInputError('auth must not carry a password: the worker takes the webhook password from CBP_WEBHOOK_PASSWORD; pass only auth.username');
  }
  if (!input.auth?.username || typeof input.auth.username !== 'string') throw new WorkflowInputError('auth needs the username of the webhook\'s Basic credentials');
  const eventTypes = input.eventTypes ?? [...SUBSCRIBABLE_EVENT_TYPES];
  for (const t of eventTypes) {
    if (!(SUBSCRIBABLE_EVENT_TYPES as readonly string[]).includes(t)) {
      throw new WorkflowInputError(`${JSON.stringify(t)} is not a subscribable event type (${SUBSCRIBABLE_EVENT_TYPES.join(', ')})`);
    }
  }
  const desired: DesiredSubscriptions = {
    url: input.webhookUrl.trim(),
    email: input.email.trim(),
    auth: { username: input.auth.username },
    active: input.active ?? true,
    eventTypes,
    forceAuth: input.forceAuth,
  };
  const runId = input.runId ?? defaultRunId('reconcileSubscriptions', startedAt);

  return recorded(acts, { runId, workflow: 'reconcileSubscriptions', startedAt }, async () => {
    // Given cbp's receiver url, the activity returns cbp's own subscriptions in full and the others reduced.
    const list = await acts.listSubscriptions({ ownUrl: desired.url });
    const serviceTime = list.serviceTime ?? acts.now();
    const plan = planSubscriptions(
      desired,
      list.subscriptions,
      { serviceNow: serviceTime, vettingGraceHours: input.vettingGraceHours ?? DEFAULT_VETTING_GRACE_HOURS },
      list.others ?? [],
    );
    const result: ReconcileResult = {
      runId,
      created: [],
      updated: [],
      deleted: [],
      unchanged: plan.unchanged.length,
      pendingVetting: plan.pendingVetting,
      failedVetting: plan.failedVetting,
      leftAlone: plan.leftAlone,
      serviceTime,
    };
    const create = async (event_type: SubscribableEventType, reason: CreateReason) => {
      const sub = await acts.createSubscription({ email: desired.email, url: desired.url, event_type, auth: { ...desired.auth } });
      result.created.push({ event_type, guid: sub.guid, reason });
    };
    // Sequential and in plan order (deletes, creates, updates): a duplicate is gone before its
    // replacement exists, and a partial run leaves a state the next run completes.
    for (const a of plan.actions) {
      if (a.op === 'delete') {
        await acts.deleteSubscription(a.guid);
        result.deleted.push({ event_type: a.event_type, guid: a.guid, reason: a.reason });
      } else if (a.op === 'create') {
        await create(a.event_type, a.reason);
      } else {
        try {
          await acts.updateSubscription(a.guid, updateBody(a.fields, desired));
        } catch (e) {
          // The service refused to switch it back on (the sandbox does so when its vetting failed): the spec's
          // only remedy, delete and re-create, rather than a run that fails the same way every time.
          if (!a.reactivate || !errorCodes(e).some((c) => REFUSED.has(c))) throw e;
          await acts.deleteSubscription(a.guid);
          result.deleted.push({ event_type: a.event_type, guid: a.guid, reason: 'activation_refused' });
          await create(a.event_type, 'activation_refused');
          continue;
        }
        result.updated.push({ event_type: a.event_type, guid: a.guid, fields: a.fields });
      }
    }
    return {
      result,
      summary: {
        created: result.created,
        updated: result.updated,
        deleted: result.deleted,
        unchanged: result.unchanged,
        pendingVetting: result.pendingVetting,
        failedVetting: result.failedVetting,
        leftAlone: result.leftAlone,
        serviceTime,
      },
    };
  });
}
