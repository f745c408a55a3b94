// reconcileSubscriptions with the REAL activities against the sandbox: missing ones are created and vetted
// by a real receiver, changed ones updated, and a url that fails vetting is deleted and re-created once
// 25 h have passed on the SERVICE's clock (the sandbox's, read from its Date header). The webhook password
// stays inside the activities: every workflow input, activity input and activity result is recorded (as
// Temporal's history would) and checked for it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningSandbox } from '../sandbox/index.ts';
import type { RunningReceiver } from '../webhook/index.ts';
import type { Pipeline } from '../cli/pipeline.ts';
import type { Activities } from '../activities/types.ts';
import { createActivities, subscriptionView } from '../activities/index.ts';
import type { Config } from '../lib/config.ts';
import { ConfigError } from '../lib/errors.ts';
import { toActivityFailure } from '../worker/activity-errors.ts';
import type { ReconcileInput } from '../workflows/reconcile.ts';
import { admin, configFor, pipelineFor, rmrf, startWithReceiver, tempDir, type WithReceiver } from './activities-fixtures.ts';

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

const input = (url = receiver.url, email = 'ops@merchant.example'): ReconcileInput => ({ webhookUrl: url, email, auth: { username: AUTH.username } });
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

// --- the password stays in the activities ------------------------------------------------------------------

/** What Temporal would record: every activity's input and its result (or error), in call order. */
type Recorded = { activity: string; input?: unknown[]; result?: unknown; error?: string };

function recording(log: Recorded[]): (a: Activities) => Activities {
  return (a) => {
    const out: Record<string, unknown> = {};
    for (const [name, fn] of Object.entries(a)) {
      out[name] = async (...args: unknown[]) => {
        log.push({ activity: name, input: structuredClone(args) });
        try {
          const r = await (fn as (...x: unknown[]) => Promise<unknown>).apply(a, args);
          log.push({ activity: name, result: r === undefined ? null : structuredClone(r) });
          return r;
        } catch (e) {
          log.push({ activity: name, error: String((e as Error)?.message) + String((e as Error)?.stack) });
          throw e;
        }
      };
    }
    return out as unknown as Activities;
  };
}

type SandboxSub = { guid: string; event_type: string; active: boolean; auth: { username: string; password: string } };

describe('the webhook password under orchestration', () => {
  let rec: Pipeline;
  let cfg: Config;
  // A store of its own: the pipeline above holds the other one open.
  const dir = tempDir();
  const log: Recorded[] = [];
  const workflowInputs: ReconcileInput[] = [];
  const reconcile = async (i: ReconcileInput) => {
    workflowInputs.push(structuredClone(i));
    return rec.runner.reconcileSubscriptions(i);
  };

  beforeAll(async () => {
    await admin(sb, 'POST', '/reset');
    cfg = configFor(sb, dir, { ...AUTH, url: receiver.url });
    rec = await pipelineFor(cfg, { wrap: recording(log) });
  });
  afterAll(async () => {
    await rec?.close();
    rmrf(dir);
  });

  it('creates subscriptions with the configured password while no input or result of the run carries it', async () => {
    const r = await reconcile(input());
    expect(r.created).toHaveLength(8);
    // The sandbox vets each one by pushing with its credentials to the receiver, which only accepts AUTH.
    const subs = await admin<SandboxSub[]>(sb, 'GET', '/subscriptions');
    expect(subs).toHaveLength(8);
    for (const s of subs) expect(s).toMatchObject({ active: true, auth: { username: AUTH.username, password: AUTH.password } });

    const again = await reconcile(input());
    expect(again).toMatchObject({ created: [], updated: [], deleted: [], unchanged: 8 });
    // The list activity compared the password itself and said only whether it matches.
    const listed = log.filter((l) => l.activity === 'listSubscriptions' && l.result).at(-1)!.result as { subscriptions: Array<{ auth?: unknown }> };
    expect(listed.subscriptions.map((s) => s.auth)).toEqual(Array(8).fill({ username: AUTH.username, password_matches: true }));

    expect(log.some((l) => l.activity === 'createSubscription')).toBe(true);
    expect(JSON.stringify(workflowInputs)).not.toContain(AUTH.password);
    expect(JSON.stringify(log)).not.toContain(AUTH.password);
    expect(JSON.stringify([r, again])).not.toContain(AUTH.password);
  });

  it('updates the credentials of a subscription whose password differs (rotation) and leaves the matching ones alone', async () => {
    const subs = await admin<SandboxSub[]>(sb, 'GET', '/subscriptions');
    const stale = subs[3]!;
    await rec.clients.events.updateSubscription(stale.guid, { auth: { username: AUTH.username, password: 'the-old-password-1' } });
    const from = log.length;

    const r = await reconcile(input());
    expect(r.updated).toEqual([{ event_type: stale.event_type, guid: stale.guid, fields: ['auth'] }]);
    expect(r).toMatchObject({ created: [], deleted: [], unchanged: 7 });
    const updates = log.slice(from).filter((l) => l.activity === 'updateSubscription' && l.input);
    expect(updates.map((l) => l.input)).toEqual([[stale.guid, { auth: { username: AUTH.username } }]]);

    const after = await admin<SandboxSub[]>(sb, 'GET', '/subscriptions');
    for (const s of after) expect(s.auth).toEqual({ username: AUTH.username, password: AUTH.password });
    const listed = log.slice(from).find((l) => l.activity === 'listSubscriptions' && l.result)!.result as { subscriptions: Array<{ guid: string; auth?: { password_matches?: boolean } }> };
    expect(listed.subscriptions.filter((s) => s.auth?.password_matches === false).map((s) => s.guid)).toEqual([stale.guid]);
    // Neither password, old or new, was recorded.
    expect(JSON.stringify(log)).not.toContain(AUTH.password);
    expect(JSON.stringify(log)).not.toContain('the-old-password-1');
  });

  it('re-sends the credentials everywhere with forceAuth, still without the password in any recorded input', async () => {
    const from = log.length;
    const r = await reconcile({ ...input(), forceAuth: true });
    expect(r.updated).toHaveLength(8);
    expect(JSON.stringify(log.slice(from))).not.toContain(AUTH.password);
  });

  describe('without CBP_WEBHOOK_PASSWORD', () => {
    const unset = (): Activities => createActivities({ config: { ...cfg, webhookPassword: undefined } as Config, store: rec.store, clients: rec.clients });
    const isConfigError = (e: unknown) => {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).message).toContain('CBP_WEBHOOK_PASSWORD');
      expect((e as ConfigError).retryable).toBe(false);
      // What the worker hands Temporal: typed by the code, never retried.
      expect(toActivityFailure(e)).toMatchObject({ type: 'CBP_ERR_CONFIG', nonRetryable: true });
    };

    it('refuses to create a subscription, naming the setting, before calling the service', async () => {
      const before = (await admin<SandboxSub[]>(sb, 'GET', '/subscriptions')).length;
      const e = await unset()
        .createSubscription({ email: 'ops@merchant.example', url: receiver.url, event_type: 'rdr.new', auth: { username: AUTH.username } })
        .catch((x: unknown) => x);
      isConfigError(e);
      expect((await admin<SandboxSub[]>(sb, 'GET', '/subscriptions')).length).toBe(before);
    });

    it('refuses to send credentials in an update, and to judge listed passwords it cannot compare', async () => {
      const acts = unset();
      const [first] = await admin<SandboxSub[]>(sb, 'GET', '/subscriptions');
      isConfigError(await acts.updateSubscription(first!.guid, { auth: { username: AUTH.username } }).catch((x: unknown) => x));
      isConfigError(await acts.listSubscriptions().catch((x: unknown) => x));
      // An update that sends no credentials needs no password.
      await expect(acts.updateSubscription(first!.guid, { email: 'ops@merchant.example' })).resolves.toMatchObject({ guid: first!.guid, auth: { username: AUTH.username } });
    });

    it('fails the reconcile run with the ConfigError', async () => {
      const { createLocalRunner } = await import('../worker/local.ts');
      isConfigError(await createLocalRunner(unset()).reconcileSubscriptions(input()).catch((x: unknown) => x));
    });
  });
});

describe('subscriptionView', () => {
  const base = {
    guid: 'sub_1', email: 'a@b.example', url: 'https://h.example/e', event_type: 'rdr.new' as const, active: true,
    created_at: '2026-01-01T00:00:00Z', updated_at: '2026-01-01T00:00:00Z',
  };

  it('keeps the spec fields and the username, and says only whether the password matches', () => {
    expect(subscriptionView({ ...base, auth: { username: 'u', password: 'pw-1' } }, 'pw-1')).toEqual({ ...base, auth: { username: 'u', password_matches: true } });
    expect(subscriptionView({ ...base, auth: { username: 'u', password: 'pw-1' } }, 'pw-2')).toEqual({ ...base, auth: { username: 'u', password_matches: false } });
  });

  it('leaves password_matches out when the service shows no password, or an empty one', () => {
    expect(subscriptionView({ ...base, auth: { username: 'u' } as never }, 'pw-1')).toEqual({ ...base, auth: { username: 'u' } });
    expect(subscriptionView({ ...base, auth: { username: 'u', password: '' } }, 'pw-1')).toEqual({ ...base, auth: { username: 'u' } });
    expect(subscriptionView(base, 'pw-1')).toEqual(base);
    // Nothing to compare with: unknown, not "matches".
    expect(subscriptionView({ ...base, auth: { username: 'u', password: 'pw-1' } }, undefined)).toEqual({ ...base, auth: { username: 'u' } });
  });

  it('drops fields the spec does not list (they could carry credentials)', () => {
    const v = subscriptionView({ ...base, auth: { username: 'u', password: 'pw-1', token: 'x' }, secret_hint: 'pw-1' } as never, 'pw-1');
    expect(JSON.stringify(v)).not.toContain('pw-1');
    expect(v).not.toHaveProperty('secret_hint');
  });
});
