import { describe, expect, it } from 'vitest';
import type { SubscriptionView } from '../activities/types.ts';
import { SUBSCRIBABLE_EVENT_TYPES, type SubscribableEventType } from '../contract/index.ts';
import { reconcileSubscriptions, type ReconcileInput } from '../workflows/reconcile.ts';
import { authDiffers, checkWebhookUrl, planSubscriptions } from '../workflows/subscriptions.ts';
import { isLoopbackHost, urlHost } from '../lib/urls.ts';
import { callsOf, createFakes } from './workflows-fakes.ts';

const URL_OK = 'https://hooks.merchant.example/cbp/events';
// The workflow knows the username only; the activities hold the password and report password_matches.
const AUTH = { username: 'cbp' };
const DESIRED: ReconcileInput = { webhookUrl: URL_OK, email: 'ops@merchant.example', auth: AUTH };
const NOW = '2026-03-15T12:00:00Z';

let seq = 0;
function sub(event_type: SubscribableEventType, over: Partial<SubscriptionView> = {}): SubscriptionView {
  seq += 1;
  return {
    guid: `sub_${String(seq).padStart(32, '0')}`,
    email: 'ops@merchant.example',
    url: URL_OK,
    event_type,
    active: true,
    created_at: '2026-01-01T00:00:00Z',
    updated_at: '2026-01-01T00:05:00Z',
    auth: { ...AUTH, password_matches: true },
    ...over,
  };
}
const allCorrect = () => SUBSCRIBABLE_EVENT_TYPES.map((t) => sub(t));
const changes = (names: string[]) => (c: { name: string }) => names.includes(c.name);
const WRITES = ['createSubscription', 'updateSubscription', 'deleteSubscription'];

describe('reconcileSubscriptions', () => {
  it('creates a subscription for each of the 8 event types when none exist', async () => {
    const { acts, state } = createFakes({ serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(callsOf(state, 'createSubscription').map(([req]) => (req as { event_type: string }).event_type)).toEqual([...SUBSCRIBABLE_EVENT_TYPES]);
    expect(callsOf(state, 'createSubscription')[0]![0]).toEqual({ email: DESIRED.email, url: URL_OK, event_type: 'chargeback.new', auth: AUTH });
    expect(r.created).toHaveLength(8);
    expect(r.created.every((c) => c.reason === 'missing')).toBe(true);
  });

  it('makes no change at all when everything already matches', async () => {
    const { acts, state } = createFakes({ subscriptions: allCorrect(), serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES))).toEqual([]);
    expect(r).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
  });

  it('creates only what is missing', async () => {
    const subs = allCorrect().filter((s) => s.event_type !== 'rdr.match' && s.event_type !== 'chargeback.dnf');
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(r.created.map((c) => c.event_type).sort()).toEqual(['chargeback.dnf', 'rdr.match']);
    expect(state.calls.filter(changes(['updateSubscription', 'deleteSubscription']))).toEqual([]);
  });

  it('updates a changed url, e-mail, credentials or active flag with only the changed fields', async () => {
    const subs = allCorrect();
    subs[0]!.url = 'https://old.merchant.example/events';
    subs[0]!.cbp_own = true; // cbp created it, for its earlier receiver url
    subs[1]!.email = 'someone@else.example';
    subs[2]!.auth = { username: 'cbp', password_matches: false };
    subs[3]!.active = false;
    subs[3]!.updated_at = '2026-02-01T00:00:00Z'; // vetted long ago (cbp saw it active), then switched off
    Object.assign(subs[3]!, { cbp_own: true, cbp_seen_active: true });
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    const updates = callsOf(state, 'updateSubscription');
    expect(updates).toContainEqual([subs[0]!.guid, { url: URL_OK }]);
    expect(updates).toContainEqual([subs[1]!.guid, { email: DESIRED.email }]);
    expect(updates).toContainEqual([subs[2]!.guid, { auth: AUTH }]);
    expect(updates).toContainEqual([subs[3]!.guid, { active: true }]);
    expect(r.updated.map((u) => u.fields)).toEqual([['url'], ['email'], ['auth'], ['active']]);
    expect(r).toMatchObject({ created: [], deleted: [], leftAlone: [] });
  });

  it('deletes and re-creates an old inactive subscription of its own it never saw active (it cannot be told from failed vetting)', async () => {
    const subs = allCorrect();
    subs[3]!.active = false;
    subs[3]!.updated_at = '2026-02-01T00:00:00Z';
    const { acts } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(r.deleted).toEqual([{ event_type: subs[3]!.event_type, guid: subs[3]!.guid, reason: 'failed_vetting' }]);
    expect(r.created).toMatchObject([{ event_type: subs[3]!.event_type, reason: 'failed_vetting' }]);
  });

  it('compares e-mail without case and accepts a list that shows no password', async () => {
    const subs = allCorrect().map((s) => ({ ...s, email: 'OPS@Merchant.example', auth: { username: 'cbp' } }));
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES))).toEqual([]);
  });

  it('re-sends credentials everywhere when asked to (the list may hide a stale password)', async () => {
    const subs = allCorrect().map((s) => ({ ...s, auth: { username: 'cbp' } }));
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    await reconcileSubscriptions({ ...DESIRED, forceAuth: true }, acts);
    expect(callsOf(state, 'updateSubscription')).toHaveLength(8);
    expect(callsOf(state, 'updateSubscription')[0]![1]).toEqual({ auth: AUTH });
  });

  it('deletes and re-creates a subscription still inactive after the vetting period, and records it', async () => {
    const subs = allCorrect();
    const failed = (subs[4] = sub(subs[4]!.event_type, { active: false, created_at: '2026-03-14T10:00:00Z', updated_at: '2026-03-14T10:00:00Z' }));
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW }); // 26 h later by the service's clock
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES)).map((c) => c.name)).toEqual(['deleteSubscription', 'createSubscription']);
    expect(callsOf(state, 'deleteSubscription')).toEqual([[failed.guid]]);
    expect(r.failedVetting).toEqual([{ guid: failed.guid, event_type: failed.event_type, created_at: failed.created_at, ageHours: 26 }]);
    expect(r.created).toMatchObject([{ event_type: failed.event_type, reason: 'failed_vetting' }]);
    expect(state.runs[0]!.summary).toMatchObject({ failedVetting: [{ guid: failed.guid }] });
  });

  it('leaves a subscription alone while the service is still vetting it', async () => {
    const subs = allCorrect();
    subs[4] = sub(subs[4]!.event_type, { active: false, created_at: '2026-03-15T01:00:00Z', updated_at: '2026-03-15T01:00:00Z' });
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW }); // 11 h old
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES))).toEqual([]);
    expect(r.pendingVetting).toMatchObject([{ guid: subs[4]!.guid, ageHours: 11 }]);
  });

  it('judges vetting age by the service clock, not its own', async () => {
    const subs = allCorrect();
    subs[0] = sub('chargeback.new', { active: false, created_at: '2026-03-15T01:00:00Z' });
    // Our clock says days later; the service says one hour later: still vetting.
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: '2026-03-15T02:00:00Z', now: '2026-03-20T00:00:00Z' });
    await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES))).toEqual([]);
  });

  it('re-creates a subscription being vetted at a wrong url', async () => {
    const subs = allCorrect();
    subs[0] = sub('chargeback.new', { active: false, url: 'https://old.example/events', created_at: '2026-03-15T10:00:00Z', cbp_own: true });
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES)).map((c) => c.name)).toEqual(['deleteSubscription', 'createSubscription']);
    expect(r.deleted[0]!.reason).toBe('vetting_target_changed');
  });

  it('deletes duplicates among its own, keeping the active one on the desired url', async () => {
    const subs = allCorrect();
    const keep = subs[0]!;
    const dupOld = sub('chargeback.new', { url: 'https://old.example/events', created_at: '2025-06-01T00:00:00Z', cbp_own: true });
    const dupInactive = sub('chargeback.new', { active: false, created_at: '2026-03-15T11:00:00Z' });
    const { acts, state } = createFakes({ subscriptions: [dupOld, ...subs, dupInactive], serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(callsOf(state, 'deleteSubscription').map(([g]) => g).sort()).toEqual([dupOld.guid, dupInactive.guid].sort());
    expect(r.deleted.every((d) => d.reason === 'duplicate')).toBe(true);
    expect(state.subscriptions.filter((s) => s.event_type === 'chargeback.new').map((s) => s.guid)).toEqual([keep.guid]);
    expect(callsOf(state, 'createSubscription')).toHaveLength(0);
  });

  it('switches subscriptions off when the desired state is inactive', async () => {
    const { acts, state } = createFakes({ subscriptions: allCorrect(), serviceTime: NOW });
    await reconcileSubscriptions({ ...DESIRED, active: false }, acts);
    expect(callsOf(state, 'updateSubscription')).toHaveLength(8);
    expect(callsOf(state, 'updateSubscription')[0]![1]).toEqual({ active: false });
  });

  it('reaches a fixed point: a second run changes nothing', async () => {
    const subs = allCorrect();
    Object.assign(subs[0]!, { url: 'https://old.example/events', cbp_own: true });
    const dup = sub('rdr.new', { url: 'https://old.example/events', cbp_own: true });
    const { acts, state } = createFakes({ subscriptions: [...subs.slice(0, 6), dup], serviceTime: NOW });
    await reconcileSubscriptions(DESIRED, acts);
    const before = state.calls.length;
    // the created ones are young and inactive: being vetted, so left alone
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.slice(before).filter(changes(WRITES))).toEqual([]);
    expect(r.pendingVetting.length).toBe(1);
  });

  it('refuses a webhook url that is not https before calling the service', async () => {
    const { acts, state } = createFakes();
    await expect(reconcileSubscriptions({ ...DESIRED, webhookUrl: 'http://hooks.merchant.example/events' }, acts)).rejects.toMatchObject({
      code: 'CBP_ERR_INSECURE_WEBHOOK_URL',
    });
    await expect(reconcileSubscriptions({ ...DESIRED, webhookUrl: 'ftp://hooks.merchant.example/events' }, acts)).rejects.toMatchObject({
      code: 'CBP_ERR_INSECURE_WEBHOOK_URL',
    });
    await expect(reconcileSubscriptions({ ...DESIRED, webhookUrl: 'not a url' }, acts)).rejects.toMatchObject({ code: 'CBP_ERR_WORKFLOW_INPUT' });
    expect(state.calls).toEqual([]);
  });

  it('allows plain http to a loopback address (the local sandbox)', async () => {
    const { acts, state } = createFakes({ serviceTime: NOW });
    await reconcileSubscriptions({ ...DESIRED, webhookUrl: 'http://127.0.0.1:8787/events' }, acts);
    expect(callsOf(state, 'createSubscription')).toHaveLength(8);
    for (const u of ['http://localhost:3000/x', 'http://[::1]:8080/events', 'http://127.1.2.3/e', 'HTTP://LOCALHOST/e']) expect(() => checkWebhookUrl(u)).not.toThrow();
    for (const u of ['http://127.0.0.1.evil.example/e', 'http://localhost.evil.example/', 'http://10.0.0.1/e', 'http://user@evil.example/127.0.0.1',
      // Where a hand-written pattern read 127.0.0.1 as the host: the request goes to evil.example.
      'http://evil.example\\@127.0.0.1/e']) {
      expect(() => checkWebhookUrl(u), u).toThrow();
    }
    expect(isLoopbackHost('[0:0:0:0:0:0:0:1]')).toBe(true);
  });

  it('updates the credentials of a subscription whose listed password differs, and leaves a matching one alone', async () => {
    const subs = allCorrect();
    subs[2]!.auth = { username: 'cbp', password_matches: false };
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(callsOf(state, 'updateSubscription')).toEqual([[subs[2]!.guid, { auth: { username: 'cbp' } }]]);
    expect(r.updated).toEqual([{ event_type: subs[2]!.event_type, guid: subs[2]!.guid, fields: ['auth'] }]);
    expect(r.unchanged).toBe(7);
  });

  it('re-creates a subscription still in vetting whose listed password differs (vetting pushes with the old one)', async () => {
    const subs = allCorrect();
    subs[5] = sub(subs[5]!.event_type, { active: false, created_at: '2026-03-15T11:00:00Z', auth: { username: 'cbp', password_matches: false } });
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(r.deleted).toEqual([{ event_type: subs[5]!.event_type, guid: subs[5]!.guid, reason: 'vetting_target_changed' }]);
    expect(callsOf(state, 'createSubscription')).toEqual([[{ email: DESIRED.email, url: URL_OK, event_type: subs[5]!.event_type, auth: { username: 'cbp' } }]]);
  });

  it('refuses an input that carries a password, naming CBP_WEBHOOK_PASSWORD and not echoing the value', async () => {
    const { acts, state } = createFakes({ serviceTime: NOW });
    const err = await reconcileSubscriptions({ ...DESIRED, auth: { username: 'cbp', password: 'caller-pw-31' } } as never, acts).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'CBP_ERR_WORKFLOW_INPUT', message: expect.stringContaining('CBP_WEBHOOK_PASSWORD') });
    expect(JSON.stringify({ m: (err as Error).message, s: (err as Error).stack })).not.toContain('caller-pw-31');
    expect(state.calls).toEqual([]);
  });

  it('refuses an input without a username', async () => {
    const { acts } = createFakes({ serviceTime: NOW });
    await expect(reconcileSubscriptions({ ...DESIRED, auth: {} } as never, acts)).rejects.toMatchObject({ code: 'CBP_ERR_WORKFLOW_INPUT' });
  });
});

describe('reconcileSubscriptions beside other consumers of the account', () => {
  // A merchant's CRM holds its own subscriptions: its url path carries a token, its e-mail and credentials are its own.
  const CRM_URL = 'https://User:tok@CRM.Merchant.example:8443/hooks/secret-path-77?key=crm-key-42';
  const crm = (event_type: SubscribableEventType, over: Partial<SubscriptionView> = {}) =>
    sub(event_type, { url: CRM_URL, email: 'crm-admin@merchant.example', auth: { username: 'crm-user', password_matches: false }, ...over });

  it('never updates or deletes another consumer\'s subscription, and creates its own beside it', async () => {
    const own = allCorrect().filter((s) => s.event_type !== 'rdr.new');
    // Different url, e-mail and credentials; inactive and old; two of one type: none of it is cbp's business.
    const foreign = [crm('rdr.new'), crm('chargeback.new'), crm('chargeback.new', { active: false, created_at: '2025-01-01T00:00:00Z' })];
    const { acts, state } = createFakes({ subscriptions: [...foreign, ...own], serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    const touched = state.calls.filter(changes(['updateSubscription', 'deleteSubscription'])).map((c) => c.args[0]);
    for (const f of foreign) expect(touched).not.toContain(f.guid);
    expect(r.created).toMatchObject([{ event_type: 'rdr.new', reason: 'missing' }]);
    expect(r).toMatchObject({ updated: [], deleted: [], unchanged: 7 });
    expect(r.leftAlone).toEqual(foreign.map((f) => ({ guid: f.guid, event_type: f.event_type, url_host: 'crm.merchant.example:8443', active: f.active })));
    // The report and the run record hold the guid, type and host only: no path, token, e-mail or credentials.
    const recorded = JSON.stringify([r, state.runs, state.calls.filter((c) => c.name !== 'listSubscriptions')]);
    for (const secret of ['secret-path-77', 'crm-key-42', 'tok', 'crm-admin', 'crm-user']) expect(recorded).not.toContain(secret);
    expect(state.runs[0]!.summary).toMatchObject({ leftAlone: r.leftAlone });
  });

  it('deletes duplicates only among its own: another consumer\'s subscription of the same type is none', async () => {
    const own = allCorrect();
    const foreignSameType = crm('chargeback.new', { created_at: '2026-03-01T00:00:00Z' });
    const { acts, state } = createFakes({ subscriptions: [...own, foreignSameType], serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.filter(changes(WRITES))).toEqual([]);
    expect(r.leftAlone.map((f) => f.guid)).toEqual([foreignSameType.guid]);
  });

  it('keeps as its own a subscription it created for its earlier receiver url, and moves it to the new url', async () => {
    const subs = allCorrect().map((s) => ({ ...s, url: 'https://old-host.merchant.example/cbp/events', cbp_own: true as const }));
    const { acts, state } = createFakes({ subscriptions: [...subs, crm('rdr.new')], serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(callsOf(state, 'updateSubscription')).toEqual(subs.map((s) => [s.guid, { url: URL_OK }]));
    expect(r).toMatchObject({ created: [], deleted: [] });
    expect(r.leftAlone).toHaveLength(1);
    // Fixed point: nothing left to do.
    const from = state.calls.length;
    await reconcileSubscriptions(DESIRED, acts);
    expect(state.calls.slice(from).filter(changes(WRITES))).toEqual([]);
  });

  it('plans from a list that did not sort out ownership: only those on its url or recorded as its own are its own', () => {
    const mine = sub('rdr.new');
    const recorded = sub('chargeback.new', { url: 'https://old.example/e', cbp_own: true });
    const stranger = crm('chargeback.new');
    const plan = planSubscriptions(
      { url: URL_OK, email: 'ops@merchant.example', auth: AUTH, active: true, eventTypes: ['chargeback.new', 'rdr.new'] },
      [stranger, recorded, mine],
      { serviceNow: NOW, vettingGraceHours: 25 },
      [{ guid: 'sub_listed_as_other', event_type: 'rdr.new', url_host: 'x.example', active: true }],
    );
    expect(plan.actions).toEqual([{ op: 'update', guid: recorded.guid, event_type: 'chargeback.new', fields: ['url'] }]);
    expect(plan.leftAlone).toEqual([
      { guid: 'sub_listed_as_other', event_type: 'rdr.new', url_host: 'x.example', active: true },
      { guid: stranger.guid, event_type: 'chargeback.new', url_host: 'crm.merchant.example:8443', active: true },
    ]);
  });

  it('reads only the host of a url', () => {
    expect(urlHost('https://a:b@Hooks.Example/x?y#z')).toBe('hooks.example');
    expect(urlHost('https://hooks.example:444/x')).toBe('hooks.example:444');
    expect(urlHost('http://[::1]:8080/events')).toBe('[::1]:8080');
    expect(urlHost('not a url')).toBe('?');
    expect(urlHost('mailto:crm@merchant.example')).toBe('?');
  });

  it('reads the host after the last @: a raw @ in the password stays in the user info (WHATWG URL)', () => {
    expect(urlHost('http://crm-user:pa@ss-CRMSECRET@127.0.0.1:45197/hooks')).toBe('127.0.0.1:45197');
    expect(urlHost('https://u@x:p@w@d@Crm.Example/a@b?c=@d')).toBe('crm.example');
  });
});

describe('reconcileSubscriptions re-activating its own subscriptions', () => {
  it('switches back on with an update one that passed vetting and was switched off, however recently', async () => {
    const subs = allCorrect();
    // Seen active by cbp, then deactivated (an hour after creation, or long ago): no waiting, no re-creating.
    subs[1] = sub(subs[1]!.event_type, { active: false, created_at: '2026-03-15T11:00:00Z', cbp_own: true, cbp_seen_active: true });
    subs[2] = sub(subs[2]!.event_type, { active: false, created_at: '2025-01-01T00:00:00Z', cbp_own: true, cbp_seen_active: true });
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(callsOf(state, 'updateSubscription')).toEqual([
      [subs[1]!.guid, { active: true }],
      [subs[2]!.guid, { active: true }],
    ]);
    expect(r).toMatchObject({ created: [], deleted: [], pendingVetting: [], failedVetting: [] });
    expect(state.subscriptions.every((s) => s.active)).toBe(true);
  });

  it('sends the other changed fields in the same update', async () => {
    const subs = allCorrect();
    subs[0] = sub('chargeback.new', { active: false, url: 'https://old.example/e', email: 'old@merchant.example', cbp_own: true, cbp_seen_active: true });
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    const r = await reconcileSubscriptions(DESIRED, acts);
    expect(callsOf(state, 'updateSubscription')).toEqual([[subs[0]!.guid, { url: URL_OK, email: DESIRED.email, active: true }]]);
    expect(r.updated).toEqual([{ event_type: 'chargeback.new', guid: subs[0]!.guid, fields: ['url', 'email', 'active'] }]);
  });

  for (const temporal of [false, true]) {
    it(`deletes and re-creates one the service refuses to switch back on${temporal ? ' (the refusal as Temporal delivers it)' : ''}`, async () => {
      const subs = allCorrect();
      subs[4] = sub(subs[4]!.event_type, { active: false, cbp_own: true, cbp_seen_active: true });
      const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW, refuseActivation: [subs[4]!.guid], refusalAsTemporalFailure: temporal });
      const r = await reconcileSubscriptions(DESIRED, acts);
      expect(state.calls.filter(changes(WRITES)).map((c) => c.name)).toEqual(['updateSubscription', 'deleteSubscription', 'createSubscription']);
      expect(r.deleted).toEqual([{ event_type: subs[4]!.event_type, guid: subs[4]!.guid, reason: 'activation_refused' }]);
      expect(r.created).toMatchObject([{ event_type: subs[4]!.event_type, reason: 'activation_refused' }]);
      expect(r.updated).toEqual([]);
    });
  }

  it('fails the run on a refused update that was not a re-activation', async () => {
    const subs = allCorrect();
    subs[4]!.email = 'old@merchant.example';
    const { acts, state } = createFakes({ subscriptions: subs, serviceTime: NOW });
    acts.updateSubscription = async () => {
      throw Object.assign(new Error('events update subscription: 400 bad e-mail'), { code: 'CBP_ERR_SERVICE_BAD_REQUEST', retryable: false });
    };
    await expect(reconcileSubscriptions(DESIRED, acts)).rejects.toMatchObject({ code: 'CBP_ERR_SERVICE_BAD_REQUEST' });
    expect(state.calls.filter(changes(['deleteSubscription', 'createSubscription']))).toEqual([]);
  });
});

describe('planSubscriptions', () => {
  it('orders deletes before creates before updates', () => {
    const subs = [
      sub('chargeback.new', { url: 'https://old.example/e', cbp_own: true }),
      sub('chargeback.new', { active: false, created_at: '2026-03-15T11:00:00Z' }),
      sub('prevention.new', { active: false, created_at: '2026-03-01T00:00:00Z' }),
    ];
    const plan = planSubscriptions(
      { url: URL_OK, email: 'ops@merchant.example', auth: AUTH, active: true, eventTypes: ['chargeback.new', 'prevention.new', 'rdr.new'] },
      subs,
      { serviceNow: NOW, vettingGraceHours: 25 },
    );
    expect(plan.actions.map((a) => `${a.op}:${a.event_type}`)).toEqual([
      'delete:chargeback.new',
      'delete:prevention.new',
      'create:prevention.new',
      'create:rdr.new',
      'update:chargeback.new',
    ]);
  });

  it('treats an unreadable creation time as past the vetting period', () => {
    const plan = planSubscriptions(
      { url: URL_OK, email: 'ops@merchant.example', auth: AUTH, active: true, eventTypes: ['rdr.new'] },
      [sub('rdr.new', { active: false, created_at: 'garbage' })],
      { serviceNow: NOW, vettingGraceHours: 25 },
    );
    expect(plan.failedVetting).toHaveLength(1);
  });

  it('compares credentials only as far as the list shows them', () => {
    expect(authDiffers(undefined, AUTH)).toBe(false);
    expect(authDiffers({ username: 'cbp' } as never, AUTH)).toBe(false);
    expect(authDiffers({ username: 'other' }, AUTH)).toBe(true);
    expect(authDiffers({ username: 'cbp', password_matches: true }, AUTH)).toBe(false);
    expect(authDiffers({ username: 'cbp', password_matches: false }, AUTH)).toBe(true);
    expect(authDiffers({ password_matches: false }, AUTH)).toBe(true);
  });
});
