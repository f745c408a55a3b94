// The real workflow sandbox without a server: Worker.runReplayHistory replays hand-built histories through
// the bundled bindings. It proves the bundle initialises and runs deterministically in Temporal's VM, that
// nightly reads asOf from TemporalScheduledStartTime there, and that backfill continues as new. The
// replayer compares the workflow's commands with the history: one activity too many or too few fails it.
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import { DefaultLogger, makeTelemetryFilterString, Runtime, Worker } from '@temporalio/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import { workflowBundle } from './helpers/temporal-env.ts';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const payload = (v: unknown, type?: string) => ({ metadata: { encoding: b64('json/plain'), ...(type ? { type: b64(type) } : {}) }, data: b64(JSON.stringify(v)) });
const TQ = { name: 'cbp', kind: 'TASK_QUEUE_KIND_NORMAL' };

interface Step {
  name: string;
  result?: unknown;
  /** The activity failed for good with this ApplicationFailure (type = the CbpError's code), instead of a result. */
  failure?: { type: string; message: string };
}

/**
 * A history in which the workflow scheduled `steps` one at a time, each completing with its result. With
 * `end`, the run then completed (or continued as new), and the workflow must do the same; without it the
 * history stops at an open workflow task, and whatever the workflow does next is accepted.
 */
function history(workflowType: string, input: unknown, steps: Step[], scheduledStart?: string, end?: 'completed' | 'continued') {
  const events: Array<Record<string, unknown>> = [];
  let id = 0;
  let t = Date.parse('2026-03-19T17:00:00Z'); // the run "really" starts days after its nominal time
  const ev = (eventType: string, attrs: Record<string, unknown>) => {
    id += 1;
    t += 1000;
    events.push({ eventId: String(id), eventTime: new Date(t).toISOString(), eventType, ...attrs });
    return String(id);
  };
  const wft = () => {
    const scheduled = ev('EVENT_TYPE_WORKFLOW_TASK_SCHEDULED', { workflowTaskScheduledEventAttributes: { taskQueue: TQ, startToCloseTimeout: '10s', attempt: 1 } });
    const started = ev('EVENT_TYPE_WORKFLOW_TASK_STARTED', { workflowTaskStartedEventAttributes: { scheduledEventId: scheduled, identity: 'test', requestId: 'wft' } });
    return { scheduled, started };
  };
  ev('EVENT_TYPE_WORKFLOW_EXECUTION_STARTED', {
    workflowExecutionStartedEventAttributes: {
      workflowType: { name: workflowType },
      taskQueue: TQ,
      input: { payloads: [payload(input)] },
      workflowTaskTimeout: '10s',
      originalExecutionRunId: 'run-1',
      firstExecutionRunId: 'run-1',
      attempt: 1,
      identity: 'test',
      ...(scheduledStart ? { searchAttributes: { indexedFields: { TemporalScheduledStartTime: payload(scheduledStart, 'Datetime') } } } : {}),
    },
  });
  let task = wft();
  steps.forEach((s, i) => {
    const completed = ev('EVENT_TYPE_WORKFLOW_TASK_COMPLETED', {
      workflowTaskCompletedEventAttributes: { scheduledEventId: task.scheduled, startedEventId: task.started, identity: 'test' },
    });
    const scheduled = ev('EVENT_TYPE_ACTIVITY_TASK_SCHEDULED', {
      activityTaskScheduledEventAttributes: {
        activityId: String(i + 1),
        activityType: { name: s.name },
        taskQueue: TQ,
        input: { payloads: [] },
        startToCloseTimeout: '600s',
        workflowTaskCompletedEventId: completed,
      },
    });
    const started = ev('EVENT_TYPE_ACTIVITY_TASK_STARTED', { activityTaskStartedEventAttributes: { scheduledEventId: scheduled, identity: 'test', requestId: 'act', attempt: 1 } });
    if (s.failure) {
      ev('EVENT_TYPE_ACTIVITY_TASK_FAILED', {
        activityTaskFailedEventAttributes: {
          failure: { message: s.failure.message, applicationFailureInfo: { type: s.failure.type, nonRetryable: true } },
          scheduledEventId: scheduled, startedEventId: started, identity: 'test', retryState: 'RETRY_STATE_NON_RETRYABLE_FAILURE',
        },
      });
    } else {
      ev('EVENT_TYPE_ACTIVITY_TASK_COMPLETED', {
        activityTaskCompletedEventAttributes: { result: { payloads: [payload(s.result)] }, scheduledEventId: scheduled, startedEventId: started, identity: 'test' },
      });
    }
    task = wft();
  });
  if (end) {
    const completed = ev('EVENT_TYPE_WORKFLOW_TASK_COMPLETED', {
      workflowTaskCompletedEventAttributes: { scheduledEventId: task.scheduled, startedEventId: task.started, identity: 'test' },
    });
    if (end === 'completed') {
      ev('EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED', { workflowExecutionCompletedEventAttributes: { result: { payloads: [payload(null)] }, workflowTaskCompletedEventId: completed } });
    } else {
      ev('EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW', {
        workflowExecutionContinuedAsNewEventAttributes: {
          newExecutionRunId: 'run-2',
          workflowType: { name: workflowType },
          taskQueue: TQ,
          input: { payloads: [payload(null)] },
          workflowTaskTimeout: '10s',
          workflowTaskCompletedEventId: completed,
        },
      });
    }
  }
  return historyFromJSON({ events });
}

const load = (kind: string): Step => ({ name: 'fetchAndLoad', result: { kind, windowId: 'w', records: 3, quarantined: 0 } });
const AFTER_LOADS: Step[] = [
  { name: 'ingestEvents', result: { segments: 1, events: 2, duplicates: 0, quarantined: 0, failed: 0 } },
  { name: 'enrich', result: { lookups: 0, failed: 0 } },
  { name: 'computeRatios', result: { ratios: 1, alerts: 0, noticesQueued: 0 } },
  { name: 'deliverNotices', result: { sent: 0, failed: 0 } },
  { name: 'publishSnapshot', result: { path: 'p' } },
  { name: 'recordRun', result: null },
];

let bundle: { code: string };
const replay = (h: ReturnType<typeof history>) => Worker.runReplayHistory({ workflowBundle: bundle }, h, 'replayed');

beforeAll(async () => {
  try {
    // The replays below that are meant to fail would log core warnings: keep the output to real errors.
    Runtime.install({
      logger: new DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: 'ERROR', other: 'ERROR' }), forward: {} } },
    });
  } catch {
    // already installed in this process
  }
  bundle = await workflowBundle();
}, 120_000);

describe('workflows replayed in the Temporal sandbox', () => {
  // MID windows over a 30-day lookback: asOf 2026-03-31 → March only (1 fetch); the real start,
  // 2026-03-19, would reach back into February (2 fetches). One fetch in the history proves asOf came
  // from TemporalScheduledStartTime inside the sandbox.
  const midInput = { windowDays: 30, lookbackDays: 30, kinds: ['mid_report'] };

  it('runs nightly to completion over the history of a scheduled run', async () => {
    await expect(
      replay(history('nightlyWorkflow', midInput, [load('mid_report'), ...AFTER_LOADS], '2026-03-31T02:30:00Z', 'completed')),
    ).resolves.toBeUndefined();
  });

  it('fails a replay whose history ends otherwise than the workflow (the replayer checks the end too)', async () => {
    const steps = [load('mid_report'), ...AFTER_LOADS];
    await expect(replay(history('nightlyWorkflow', midInput, steps, '2026-03-31T02:30:00Z', 'continued'))).rejects.toThrow(/nondeterminism/i);
  });

  it('takes asOf from the schedule nominal time, not from the start of the run', async () => {
    // Same history without the search attribute: asOf falls back to the start, two months are due.
    await expect(replay(history('nightlyWorkflow', midInput, [load('mid_report'), ...AFTER_LOADS]))).rejects.toThrow(/nondeterminism/i);
    await expect(replay(history('nightlyWorkflow', midInput, [load('mid_report'), load('mid_report'), ...AFTER_LOADS]))).resolves.toBeUndefined();
  });

  it('detects a history with one activity too many (the replayer really checks)', async () => {
    await expect(replay(history('nightlyWorkflow', midInput, [load('mid_report'), load('mid_report'), ...AFTER_LOADS], '2026-03-31T02:30:00Z'))).rejects.toThrow(
      /nondeterminism/i,
    );
  });

  it('runs a backfill that continues as new after windowsPerRun windows', async () => {
    const input = { from: '2026-01-01', to: '2026-01-15', kinds: ['chargebacks'], windowDays: 5, parallelism: 1, windowsPerRun: 2 };
    const steps: Step[] = [
      { name: 'windowsDone', result: [] },
      load('chargebacks'),
      { name: 'markWindowDone', result: null },
      load('chargebacks'),
      { name: 'markWindowDone', result: null },
    ];
    await expect(replay(history('backfillWorkflow', input, steps, undefined, 'continued'))).resolves.toBeUndefined();
    await expect(replay(history('backfillWorkflow', input, steps, undefined, 'completed'))).rejects.toThrow(/nondeterminism/i);
    // A history that goes on to a third window contradicts the continue-as-new the workflow issued.
    await expect(replay(history('backfillWorkflow', input, [...steps, load('chargebacks')]))).rejects.toThrow(/continue as new/i);
  });

  it('runs reconcile and pushOrders bodies in the sandbox', async () => {
    const sub = (event_type: string) => ({
      guid: `sub_${event_type.replace('.', '')}`,
      email: 'ops@merchant.example',
      url: 'https://hooks.merchant.example/e',
      event_type,
      active: true,
      created_at: '2026-01-01T00:00:00Z',
      updated_at: '2026-01-01T00:00:00Z',
    });
    const all = ['chargeback.new', 'chargeback.match', 'prevention.new', 'prevention.match', 'chargeback.result', 'chargeback.dnf', 'rdr.new', 'rdr.match'];
    const reconcileInput = { webhookUrl: 'https://hooks.merchant.example/e', email: 'ops@merchant.example', auth: { username: 'u' } };
    await expect(
      replay(
        history('reconcileSubscriptionsWorkflow', reconcileInput, [
          { name: 'listSubscriptions', result: { subscriptions: all.slice(1).map(sub), serviceTime: '2026-03-15T00:00:00Z' } },
          { name: 'createSubscription', result: sub('chargeback.new') },
          { name: 'recordRun', result: null },
        ], undefined, 'completed'),
      ),
    ).resolves.toBeUndefined();
    // Password rotation as the history records it: the list says only that a password differs.
    const listed = all.map(sub);
    listed[2] = { ...listed[2]!, auth: { username: 'u', password_matches: false } } as never;
    await expect(
      replay(
        history('reconcileSubscriptionsWorkflow', reconcileInput, [
          { name: 'listSubscriptions', result: { subscriptions: listed, serviceTime: '2026-03-15T00:00:00Z' } },
          { name: 'updateSubscription', result: { ...listed[2]!, auth: { username: 'u', password_matches: true } } },
          { name: 'recordRun', result: null },
        ], undefined, 'completed'),
      ),
    ).resolves.toBeUndefined();

    // Another consumer's subscription is left alone; cbp's own one, switched off after vetting, is switched back
    // on; when the service refuses that (its failure as Temporal records it), cbp deletes and re-creates it.
    const own = all.map((t) => ({ ...sub(t), cbp_own: true, cbp_seen_active: true }));
    own[1] = { ...own[1]!, active: false };
    const others = [{ guid: 'sub_crm', event_type: 'rdr.new', url_host: 'crm.merchant.example', active: true }];
    await expect(
      replay(
        history('reconcileSubscriptionsWorkflow', reconcileInput, [
          { name: 'listSubscriptions', result: { subscriptions: own, others, serviceTime: '2026-03-15T00:00:00Z' } },
          { name: 'updateSubscription', failure: { type: 'CBP_ERR_SERVICE_BAD_REQUEST', message: 'events update subscription: 400 vetting failed' } },
          { name: 'deleteSubscription', result: null },
          { name: 'createSubscription', result: { ...sub('chargeback.match'), guid: 'sub_new', active: false } },
          { name: 'recordRun', result: null },
        ], undefined, 'completed'),
      ),
    ).resolves.toBeUndefined();
    // Any other failure of that update fails the run: a history that goes on to delete contradicts it.
    await expect(
      replay(
        history('reconcileSubscriptionsWorkflow', reconcileInput, [
          { name: 'listSubscriptions', result: { subscriptions: own, others, serviceTime: '2026-03-15T00:00:00Z' } },
          { name: 'updateSubscription', failure: { type: 'CBP_ERR_SERVICE_UNAVAILABLE', message: 'events update subscription: 503' } },
          { name: 'deleteSubscription', result: null },
        ]),
      ),
    ).rejects.toThrow(/nondeterminism/i);

    // pushOrders: one activity per batch, its input a path and a cursor, its result counts and the next cursor.
    const batch = (next: string | null) => ({ records: 500, new: 498, changed: 0, retried: 0, unchanged: 0, stillRejected: 0, rejected: 1, invalid: 1, repeated: 0, next });
    await expect(
      replay(
        history('pushOrdersWorkflow', { source: 'orders.ndjson' }, [
          { name: 'pushOrderBatch', result: batch('n:120000:500') },
          { name: 'pushOrderBatch', result: batch(null) },
          { name: 'recordRun', result: null },
        ], undefined, 'completed'),
      ),
    ).resolves.toBeUndefined();
    // A history of the earlier shape (orders passed through readOrders / pushOrders results) does not replay:
    // pushOrders runs started before this change must finish (or be terminated) before workers are upgraded.
    const orders = [{ order_id: 'A1', order_total: '10.00', order_date: '2026-03-01T00:00:00Z' }];
    await expect(
      replay(
        history('pushOrdersWorkflow', { source: 'orders.ndjson' }, [
          { name: 'readOrders', result: { orders, invalid: [], next: null } },
          { name: 'pushedHashes', result: {} },
          { name: 'pushOrders', result: [{ order_id: 'A1', ok: true, id: 'svc-1' }] },
          { name: 'recordPushes', result: null },
          { name: 'recordRun', result: null },
        ], undefined, 'completed'),
      ),
    ).rejects.toThrow(/nondeterminism/i);
  });
});
