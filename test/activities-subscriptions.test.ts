// reconcileSubscriptions with the REAL activities against the sandbox: missing ones are created and vetted
// by a real receiver, changed ones updated, and a url that fails vetting is deleted and re-created once
// 25 h have passed on the SERVICE's clock (the sandbox's, read from its Date header).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import type { RunningReceiver } from '../webhook/index.ts';
import type { Pipeline } from '../cli/pipeline.ts';
import { admin, startWithReceiver, type WithReceiver } from './activities-fixtures.ts';

let sb: RunningSandbox;
let receiver: RunningReceiver;
let p: Pipeline;
let env: WithReceiver;
const AUTH = { username: 'cbp-hook', password: 'hook-password-9f3a' };

beforeAll(async () => {
  env = await startWithReceiver(AUTH);
  ({ sb, receiver, p } = env);
});
afterAll(async () => {
  await env?.close();
});

const input = (url = receiver.url, email = 'ops@merchant.example') => ({ webhookUrl: url, email, auth: AUTH });
const clock = async () => (await admin<{ now: string }>(sb, 'GET', '/clock')).now;

describe('reconcileSubscriptions with the real activities', () => {
  it('creates the 8 missing subscriptions, which the receiver passes through vetting', async () => {
    const r = await p.runner.reconcileSubscriptions(input());
    expect(r.created).toHaveLength(8);
    expect(r.created.every((c) => c.reason === 'missing')).toBe(true);
    expect(r.serviceTime).toBe(await clock());
    const subs = await p.activities.listSubscriptions();
    expect(subs.subscriptions.filter((s) => s.active)).toHaveLength(8);
    expect(subs.serviceTime).toBe(await clock());
    // Already right: nothing to do.
    const again = await p.runner.reconcileSubscriptions(input());
    expect(again).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
  });

  it('updates a changed subscription and re-creates a deleted one', async () => {
    const { subscriptions } = await p.activities.listSubscriptions();
    const [a, b] = subscriptions;
    await p.clients.events.updateSubscription(a!.guid, { email: 'someone-else@example.com' });
    await p.clients.events.deleteSubscription(b!.guid);
    const r = await p.runner.reconcileSubscriptions(input());
    expect(r.updated).toEqual([{ event_type: a!.event_type, guid: a!.guid, fields: ['email'] }]);
    expect(r.created).toEqual([expect.objectContaining({ event_type: b!.event_type, reason: 'missing' })]);
    expect(r.unchanged).toBe(6);
  });

  it('deletes and re-creates subscriptions that failed vetting, once 25 h have passed on the service clock', async () => {
    await admin(sb, 'POST', '/reset');
    const bad = 'http://127.0.0.1:9/nothing-listens-here';
    const first = await p.runner.reconcileSubscriptions(input(bad));
    expect(first.created).toHaveLength(8);
    expect((await p.activities.listSubscriptions()).subscriptions.filter((s) => s.active)).toHaveLength(0);

    const young = await p.runner.reconcileSubscriptions(input(bad));
    expect(young.pendingVetting).toHaveLength(8);
    expect(young.deleted).toEqual([]);
    expect(young.created).toEqual([]);

    await admin(sb, 'POST', '/clock', { advance: 'P1DT2H' });
    const old = await p.runner.reconcileSubscriptions(input(bad));
    expect(old.serviceTime).toBe(await clock());
    expect(old.failedVetting).toHaveLength(8);
    expect(old.deleted).toHaveLength(8);
    expect(old.deleted.every((d) => d.reason === 'failed_vetting')).toBe(true);
    expect(old.created).toHaveLength(8);
    expect(old.created.every((c) => c.reason === 'failed_vetting')).toBe(true);
    const now = (await p.activities.listSubscriptions()).subscriptions;
    expect(now).toHaveLength(8);
    expect(new Set(now.map((s) => s.guid))).not.toContain(first.created[0]!.guid);
  });

  it('records each run without the webhook password', async () => {
    const rows = await p.store.all<{ workflow: string; summary: string }>("SELECT workflow, summary::VARCHAR AS summary FROM runs WHERE workflow = 'reconcileSubscriptions'");
    expect(rows.length).toBeGreaterThanOrEqual(5);
    for (const r of rows) expect(r.summary).not.toContain(AUTH.password);
  });
});
