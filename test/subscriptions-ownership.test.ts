// The subscriptions reconcile manages only cbp's own subscriptions (issue #10). The service pushes each event to
// every active subscription of its type, so a merchant's CRM may hold its own on the same account: cbp must
// never rewrite or delete those. With the REAL activities, a real store and the sandbox: a CRM's subscriptions
// are left alone (and reported by guid, type and host only), cbp's own stay its own when its receiver url
// changes, and one it switched off (or someone did) is switched back on by an update.
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import type { RunningReceiver } from '../webhook/index.ts';
import type { Pipeline } from '../cli/pipeline.ts';
import type { Activities } from '../activities/types.ts';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import type { Store } from '../store/db.ts';
import { openTestStore } from './helpers/store-template.ts';
import { ownSubscriptions, recordOwnSubscriptions, markSubscriptionsSeenActive, markSubscriptionDeleted } from '../store/subscriptions.ts';
import type { ReconcileInput } from '../workflows/reconcile.ts';
import { startReceiver } from '../webhook/index.ts';
import { admin, cbp, configFor, pipelineFor, sandbox } from './activities-fixtures.ts';
import { tempDir } from './helpers/tmp.ts';

const AUTH = { username: 'cbp-hook', password: 'hook-password-5d1e' };
// What of the CRM's subscriptions must never reach cbp's history, store or report.
// `ss-CRMSECRET` is the end of a url password holding a raw `@` (valid: the host follows the last `@`).
const CRM_SECRETS = ['crm-path-token-61', 'crm-query-key-27', 'crm-admin', 'crm-user', 'crm-password-88', 'CRMSECRET', 'crmsecret'];

type SandboxSub = { guid: string; event_type: string; url: string; email: string; active: boolean; auth: { username: string; password: string }; vetting: string };

let dir: string;
let sb: RunningSandbox;
let receiver: RunningReceiver;
let p: Pipeline;
let crmServer: http.Server;
let crmBase: string;

/** Every activity's input and result, as Temporal's history would hold them. */
const log: unknown[] = [];
function recording(a: Activities): Activities {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(a)) {
    out[name] = async (...args: unknown[]) => {
      log.push({ name, args: structuredClone(args) });
      const r = await (fn as (...x: unknown[]) => Promise<unknown>).apply(a, args);
      log.push({ name, result: r === undefined ? null : structuredClone(r) });
      return r;
    };
  }
  return out as unknown as Activities;
}

beforeAll(async () => {
  dir = tempDir();
  sb = await sandbox();
  receiver = await startReceiver({ ...AUTH, journalDir: path.join(dir, 'journal'), port: 0 });
  p = await pipelineFor(configFor(sb, dir, { ...AUTH, url: receiver.url }), { wrap: recording });
  // The CRM's own webhook: answers everything with 200, so its subscriptions pass vetting.
  crmServer = http.createServer((req, res) => req.resume().on('end', () => res.end()));
  await new Promise<void>((r) => crmServer.listen(0, '127.0.0.1', r));
  crmBase = `http://127.0.0.1:${(crmServer.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await p?.close();
  await receiver?.close();
  await sb?.close();
  await new Promise((r) => crmServer?.close(r));
});

const input = (url = receiver.url): ReconcileInput => ({ webhookUrl: url, email: 'ops@merchant.example', auth: { username: AUTH.username } });
const sandboxSubs = () => admin<SandboxSub[]>(sb, 'GET', '/subscriptions');
/** What another consumer would notice changing (the vetting counters are the service's own). */
const seen = (s: SandboxSub | undefined) => s && { guid: s.guid, event_type: s.event_type, url: s.url, email: s.email, active: s.active, auth: s.auth, updated_at: (s as { updated_at?: string }).updated_at };
const untouched = async (subs: SandboxSub[]) => {
  const now = await sandboxSubs();
  for (const s of subs) expect(seen(now.find((a) => a.guid === s.guid))).toEqual(seen(s));
};
const crmSubscribe = (event_type: string, base = crmBase, url = `${base}/hooks/crm-path-token-61?key=crm-query-key-27`) =>
  p.clients.events.createSubscription({
    email: 'crm-admin@merchant.example',
    url,
    event_type: event_type as never,
    auth: { username: 'crm-user', password: 'crm-password-88' },
  });
const ownRows = (store: Store) =>
  store.all<{ guid: string; origin: string; seen: boolean; deleted: boolean }>(
    'SELECT guid, origin, seen_active_at IS NOT NULL AS seen, deleted_at IS NOT NULL AS deleted FROM own_subscriptions ORDER BY guid',
  );

describe("the subscriptions reconcile beside a CRM's subscriptions", () => {
  let crm: SandboxSub[];

  it("creates its own beside the CRM's and never touches the CRM's: not updated, not deleted, reported as left alone", async () => {
    await crmSubscribe('chargeback.new');
    await crmSubscribe('rdr.new');
    // One the CRM could not get through vetting (nothing listens on port 9): inactive, and old after the clock moves.
    await crmSubscribe('prevention.new', 'http://127.0.0.1:9');
    // Credentials in the url, the password with a raw `@`: only 127.0.0.1:port is the host.
    await crmSubscribe('rdr.match', '', crmBase.replace('//', '//crm-user:pa@ss-CRMSECRET@') + '/hooks');
    crm = await sandboxSubs();
    expect(crm.map((s) => s.active).slice(0, 3)).toEqual([true, true, false]);
    expect(crm[3]!.url).toContain('@ss-CRMSECRET@127.0.0.1:');

    const r = await p.runner.reconcileSubscriptions(input());
    expect(r.created).toHaveLength(8);
    expect(r.created.every((c) => c.reason === 'missing')).toBe(true);
    expect(r).toMatchObject({ updated: [], deleted: [] });
    expect(r.leftAlone).toEqual(
      crm.map((s) => ({ guid: s.guid, event_type: s.event_type, url_host: new URL(s.url).host, active: s.active })),
    );
    expect(r.leftAlone[3]!.url_host).toBe(crmBase.replace('http://', ''));
    await untouched(crm);
    const after = await sandboxSubs();
    expect(after.filter((s) => s.url === receiver.url && s.active)).toHaveLength(8);

    // A day and more later the CRM's inactive one looks like failed vetting: still not cbp's to re-create.
    await admin(sb, 'POST', '/clock', { advance: 'P1DT2H' });
    const again = await p.runner.reconcileSubscriptions(input());
    expect(again).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8, failedVetting: [] });
    expect(again.leftAlone.map((f) => f.guid)).toEqual(crm.map((s) => s.guid));
    await untouched(crm);
  });

  it("keeps no part of the CRM's url path, e-mail or credentials in the activities' history, the run records or the store", async () => {
    const runs = await p.store.all<{ summary: string }>("SELECT summary::VARCHAR AS summary FROM runs WHERE workflow = 'reconcileSubscriptions'");
    expect(runs.length).toBeGreaterThanOrEqual(2);
    const everything = JSON.stringify([log, runs, await ownRows(p.store)]);
    for (const secret of [...CRM_SECRETS, AUTH.password]) expect(everything).not.toContain(secret);
    expect(runs.at(-1)!.summary).toContain(crm[0]!.guid);
    // The store holds cbp's own, and only those.
    const rows = await ownRows(p.store);
    expect(rows).toHaveLength(8);
    expect(rows.every((r) => r.origin === 'created' && r.seen && !r.deleted)).toBe(true);
    for (const s of crm) expect(rows.map((r) => r.guid)).not.toContain(s.guid);
  });

  it('moves its own subscriptions to a new receiver url with an update, rather than creating more', async () => {
    const before = (await sandboxSubs()).filter((s) => s.url === receiver.url).map((s) => s.guid).sort();
    const moved = receiver.url.replace('127.0.0.1', 'localhost');
    expect(moved).not.toBe(receiver.url);
    const r = await p.runner.reconcileSubscriptions(input(moved));
    expect(r).toMatchObject({ created: [], deleted: [] });
    expect(r.updated.map((u) => u.guid).sort()).toEqual(before);
    expect(r.updated.every((u) => u.fields.join() === 'url')).toBe(true);
    expect(r.leftAlone).toHaveLength(4);
    expect((await sandboxSubs()).filter((s) => before.includes(s.guid)).every((s) => s.url === moved)).toBe(true);
    // And back: still its own although now on neither url it is being told about.
    const back = await p.runner.reconcileSubscriptions(input());
    expect(back.updated.map((u) => u.guid).sort()).toEqual(before);
    expect(back).toMatchObject({ created: [], deleted: [] });
  });

  it('switches its own subscriptions back on with an update, however long they have been off', async () => {
    const mine = (await sandboxSubs()).filter((s) => s.url === receiver.url);
    const [a, b] = mine;
    await p.clients.events.updateSubscription(a!.guid, { active: false });
    await p.clients.events.updateSubscription(b!.guid, { active: false });
    // Past the vetting period: before, an inactive one this old was deleted and re-created.
    await admin(sb, 'POST', '/clock', { advance: 'P3D' });
    const r = await p.runner.reconcileSubscriptions(input());
    expect(r.updated).toHaveLength(2);
    expect(r.updated).toEqual(
      expect.arrayContaining([
        { event_type: a!.event_type, guid: a!.guid, fields: ['active'] },
        { event_type: b!.event_type, guid: b!.guid, fields: ['active'] },
      ]),
    );
    expect(r).toMatchObject({ created: [], deleted: [], failedVetting: [] });
    const now = await sandboxSubs();
    expect(now.filter((s) => s.url === receiver.url && s.active)).toHaveLength(8);
    expect(now.map((s) => s.guid).sort()).toEqual([...mine.map((s) => s.guid), ...crm.map((s) => s.guid)].sort());
  });

  it('adopts a subscription on its receiver url that it did not create, and deletes it as a duplicate of its own', async () => {
    const extra = await p.clients.events.createSubscription({
      email: 'ops@merchant.example', url: receiver.url, event_type: 'chargeback.dnf', auth: AUTH,
    });
    const r = await p.runner.reconcileSubscriptions(input());
    expect(r.deleted).toEqual([{ event_type: 'chargeback.dnf', guid: expect.any(String), reason: 'duplicate' }]);
    const rows = await ownRows(p.store);
    const gone = rows.find((x) => x.guid === r.deleted[0]!.guid)!;
    expect(gone).toMatchObject({ deleted: true });
    expect(rows.find((x) => x.guid === extra.guid)).toMatchObject({ origin: 'adopted' });
    await untouched(crm);
  });
});

describe('cbp run subscriptions reports what it left alone', { timeout: 120_000 }, () => {
  it('lists the other consumers\' subscriptions by guid, event type and url host, in the table and in --json', async () => {
    const cliDir = tempDir();
    const settings = {
      ...sandboxEnv(sb, cliDir),
      CBP_WEBHOOK_USERNAME: AUTH.username,
      CBP_WEBHOOK_PASSWORD: AUTH.password,
      CBP_WEBHOOK_PUBLIC_URL: receiver.url,
      CBP_SUBSCRIPTION_EMAIL: 'ops@merchant.example',
    };
    const crm = (await sandboxSubs()).filter((s) => s.email === 'crm-admin@merchant.example');
    const table = await cbp(['run', 'subscriptions'], settings);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/left alone \(not cbp's\)\s*\|?\s*4/);
    for (const s of crm) expect(table.stdout).toContain(s.guid);
    expect(table.stdout).toContain(new URL(crm[0]!.url).host);
    const json = await cbp(['run', 'subscriptions', '--json'], settings);
    expect(json.code).toBe(0);
    const r = JSON.parse(json.stdout) as { leftAlone: unknown[]; created: unknown[]; deleted: unknown[] };
    expect(r.leftAlone).toEqual(crm.map((s) => ({ guid: s.guid, event_type: s.event_type, url_host: new URL(s.url).host, active: s.active })));
    // A store of its own that never recorded the 8 on the receiver url: adopted, not duplicated.
    expect(r).toMatchObject({ created: [], deleted: [] });
    for (const out of [table.stdout, table.stderr, json.stdout, json.stderr]) for (const secret of [...CRM_SECRETS, AUTH.password]) expect(out).not.toContain(secret);
  });
});

describe('subscriptions the spec would not list, among the listed', () => {
  // Another consumer's, as a real service might list them (planted through the sandbox's admin API): an event
  // type cbp does not subscribe to with auth as a Basic string, one of no readable shape, one without a guid.
  const BASIC = 'Basic Y3JtOkNSTVNFQ1JFVA=='; // crm:CRMSECRET
  const at = '2026-01-01T00:00:00Z';
  const plant = (sub: Record<string, unknown>) => admin(sb, 'POST', '/subscriptions', sub);
  const recorded = async () => {
    const runs = await p.store.all<{ status: string; summary: string; error: string | null }>(
      "SELECT status, summary::VARCHAR AS summary, error FROM runs WHERE workflow = 'reconcileSubscriptions' ORDER BY started_at",
    );
    return { runs, text: JSON.stringify([log, runs, await ownRows(p.store)]) };
  };

  it("reads another consumer's only as far as guid, url, event type and active: one of a shape cbp does not know fails nothing, and none of its values is kept", async () => {
    await plant({ guid: 'sub_crm_odd_1', email: 'crm-admin@merchant.example', url: `${crmBase}/hooks/crm-path-token-61`, event_type: 'order_validation.new', active: true, created_at: at, updated_at: at, auth: BASIC });
    await plant({ guid: 'sub_crm_odd_2', url: 12, event_type: { note: 'CRMSECRET' }, active: 'yes', auth: { password: 'crm-password-88' } });
    await plant({ url: 'http://crm-user:crm-password-88@127.0.0.1:9/x', note: 'CRMSECRET' });
    const r = await p.runner.reconcileSubscriptions(input());
    expect(r).toMatchObject({ created: [], updated: [], deleted: [] });
    expect(r.leftAlone.slice(-3)).toEqual([
      { guid: 'sub_crm_odd_1', event_type: 'order_validation.new', url_host: new URL(crmBase).host, active: true },
      { guid: 'sub_crm_odd_2', event_type: '?', url_host: '?', active: false },
      { guid: '?', event_type: '?', url_host: '127.0.0.1:9', active: false },
    ]);
    const { runs, text } = await recorded();
    expect(runs.at(-1)).toMatchObject({ status: 'ok', error: null });
    for (const secret of [...CRM_SECRETS, 'Y3JtOkNSTVNFQ1JFVA', 'CRMSECRET', AUTH.password]) expect(text, secret).not.toContain(secret);
  });

  it("fails on one of cbp's own that does not match the spec, naming the item and field but never a value, and adopts nothing", async () => {
    const own = 'Basic Y2JwLWhvb2s6T1dOU0VDUkVU'; // cbp-hook:OWNSECRET
    await plant({ guid: 'sub_own_odd', email: 'ops@merchant.example', url: receiver.url, event_type: 'chargeback.new', active: true, created_at: at, updated_at: at, auth: own });
    const e = (await p.runner.reconcileSubscriptions(input()).catch((x: unknown) => x)) as Error & { code?: string };
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('CBP_ERR_SERVICE_RESPONSE');
    expect(e.message).toMatch(/item \d+ \(sub_own_odd\): auth: expected object \(got a string\)/);
    const { runs, text } = await recorded();
    expect(runs.at(-1)).toMatchObject({ status: 'failed' });
    expect(runs.at(-1)!.error).toContain('sub_own_odd');
    for (const secret of [own, 'Y2JwLWhvb2s6T1dOU0VDUkVU', 'OWNSECRET']) {
      expect(e.message, secret).not.toContain(secret);
      expect(text, secret).not.toContain(secret);
    }
    expect((await ownRows(p.store)).map((x) => x.guid)).not.toContain('sub_own_odd');
  });
});

describe('own_subscriptions in the store', () => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore({ dbPath: ':memory:' });
  });
  afterAll(() => store?.close());

  it('keeps the first record of a guid, the first time it was seen active, and when cbp deleted it', async () => {
    const t1 = new Date('2026-03-01T00:00:00Z');
    const t2 = new Date('2026-03-02T00:00:00Z');
    await recordOwnSubscriptions(store, [
      { guid: 'sub_a', event_type: 'rdr.new', origin: 'created' },
      { guid: 'sub_a', event_type: 'rdr.new', origin: 'created' },
      { guid: 'sub_b', event_type: 'rdr.match', origin: 'adopted', active: true },
    ], t1);
    await recordOwnSubscriptions(store, [{ guid: 'sub_a', event_type: 'rdr.new', origin: 'adopted', active: true }], t2);
    await markSubscriptionsSeenActive(store, ['sub_b'], t2);
    await markSubscriptionDeleted(store, 'sub_b', t2);
    const own = await ownSubscriptions(store);
    expect([...own.values()]).toEqual([
      { guid: 'sub_a', event_type: 'rdr.new', origin: 'created', recordedAt: '2026-03-01T00:00:00Z', seenActiveAt: '2026-03-02T00:00:00Z', deletedAt: null },
      { guid: 'sub_b', event_type: 'rdr.match', origin: 'adopted', recordedAt: '2026-03-01T00:00:00Z', seenActiveAt: '2026-03-01T00:00:00Z', deletedAt: '2026-03-02T00:00:00Z' },
    ]);
  });
});
