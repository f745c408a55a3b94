// Desired versus actual webhook subscriptions: a pure plan of creates, updates and deletes.
//
// Rules (docs/spec-decisions.md, "Orchestration"):
// - cbp manages only its own subscriptions: those on its receiver url (the desired url) and those its store
//   records as its own (`cbp_own`: created by cbp, perhaps for an earlier url, or once found on its url).
//   The service pushes each event to every active subscription of its type, so another consumer (a
//   merchant's CRM) may hold subscriptions on the same account: those are never updated or deleted, and are
//   reported as left alone (guid, event type, url host);
// - one of cbp's own per event type; its extra ones are duplicates and are deleted (the kept one: active
//   first, then one that passed vetting, then the one already on the desired url, then the newest);
// - an inactive one cbp has seen active (`cbp_seen_active`: a list showed it active, or its receiver stored its vetting
//   delivery, registration.new: it passed vetting, then was switched off) is
//   re-activated by an update (`active: true`), as the spec's state table says;
// - an inactive one never seen active and older than the vetting period (24 h of retries after creation,
//   plus a margin) by the service's clock failed vetting: the spec says only delete-and-create resolves it;
// - a younger one never seen active is still being vetted: left alone, unless its url or credentials are
//   wrong (vetting tests the url it was created with), then it is re-created;
// - url is compared exactly (trimmed), e-mail case-insensitively, auth.username exactly; the password never
//   reaches this module (it would be recorded in Temporal's history): the list activity compares it and says
//   only `password_matches`, absent when the service did not show one; `forceAuth` re-sends credentials regardless.
import type { SubscribableEventType } from '../contract/resources.ts';
import type { ForeignSubscription, SubscriptionAuthView, SubscriptionUpdateIntent, SubscriptionView, WebhookUser } from '../activities/types.ts';
import { hoursBetween } from '../lib/utc.ts';
import { isLoopbackHost, parsedUrl, sameUrl, urlHost } from '../lib/urls.ts';
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

/** `activation_refused`: the service would not re-activate one cbp had seen active (see reconcile.ts). */
export type CreateReason = 'missing' | 'failed_vetting' | 'vetting_target_changed' | 'activation_refused';
export type DeleteReason = 'duplicate' | 'failed_vetting' | 'vetting_target_changed' | 'activation_refused';
export type UpdateField = 'url' | 'email' | 'auth' | 'active';

export type SubscriptionAction =
  | { op: 'delete'; guid: string; event_type: SubscribableEventType; reason: DeleteReason }
  | { op: 'create'; event_type: SubscribableEventType; reason: CreateReason }
  /** `reactivate`: an inactive one that passed vetting is switched back on (`fields` holds `active`). */
  | { op: 'update'; guid: string; event_type: SubscribableEventType; fields: UpdateField[]; reactivate?: true };

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
  /** Other consumers' subscriptions: never touched. */
  leftAlone: ForeignSubscription[];
}

/** Refuse a webhook url that is not https, unless it is a loopback address. */
export function checkWebhookUrl(url: string): void {
  const u = parsedUrl(url);
  if (!u) throw new WorkflowInputError(`webhook url ${JSON.stringify(url)} is not an absolute URL such as https://example.com/events`);
  if (u.protocol === 'https:') return;
  if (u.protocol === 'http:' && isLoopbackHost(u.hostname)) return;
  throw new InsecureWebhookUrlError(url);
}

/** Whether cbp manages this subscription: on its receiver url, or recorded as its own. */
export function isOwnSubscription(sub: Pick<SubscriptionView, 'url' | 'cbp_own'>, desiredUrl: string): boolean {
  return sub.cbp_own === true || sameUrl(sub.url, desiredUrl);
}

/** What cbp keeps of another consumer's subscription. */
export function foreignView(sub: SubscriptionView): ForeignSubscription {
  return { guid: sub.guid, event_type: sub.event_type, url_host: urlHost(sub.url), active: sub.active };
}

const sameEmail = (a: string, b: string) => a.trim().toLowerCase() === b.trim().toLowerCase();

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
    const va = a.cbp_seen_active === true;
    const vb = b.cbp_seen_active === true;
    if (va !== vb) return va ? -1 : 1;
    const ua = sameUrl(a.url, desired.url);
    const ub = sameUrl(b.url, desired.url);
    if (ua !== ub) return ua ? -1 : 1;
    if (a.created_at !== b.created_at) return a.created_at > b.created_at ? -1 : 1;
    return a.guid < b.guid ? -1 : a.guid > b.guid ? 1 : 0;
  };
}

/**
 * `actual`: the listed subscriptions (only cbp's own when the list activity was given the receiver url; any
 * other found among them is left alone too). `others`: the other consumers' subscriptions the list reported.
 */
export function planSubscriptions(
  desired: DesiredSubscriptions,
  actual: readonly SubscriptionView[],
  opts: PlanOptions,
  others: readonly ForeignSubscription[] = [],
): SubscriptionPlan {
  const deletes: SubscriptionAction[] = [];
  const creates: SubscriptionAction[] = [];
  const updates: SubscriptionAction[] = [];
  const own = actual.filter((s) => isOwnSubscription(s, desired.url));
  const leftAlone = [...others, ...actual.filter((s) => !isOwnSubscription(s, desired.url)).map(foreignView)];
  const plan: SubscriptionPlan = { actions: [], unchanged: [], pendingVetting: [], failedVetting: [], leftAlone };

  for (const type of desired.eventTypes) {
    const subs = own.filter((s) => s.event_type === type).sort(keeperOrder(desired));
    const keeper = subs[0];
    for (const dup of subs.slice(1)) deletes.push({ op: 'delete', guid: dup.guid, event_type: type, reason: 'duplicate' });
    if (!keeper) {
      creates.push({ op: 'create', event_type: type, reason: 'missing' });
      continue;
    }
    const changed = changedFields(keeper, desired);
    if (!keeper.active && desired.active && keeper.cbp_seen_active) {
      // It passed vetting once: the state table's "inactive -> update active=true -> active".
      updates.push({ op: 'update', guid: keeper.guid, event_type: type, fields: [...changed, 'active'], reactivate: true });
      continue;
    }
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
