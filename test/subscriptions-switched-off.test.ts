// A subscription cbp created and its receiver vetted, then switched off at the service before any list showed it
// active (the demo watches vetting through the sandbox, not through cbp): the next reconcile switches it back on at
// once. The receiver stored its vetting delivery (registration.new), so cbp knows it passed vetting.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, startWithReceiver, type WithReceiver } from './activities-fixtures.ts';

const AUTH = { username: 'cbp-hook', password: 'hook-password-off-9f3a' };
let env: WithReceiver;

beforeAll(async () => {
  env = await startWithReceiver(AUTH);
});
afterAll(async () => {
  await env?.close();
});

describe('a subscription cbp saw vetted and now finds switched off', () => {
  it('is switched back on by the next reconcile, not called pending vetting', async () => {
    const { p, receiver, sb } = env;
    const input = { webhookUrl: receiver.url, email: 'ops@merchant.example', auth: { username: AUTH.username } };
    const first = await p.runner.reconcileSubscriptions(input);
    expect(first.created).toHaveLength(8);
    const listed = await admin<Array<{ guid: string; active: boolean }>>(sb, 'GET', '/subscriptions');
    expect(listed.filter((s) => s.active)).toHaveLength(8);
    // Switched off at the service an hour later; cbp never listed it active meanwhile.
    const off = first.created[0]!;
    await admin(sb, 'POST', '/clock', { advance: 'PT1H' });
    await p.clients.events.updateSubscription(off.guid!, { active: false });
    await receiver.close(); // seals the journal's segment, which holds the vetting deliveries
    expect((await p.runner.ingestEvents({})).failed).toBe(0);

    const r = await p.runner.reconcileSubscriptions(input);
    expect(r.pendingVetting).toEqual([]);
    expect(r.created).toEqual([]);
    expect(r.deleted).toEqual([]);
    expect(r.updated).toEqual([{ event_type: off.event_type, guid: off.guid, fields: ['active'] }]);
    const after = await admin<Array<{ guid: string; active: boolean }>>(sb, 'GET', '/subscriptions');
    expect(after.find((s) => s.guid === off.guid)?.active).toBe(true);
  });
});
