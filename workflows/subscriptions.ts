// Desired versus actual webhook subscriptions: a pure plan of creates, updates and deletes.
//
// Rules (docs/spec-decisions.md, "Orchestration"):
// - one subscription per event type; extra ones are duplicates and are deleted (the kept one: active first,
//   then the one already on the desired url, then the newest);
// - an inactive subscription older than the vetting period (24 h of retries after creation, plus a margin)
//   by the service's clock failed vetting: the spec says only delete-and-create resolves it;
// - a younger inactive one is still being vetted: left alone, unless its url or credentials are wrong
//   (vetting tests the url it was created with), then it is re-created;
// - url is compared exactly (trimmed), e-mail case-insensitively, auth.username exactly; the password never
//   reaches this module (it would be recorded in Temporal's history): the list activity compares it and says
//   only `password_matches`, absent when the service did not show one; `forceAuth` re-sends credentials regardless.
import type { SubscribableEventType } from '../contract/resources.ts';
import type { SubscriptionAuthView, SubscriptionUpdateIntent, SubscriptionView, WebhookUser } from '../activities/types.ts';
import { InsecureWebhookUrlError, WorkflowInputError } from './errors.ts';

export interface DesiredSubscriptions {
  url: string;
  email: string;
  /** The username only: the activities add the configured password to what they send. */
  auth: WebhookUser;
  /** Default true. */
  active: boolean;
  eventTypes: readonly SubscribableEventType[];
  /** Send auth in an update even when the list does not show a difference (password rotation). */
  forceAuth?: boolean;
}

export interface PlanOptions {
  /** The service's current time (ISO UTC). */
  serviceNow: string;
  /** Age after which a still-inactive subscription counts as failed vetting. */
  vettingGraceHours: number;
}

/** 24 hours of vetting retries (the spec's limit) plus an hour for the service's last attempt to land. */
export const DEFAULT_VETTING_GRACE_HOURS = 25;

export type CreateReason = 'missing' | 'failed_vetting' | 'vetting_target_changed';
export type DeleteReason = 'duplicate' | 'failed_vetting' | 'vetting_target_changed';
export type UpdateField = 'url' | 'email' | 'auth' | 'active';

export type SubscriptionAction =
  | { op: 'delete'; guid: string; event_type: SubscribableEventType; reason: DeleteReason }
  | { op: 'create'; event_type: SubscribableEventType; reason: CreateReason }
  | { op: 'update'; guid: string; event_type: SubscribableEventType; fields: UpdateField[] };

export interface VettingNote {
  guid: string;
  event_type: SubscribableEventType;
  created_at: string;
  ageHours: number;
}

export interface SubscriptionPlan {
  /** Deletes first, then creates, then updates. */
  actions: SubscriptionAction[];
  unchanged: Array<{ guid: string; event_type: SubscribableEventType }>;
  pendingVetting: VettingNote[];
  failedVetting: VettingNote[];
}

const LOOPBACK_HOST = /^(localhost|[a-z0-9-]+\.localhost|127(\.\d{1,3}){3}|\[::1\]|\[0{0,4}(:0{0,4}){0,6}:0{0,3}1\])$/i;

/** Hosts the webhook may use over plain http: the machine itself (the sandbox pushes to it locally). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_HOST.test(host);
}

/** Refuse a webhook url that is not https, unless it is a loopback address. */
export function checkWebhookUrl(url: string): void {
  // A regex, not URL: the workflow sandbox should not depend on a URL implementation.
  const m = /^([a-z][a-z0-9+.-]*):\/\/(?:[^@/?#]*@)?(\[[^\]]*\]|[^:/?#]*)(?::\d*)?(?:[/?#]|$)/i.exec(url.trim());
  if (!m || !m[2]) throw new WorkflowInputError(`webhook url ${JSON.stringify(url)} is not an absolute URL such as https://example.com/events`);
  const scheme = m[1]!.toLowerCase();
  if (scheme === 'https') return;
  if (scheme === 'http' && isLoopbackHost(m[2]!)) return;
  throw new InsecureWebhookUrlError(url);
}

function hoursBetween(fromIso: string, toIso: string): number {
  const a = Date.parse(fromIso);
  const b = Date.parse(toIso);
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.NaN;
  return (b - a) / 3_600_000;
}

const sameEmail = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();
const sameUrl = (a: string, b: string) => a.trim() === b.trim();

/** Whether the credentials differ, as far as the list lets us see. */
export function authDiffers(actual: SubscriptionAuthView | undefined, desired: WebhookUser): boolean {
  if (!actual) return false; // not listed: not comparable
  if (typeof actual.username === 'string' && actual.username !== desired.username) return true;
  // Only an explicit false: absent means the service showed no password, so there is nothing to compare.
  return actual.password_matches === false;
}

/** The fields of `sub` that differ from the desired state (active excluded). */
export function changedFields(sub: SubscriptionView, desired: DesiredSubscriptions): UpdateField[] {
  const out: UpdateField[] = [];
  if (!sameUrl(sub.url, desired.url)) out.push('url');
  if (!sameEmail(sub.email, desired.email)) out.push('email');
  if (desired.forceAuth || authDiffers(sub.auth, desired.auth)) out.push('auth');
  return out;
}

/** Build the update for the given fields; `auth` carries the username, the activity adds the password. */
export function updateBody(fields: UpdateField[], desired: DesiredSubscriptions): SubscriptionUpdateIntent {
  const u: SubscriptionUpdateIntent = {};
  if (fields.includes('url')) u.url = desired.url.trim();
  if (fields.includes('email')) u.email = desired.email.trim();
  if (fields.includes('auth')) u.auth = { username: desired.auth.username };
  if (fields.includes('active')) u.active = desired.active;
  return u;
}

function keeperOrder(desired: DesiredSubscriptions) {
  return (a: SubscriptionView, b: SubscriptionView): number => {
    if (a.active !== b.active) return a.active ? -1 : 1;
    const ua = sameUrl(a.url, desired.url);
    const ub = sameUrl(b.url, desired.url);
    if (ua !== ub) return ua ? -1 : 1;
    if (a.created_at !== b.created_at) return a.created_at > b.created_at ? -1 : 1;
    return a.guid < b.guid ? -1 : a.guid > b.guid ? 1 : 0;
  };
}

export function planSubscriptions(desired: DesiredSubscriptions, actual: readonly SubscriptionView[], opts: PlanOptions): SubscriptionPlan {
  const deletes: SubscriptionAction[] = [];
  const creates: SubscriptionAction[] = [];
  const updates: SubscriptionAction[] = [];
  const plan: SubscriptionPlan = { actions: [], unchanged: [], pendingVetting: [], failedVetting: [] };

  for (const type of desired.eventTypes) {
    const subs = actual.filter((s) => s.event_type === type).sort(keeperOrder(desired));
    const keeper = subs[0];
    for (const dup of subs.slice(1)) deletes.push({ op: 'delete', guid: dup.guid, event_type: type, reason: 'duplicate' });
    if (!keeper) {
      creates.push({ op: 'create', event_type: type, reason: 'missing' });
      continue;
    }
    const changed = changedFields(keeper, desired);
    if (!keeper.active && desired.active) {
      const ageHours = hoursBetween(keeper.created_at, opts.serviceNow);
      const note: VettingNote = { guid: keeper.guid, event_type: type, created_at: keeper.created_at, ageHours };
      // An unreadable age is treated as old: re-creating is safe, waiting forever is not.
      if (!(ageHours < opts.vettingGraceHours)) {
        plan.failedVetting.push(note);
        deletes.push({ op: 'delete', guid: keeper.guid, event_type: type, reason: 'failed_vetting' });
        creates.push({ op: 'create', event_type: type, reason: 'failed_vetting' });
      } else if (changed.includes('url') || changed.includes('auth')) {
        deletes.push({ op: 'delete', guid: keeper.guid, event_type: type, reason: 'vetting_target_changed' });
        creates.push({ op: 'create', event_type: type, reason: 'vetting_target_changed' });
      } else {
        plan.pendingVetting.push(note);
        if (changed.length > 0) updates.push({ op: 'update', guid: keeper.guid, event_type: type, fields: changed });
        else plan.unchanged.push({ guid: keeper.guid, event_type: type });
      }
      continue;
    }
    const fields = keeper.active !== desired.active ? [...changed, 'active' as const] : changed;
    if (fields.length > 0) updates.push({ op: 'update', guid: keeper.guid, event_type: type, fields });
    else plan.unchanged.push({ guid: keeper.guid, event_type: type });
  }
  plan.actions = [...deletes, ...creates, ...updates];
  return plan;
}
