// Every write of the store raises its generation (issue #10 review): the snapshot's publish step compares
// generations, so a write outside Store.transaction would leave the snapshot's copy of it behind for good.
// The subscriptions reconcile's own writes (seen active, deleted) were such writes.
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { storeGeneration, storeVersion } from '../store/generation.ts';
import { publishIfBehind } from '../store/snapshot.ts';
import { markSubscriptionDeleted, markSubscriptionsSeenActive, noteListedSubscriptions, recordOwnSubscriptions } from '../store/subscriptions.ts';
import { tempDir } from './helpers/tmp.ts';

const open: Store[] = [];
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

async function store(dbPath: string, readOnly = false): Promise<Store> {
  const s = await openTestStore({ dbPath, readOnly, migrate: !readOnly });
  open.push(s);
  return s;
}

const t1 = new Date('2026-03-01T00:00:00Z');
const t2 = new Date('2026-03-02T00:00:00Z');

describe("the subscriptions' ownership records", () => {
  it('raise the store generation when a subscription is first seen active and when cbp deletes one', async () => {
    const s = await store(':memory:');
    await recordOwnSubscriptions(s, [{ guid: 'sub_a', event_type: 'rdr.new', origin: 'created' }], t1);
    const g0 = (await storeGeneration(s)) as number;
    await markSubscriptionsSeenActive(s, ['sub_a'], t2);
    expect(await storeGeneration(s)).toBe(g0 + 1);
    await markSubscriptionDeleted(s, 'sub_a', t2);
    expect(await storeGeneration(s)).toBe(g0 + 2);
    // Nothing to mark: no write, no step.
    await markSubscriptionsSeenActive(s, [], t2);
    expect(await storeGeneration(s)).toBe(g0 + 2);
    // Inside another write's transaction: one commit, one step.
    await noteListedSubscriptions(s, [{ guid: 'sub_b', event_type: 'rdr.match', active: true, onOwnUrl: true }], t2);
    expect(await storeGeneration(s)).toBe(g0 + 3);
  });

  it("reach the snapshot: the next publish step carries deleted_at and seen_active_at into it", async () => {
    const dir = tempDir();
    const s = await store(path.join(dir, 'cbp.duckdb'));
    const snapshotPath = path.join(dir, 'published', 'cbp.duckdb');
    await recordOwnSubscriptions(s, [{ guid: 'sub_a', event_type: 'rdr.new', origin: 'created' }], t1);
    expect(await publishIfBehind(s, { snapshotPath })).toMatchObject({ published: true });
    await markSubscriptionsSeenActive(s, ['sub_a'], t2);
    await markSubscriptionDeleted(s, 'sub_a', t2);
    expect(await publishIfBehind(s, { snapshotPath })).toMatchObject({ published: true });
    const snap = await store(snapshotPath, true);
    expect(await snap.all("SELECT strftime(seen_active_at, '%Y-%m-%d') AS seen, strftime(deleted_at, '%Y-%m-%d') AS deleted FROM own_subscriptions")).toEqual([
      { seen: '2026-03-02', deleted: '2026-03-02' },
    ]);
  });
});

describe('a store version', () => {
  it("reads the store id where the column exists, of the store or of an attached database, and none of a store from before it", async () => {
    const s = await openTestStore({ dbPath: ':memory:', migrate: false });
    open.push(s);
    await s.run("CREATE TABLE store_generation (generation BIGINT, changed_at TIMESTAMP); INSERT INTO store_generation VALUES (7, now()::TIMESTAMP)");
    await s.run("ATTACH ':memory:' AS \"snap x\"; CREATE TABLE \"snap x\".main.store_generation (generation BIGINT, store_id VARCHAR); INSERT INTO \"snap x\".main.store_generation VALUES (3, 'st_1')");
    expect(await storeVersion(s)).toEqual({ storeId: null, generation: 7 });
    expect(await storeVersion(s, 'snap x')).toEqual({ storeId: 'st_1', generation: 3 });
  });
});
