// Webhook subscription activities: list, create, update and delete the service's subscriptions for the
// reconcile workflow, recording in the store which are cbp's own. The webhook password never leaves them: they
// add it to what they send and report only whether a listed one matches.
import { requireSettings } from '../lib/config.ts';
import { sameSecret } from '../lib/secrets.ts';
import { sameUrl, urlHost } from '../lib/urls.ts';
import type { ListedSubscription } from '../client/events.ts';
import { ServiceError } from '../client/errors.ts';
import type { Subscription } from '../contract/resources.ts';
import type { Store } from '../store/db.ts';
import { markSubscriptionDeleted, markSubscriptionsSeenActive, noteListedSubscriptions, recordOwnSubscriptions } from '../store/subscriptions.ts';
import type { ActivityContext } from './deps.ts';
import type { ForeignSubscription, SubscriptionActivities, SubscriptionList, SubscriptionView } from './types.ts';

/** An event type's name as the service writes them (`order_validation.new`); anything else is shown as '?'. */
const EVENT_TYPE_NAME = /^[a-z][a-z0-9_]{0,40}(\.[a-z0-9_]{1,40}){1,3}$/;

/**
 * What cbp shows of another consumer's subscription: guid, event type (also one cbp does not subscribe to),
 * url host and active, '?' (or not active) where the service's item does not say; nothing else of it.
 */
export function foreignSubscription(s: ListedSubscription): ForeignSubscription {
  return {
    guid: s.guid ?? '?',
    event_type: s.event_type !== undefined && EVENT_TYPE_NAME.test(s.event_type) ? s.event_type : '?',
    url_host: s.url === undefined ? '?' : urlHost(s.url),
    active: s.active === true,
  };
}

/** Whether the service showed a password for this subscription (the spec says it does; it may not). */
function showsPassword(sub: Subscription): boolean {
  const pw = (sub.auth as { password?: unknown } | undefined)?.password;
  return typeof pw === 'string' && pw !== '';
}

/**
 * A subscription as the workflow may see it (its input and output are recorded in Temporal's history): the
 * spec's fields, and of the credentials the username and whether the service's password equals `configured`.
 * Without `configured` the comparison is left out (unknown), never guessed.
 */
export function subscriptionView(sub: Subscription, configured: string | undefined): SubscriptionView {
  const view: SubscriptionView = {
    guid: sub.guid,
    email: sub.email,
    url: sub.url,
    event_type: sub.event_type,
    active: sub.active,
    created_at: sub.created_at,
    updated_at: sub.updated_at,
  };
  // Looser than the schema on purpose: a service that omits or blanks a part must not make the view lie.
  const auth = sub.auth as { username?: unknown; password?: unknown } | undefined;
  if (auth && typeof auth === 'object') {
    view.auth = {
      ...(typeof auth.username === 'string' ? { username: auth.username } : {}),
      ...(typeof auth.password === 'string' && auth.password !== '' && configured !== undefined
        ? { password_matches: sameSecret(auth.password, configured) }
        : {}),
    };
  }
  return view;
}

export function createSubscriptionActivities(ctx: ActivityContext): SubscriptionActivities {
  const { config: cfg, withStore, now } = ctx;
  const deps = ctx.deps;

  // Read when needed, not at creation: a worker without it still runs every other activity. ConfigError is
  // not retryable (CBP_ERR_CONFIG): a retry cannot set an environment variable.
  const webhookPassword = (): string => {
    requireSettings(cfg, ['webhookPassword'], 'the webhook subscription activities (the password the service pushes events with)');
    return cfg.webhookPassword;
  };
  const configuredPassword = (): string | undefined => cfg.webhookPassword || undefined;

  /** A store note after a service call that already acted: logged when it fails, never thrown (see createSubscription). */
  async function remember(activity: string, guid: string, fn: (store: Store) => Promise<void>): Promise<void> {
    try {
      await withStore(activity, fn);
    } catch (e) {
      ctx.logger?.warn({ activity, guid, err: (e as Error)?.message?.split('\n')[0] }, 'could not record the subscription in the store');
    }
  }

  return {
    async listSubscriptions(input): Promise<SubscriptionList> {
      const ownUrl = input?.ownUrl;
      // Each item is read only as far as guid, url, e-mail, event type and active: another consumer's may be of a
      // shape cbp does not know (an event type it does not subscribe to, auth as a string), and must fail nothing.
      // Only cbp's own are parsed with the spec's schema; a mismatch names fields, never values.
      const r = await deps.clients.events.listSubscriptionItems();
      const onOwnUrl = (s: ListedSubscription) => ownUrl !== undefined && s.url !== undefined && sameUrl(s.url, ownUrl);
      // Those on the receiver url are cbp's: checked before the store adopts them (without ownUrl, all are).
      const parsed = new Map<ListedSubscription, Subscription>();
      for (const s of r.items) if (ownUrl === undefined || onOwnUrl(s)) parsed.set(s, s.subscription());
      // Which listed ones are cbp's: recorded in the store, or on its receiver url (recorded now, so they stay
      // cbp's when the url changes). A failure here fails the list: without the records cbp's subscriptions for
      // an earlier url would look like another consumer's, and be duplicated.
      const records = await withStore('listSubscriptions', (store) =>
        noteListedSubscriptions(
          store,
          r.items.flatMap((s) => (s.guid === undefined ? [] : [{ guid: s.guid, event_type: s.event_type ?? '', active: s.active === true, onOwnUrl: onOwnUrl(s) }])),
          now(),
        ),
      );
      const isMine = (s: ListedSubscription) => ownUrl === undefined || (s.guid !== undefined && records.has(s.guid));
      const mine = r.items.filter(isMine).map((s) => parsed.get(s) ?? s.subscription());
      const others = r.items.filter((s) => !isMine(s));
      // A shown password of cbp's own that cannot be compared would be planned as "matches": refuse instead of
      // guessing. Another consumer's password is never looked at.
      const password = mine.some(showsPassword) ? webhookPassword() : configuredPassword();
      const subscriptions = mine.map((s): SubscriptionView => {
        const rec = records.get(s.guid);
        return { ...subscriptionView(s, password), ...(rec ? { cbp_own: true as const } : {}), ...(rec && (rec.seenActiveAt || s.active) ? { cbp_seen_active: true as const } : {}) };
      });
      return {
        subscriptions,
        ...(ownUrl === undefined ? {} : { others: others.map(foreignSubscription) }),
        ...(r.date ? { serviceTime: r.date } : {}),
      };
    },

    async createSubscription(request) {
      // Read before the call: a missing password must fail before anything is created.
      const password = webhookPassword();
      const sub = await deps.clients.events.createSubscription({ ...request, auth: { username: request.auth.username, password } });
      // Nothing may throw after the call (a re-run activity would create a second one): a failed record is
      // logged, and the next list records it anyway while it is on the receiver url.
      await remember('createSubscription', sub.guid, (store) =>
        recordOwnSubscriptions(store, [{ guid: sub.guid, event_type: sub.event_type, origin: 'created', active: sub.active }], now()),
      );
      return { ...subscriptionView(sub, password), cbp_own: true as const, ...(sub.active ? { cbp_seen_active: true as const } : {}) };
    },

    async updateSubscription(guid, update) {
      const { auth, ...rest } = update;
      const password = auth ? webhookPassword() : configuredPassword();
      const body = auth ? { ...rest, auth: { username: auth.username, password: password as string } } : rest;
      // Nothing may throw after the call: the service has applied the update, and a failed activity is re-run.
      const sub = await deps.clients.events.updateSubscription(guid, body);
      if (sub.active) await remember('updateSubscription', guid, (store) => markSubscriptionsSeenActive(store, [guid], now()));
      return subscriptionView(sub, password);
    },

    async deleteSubscription(guid) {
      try {
        await deps.clients.events.deleteSubscription(guid);
      } catch (e) {
        // Already gone (a retried delete whose first attempt went through): the goal is met.
        if (!(e instanceof ServiceError && e.httpStatus === 404)) throw e;
      }
      await remember('deleteSubscription', guid, (store) => markSubscriptionDeleted(store, guid, now()));
    },
  };
}
