// The Temporal bindings, run outside a server: @temporalio/workflow's context functions are replaced by
// fakes (workflowInfo, proxyActivities, continueAsNew), everything else is the real SDK.
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FetchAndLoadInput } from '../activities/types.ts';
import { NON_RETRYABLE_ERROR_TYPES } from '../workflows/activity-options.ts';
import { windowId } from '../lib/utc.ts';
import { callsOf, createFakes, type FakeState } from './workflows-fakes.ts';

class ContinueAsNewCalled extends Error {}

const h = vi.hoisted(() => ({
  info: {} as Record<string, unknown>,
  scheduled: undefined as Date | undefined,
  acts: {} as Record<string, (...a: unknown[]) => Promise<unknown>>,
  optionsByActivity: new Map<string, unknown>(),
  continued: [] as unknown[],
  warned: [] as Array<{ message: string; attrs: unknown }>,
}));

vi.mock('@temporalio/workflow', async (importOriginal) => {
  const orig = await importOriginal<typeof import('@temporalio/workflow')>();
  return {
    ...orig,
    proxyActivities: (options: unknown) =>
      new Proxy(
        {},
        {
          get: (_t, name: string) => (...args: unknown[]) => {
            h.optionsByActivity.set(name, options);
            return h.acts[name]!(...args);
          },
        },
      ),
    workflowInfo: () => ({
      ...h.info,
      typedSearchAttributes: { get: (k: { name: string }) => (k.name === 'TemporalScheduledStartTime' ? h.scheduled : undefined) },
    }),
    continueAsNew: async (input: unknown) => {
      h.continued.push(input);
      throw new ContinueAsNewCalled('continued');
    },
    log: { ...orig.log, warn: (message: string, attrs?: unknown) => void h.warned.push({ message, attrs }) },
  };
});

// Loaded afresh under the mock (a test process runs other files before this one), and dropped after it.
vi.resetModules();
const { nightlyWorkflow, backfillWorkflow, reconcileSubscriptionsWorkflow, pushOrdersWorkflow } = await import('../workflows/temporal.ts');
afterAll(() => { vi.resetModules(); });

let state: FakeState;
beforeEach(() => {
  const f = createFakes();
  state = f.state;
  h.acts = f.acts as never;
  h.scheduled = undefined;
  h.continued = [];
  h.warned = [];
  h.optionsByActivity.clear();
  h.info = { workflowId: 'cbp-nightly-2026-03-15T02:30:00Z', runId: 'r1', startTime: new Date('2026-03-19T17:00:00Z'), continueAsNewSuggested: false };
});

const lastDays = () => [...new Set(callsOf(state, 'fetchAndLoad').map(([i]) => (i as FetchAndLoadInput).window.to))].sort();

describe('Temporal bindings', () => {
  it('takes nightly asOf from the schedule nominal time, not from when the run started', async () => {
    h.scheduled = new Date('2026-03-15T02:30:00Z');
    const r = await nightlyWorkflow({ windowDays: 7, kinds: ['chargebacks'] });
    expect(r.asOf).toBe('2026-03-15T02:30:00.000Z');
    expect(lastDays().at(-1)).toBe('2026-03-15');
    expect(r.runId).toBe('cbp-nightly-2026-03-15T02:30:00Z/r1');
  });

  it('falls back to the workflow start without a schedule, and an explicit asOf wins over both', async () => {
    await nightlyWorkflow({ windowDays: 7, kinds: ['chargebacks'] });
    expect(lastDays().at(-1)).toBe('2026-03-19');
    // The fake service's clock (2026-03-15) is days before that: the worker's log says so.
    expect(h.warned).toEqual([{ message: expect.stringMatching(/^the service's clock \(2026-03-15T.*\) is before the day this run covers \(2026-03-19\)/), attrs: expect.objectContaining({ runId: 'cbp-nightly-2026-03-15T02:30:00Z/r1' }) }]);
    h.scheduled = new Date('2026-03-15T02:30:00Z');
    const r = await nightlyWorkflow({ windowDays: 7, kinds: ['chargebacks'], asOf: '2026-02-01T00:00:00Z' });
    expect(r.asOf).toBe('2026-02-01T00:00:00Z');
  });

  it('proxies downloads with a heartbeat timeout and every activity with non-retryable 400/401/412/422 kinds', async () => {
    await nightlyWorkflow({ windowDays: 30, kinds: ['prevention'] });
    const download = h.optionsByActivity.get('fetchAndLoad') as { heartbeatTimeout?: unknown; retry: { nonRetryableErrorTypes: string[] } };
    expect(download.heartbeatTimeout).toBeDefined();
    for (const name of ['ingestEvents', 'enrich', 'computeRatios', 'deliverNotices', 'publishSnapshot', 'recordRun', 'fetchAndLoad']) {
      const o = h.optionsByActivity.get(name) as { startToCloseTimeout?: unknown; heartbeatTimeout?: unknown; retry: { nonRetryableErrorTypes: string[] } };
      expect(o.startToCloseTimeout, name).toBeDefined();
      // Every activity heartbeats (worker/activity-errors.ts): a worker killed inside a load is noticed in a minute.
      expect(o.heartbeatTimeout, name).toBe('1 minute');
      for (const code of ['CBP_ERR_SERVICE_BAD_REQUEST', 'CBP_ERR_SERVICE_UNAUTHORIZED', 'CBP_ERR_SERVICE_PRECONDITION', 'CBP_ERR_SERVICE_UNPROCESSABLE']) {
        expect(o.retry.nonRetryableErrorTypes, name).toContain(code);
      }
    }
    expect(NON_RETRYABLE_ERROR_TYPES).not.toContain('CBP_ERR_SERVICE_UNAVAILABLE');
  });

  it('continues a backfill as new with the remaining windows when the server suggests it', async () => {
    let loads = 0;
    const load = h.acts.fetchAndLoad!;
    h.acts.fetchAndLoad = async (...a) => {
      loads += 1;
      if (loads >= 3) h.info.continueAsNewSuggested = true;
      return load(...a);
    };
    await expect(backfillWorkflow({ from: '2026-01-01', to: '2026-01-31', kinds: ['chargebacks'], windowDays: 5, parallelism: 1 })).rejects.toBeInstanceOf(
      ContinueAsNewCalled,
    );
    const next = h.continued[0] as { pending: Array<{ window: { from: string; to: string } }>; runId: string; carried: { loaded: number } };
    expect(next.pending.map((t) => windowId(t.window))).toEqual(['2026-01-16..2026-01-20', '2026-01-21..2026-01-25', '2026-01-26..2026-01-30', '2026-01-31..2026-01-31']);
    expect(next.carried.loaded).toBe(3);
    expect(next.runId).toBe('cbp-nightly-2026-03-15T02:30:00Z/r1'); // the chain keeps its first run id
  });

  it('turns a bad input into a non-retryable failure typed by its code, so the workflow fails instead of retrying', async () => {
    const err = await backfillWorkflow({ from: '2026-02-01', to: '2026-01-01', windowDays: 5 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'CBP_ERR_WINDOW_RANGE', nonRetryable: true });
    const insecure = await reconcileSubscriptionsWorkflow({ webhookUrl: 'http://hooks.example/e', email: 'a@b.example', auth: { username: 'u' } }).catch(
      (e: unknown) => e,
    );
    expect(insecure).toMatchObject({ type: 'CBP_ERR_INSECURE_WEBHOOK_URL', nonRetryable: true });
  });

  it('refuses a reconcile input that carries the webhook password, without echoing it, before any activity runs', async () => {
    const input = { webhookUrl: 'https://hooks.example/e', email: 'a@b.example', auth: { username: 'u', password: 'leaked-pw-77' } };
    const err = await reconcileSubscriptionsWorkflow(input as never).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'CBP_ERR_WORKFLOW_INPUT', nonRetryable: true, message: expect.stringContaining('CBP_WEBHOOK_PASSWORD') });
    expect(JSON.stringify({ message: (err as Error).message, stack: (err as Error).stack })).not.toContain('leaked-pw-77');
    expect(state.calls).toEqual([]);
  });

  it('pushes orders batch by batch through one heartbeating activity, and continues as new with only the cursor and counts', async () => {
    const { MerchantOrderSchema } = await import('../contract/index.ts');
    const orders = Array.from({ length: 25 }, (_, i) => MerchantOrderSchema.parse({ order_id: `O${i}`, order_date: '2026-03-01T10:00:00Z', order_total: '1.00', billing_last_name: 'Privateperson' }));
    const f = createFakes({ sources: { 'orders.ndjson': orders } });
    h.acts = f.acts as never;
    let batches = 0;
    const batch = h.acts.pushOrderBatch!;
    h.acts.pushOrderBatch = async (...a) => {
      batches += 1;
      if (batches >= 2) h.info.continueAsNewSuggested = true;
      return batch(...a);
    };
    await expect(pushOrdersWorkflow({ source: 'orders.ndjson', batchSize: 10 })).rejects.toBeInstanceOf(ContinueAsNewCalled);
    const next = h.continued[0] as { cursor: string; carried: { read: number; new: number }; runId: string; source: string };
    expect(next).toMatchObject({ source: 'orders.ndjson', cursor: '20', carried: { read: 20, new: 20 }, runId: 'cbp-nightly-2026-03-15T02:30:00Z/r1' });
    expect(JSON.stringify(next)).not.toContain('Privateperson');
    const o = h.optionsByActivity.get('pushOrderBatch') as { heartbeatTimeout?: unknown; retry: { nonRetryableErrorTypes: string[] } };
    expect(o.heartbeatTimeout).toBeDefined();
    expect(o.retry.nonRetryableErrorTypes).toContain('CBP_ERR_DATA_KEY');
  });
});
