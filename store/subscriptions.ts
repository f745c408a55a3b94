// The webhook subscriptions cbp holds as its own (sql/migrations/010_own_subscriptions.sql). The events
// interface is shared with other consumers of the merchant's account, so "which subscriptions are cbp's"
// must survive a change of the receiver url: a subscription cbp created for its old url is still cbp's.
// Only guids, event types and times are kept: never a url, an e-mail or credentials.
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';
import { jsonList, jsonParam, jsonRows } from './insert-rows.ts';
import { sqlTimestamp } from '../lib/utc.ts';

export type OwnOrigin = 'created' | 'adopted';

export interface OwnSubscription {
  guid: string;
  event_type: string;
  origin: OwnOrigin;
  recordedAt: string;
  /** First time cbp saw it active (it passed vetting); null when never. */
  seenActiveAt: string | null;
  deletedAt: string | null;
}

/** A subscription as the service listed it, and whether it is on cbp's receiver url. */
export interface ListedSubscription {
  guid: string;
  event_type: string;
  active: boolean;
  onOwnUrl: boolean;
}

const stamp = sqlTimestamp;

interface Row {
  guid: string;
  event_type: string;
  origin: OwnOrigin;
  recorded_at: string;
  seen_active_at: string | null;
  deleted_at: string | null;
}

async function readOwn(store: Store, guids: readonly string[]): Promise<Map<string, OwnSubscription>> {
  const out = new Map<string, OwnSubscription>();
  if (guids.length === 0) return out;
  const rows = await store.all<Row>(
    `SELECT guid, event_type, origin, strftime(recorded_at, '%Y-%m-%dT%H:%M:%SZ') AS recorded_at,
            strftime(seen_active_at, '%Y-%m-%dT%H:%M:%SZ') AS seen_active_at, strftime(deleted_at, '%Y-%m-%dT%H:%M:%SZ') AS deleted_at
       FROM own_subscriptions WHERE guid IN (${jsonRows(1)})`,
    [jsonList(guids)],
  );
  for (const r of rows) {
    out.set(r.guid, { guid: r.guid, event_type: r.event_type, origin: r.origin, recordedAt: r.recorded_at, seenActiveAt: r.seen_active_at, deletedAt: r.deleted_at });
  }
  return out;
}

/** The records of the given guids (all of them when none given). */
export async function ownSubscriptions(store: Store, guids?: readonly string[]): Promise<Map<string, OwnSubscription>> {
  if (guids) return readOwn(store, guids);
  const rows = await store.all<{ guid: string }>('SELECT guid FROM own_subscriptions ORDER BY recorded_at, guid');
  return readOwn(store, rows.map((r) => r.guid));
}

/** Record subscriptions cbp holds as its own; a guid already recorded keeps its first record. */
export async function recordOwnSubscriptions(
  store: Store,
  subs: ReadonlyArray<{ guid: string; event_type: string; origin: OwnOrigin; active?: boolean }>,
  at: Date,
): Promise<void> {
  if (subs.length === 0) return;
  // One row per guid: an upsert batch holding a key twice keeps an arbitrary one (DESIGN.md).
  const byGuid = new Map(subs.map((s) => [s.guid, s]));
  const t = stamp(at);
  const values = [...byGuid.values()].map((x) => [x.guid, x.event_type, x.origin, t, x.active ? t : null]);
  await store.transaction((s) => s.run(
    upsertSql(s, {
      into: 'own_subscriptions',
      columns: ['guid', 'event_type', 'origin', 'recorded_at', 'seen_active_at'],
      rows: jsonRows(5, ['', '', '', '::TIMESTAMP', '::TIMESTAMP']),
      key: ['guid'],
      set: { seen_active_at: 'coalesce(own_subscriptions.seen_active_at, excluded.seen_active_at)' },
    }),
    [jsonParam(values)],
  ));
}

/**
 * What a list of the service tells the store, in one transaction: subscriptions on cbp's receiver url are
 * adopted as cbp's own, and cbp's own that are active, or whose vetting delivery cbp's receiver stored, are
 * marked seen active (they passed vetting). Returns the records of every listed subscription that is cbp's own.
 */
export async function noteListedSubscriptions(store: Store, listed: readonly ListedSubscription[], at: Date): Promise<Map<string, OwnSubscription>> {
  if (listed.length === 0) return new Map();
  return store.transaction(async (s) => {
    const known = await readOwn(s, listed.map((l) => l.guid));
    const adopt = listed.filter((l) => l.onOwnUrl && !known.has(l.guid));
    await recordOwnSubscriptions(s, adopt.map((l) => ({ guid: l.guid, event_type: l.event_type, origin: 'adopted' as const, active: l.active })), at);
    const own = await readOwn(s, listed.map((l) => l.guid));
    const unseen = listed.filter((l) => own.has(l.guid) && own.get(l.guid)!.seenActiveAt === null);
    const vetted = await vettedByReceiver(s, unseen.filter((l) => !l.active).map((l) => l.guid));
    await markSubscriptionsSeenActive(s, unseen.filter((l) => l.active || vetted.has(l.guid)).map((l) => l.guid), at);
    return readOwn(s, listed.map((l) => l.guid));
  });
}

/**
 * The guids among these whose vetting delivery (registration.new, its event_guid the subscription's guid) cbp's
 * receiver stored: it answered 200, so the service activated the subscription, even if no list showed it active.
 */
async function vettedByReceiver(store: Store, guids: readonly string[]): Promise<Set<string>> {
  if (guids.length === 0) return new Set();
  const rows = await store.all<{ event_guid: string }>(
    `SELECT event_guid FROM events_raw WHERE event_type = 'registration.new' AND event_guid IN (${jsonRows(1)})`, [jsonList(guids)]);
  return new Set(rows.map((r) => r.event_guid));
}

/**
 * Mark cbp's own subscriptions as seen active (the first time only). In a transaction, as every write: it
 * raises the store's generation, so the next publish carries it into the snapshot's own_subscriptions.
 */
export async function markSubscriptionsSeenActive(store: Store, guids: readonly string[], at: Date): Promise<void> {
  if (guids.length === 0) return;
  await store.transaction((s) => s.run(
    `UPDATE own_subscriptions SET seen_active_at = $1::TIMESTAMP WHERE seen_active_at IS NULL AND guid IN (${jsonRows(1, [], 2)})`,
    [stamp(at), jsonList(guids)],
  ));
}

/** cbp deleted this subscription (the record stays: what cbp created and removed, and when). A transaction, as above. */
export async function markSubscriptionDeleted(store: Store, guid: string, at: Date): Promise<void> {
  await store.transaction((s) => s.run('UPDATE own_subscriptions SET deleted_at = $1::TIMESTAMP WHERE guid = $2 AND deleted_at IS NULL', [stamp(at), guid]));
}
