// Failure is a notice too: a nightly, backfill, ingest or order push that fails for good sends a pipeline_failed
// notice through the configured notifiers, once per failure, and the next success a pipeline_recovered one. Under
// the local runner here; under a real Temporal server in test/pipeline-notices-temporal.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import { CbpError } from '../lib/errors.ts';
import { pipelineNotice, seeMoreCommand, UNCODED } from '../alerts/pipeline-notices.ts';
import { webhookBody } from '../alerts/notifiers/webhook.ts';
import { emailSubject, emailText } from '../alerts/notifiers/email.ts';
import { slackMessage } from '../alerts/notifiers/slack.ts';
import { createLocalRunner } from '../worker/local.ts';
import type { Store } from '../store/db.ts';
import { cleanup } from './ratios-fixtures.ts';
import { notifyingActivities } from './pipeline-notices-fixtures.ts';

const run = { runId: 'nightly-1', workflow: 'nightly', status: 'failed' as const, finishedAt: '2026-03-01T02:00:00Z', summary: { errorCode: 'CBP_ERR_SERVICE_FORBIDDEN' }, error: 'HTTP 403' };

describe('pipeline notices (what is owed)', () => {
  it('owes a failure once per error code, and a recovery once after it', () => {
    const failed = pipelineNotice(run, null)!;
    expect(failed).toMatchObject({ kind: 'pipeline_failed', program: 'nightly', level: 'CBP_ERR_SERVICE_FORBIDDEN', rule_id: 'nightly-1', notify: true, month: '2026-03' });
    expect(failed.message).toContain('see more: cbp status');
    expect(pipelineNotice({ ...run, runId: 'nightly-2' }, failed)).toBeNull();
    const other = pipelineNotice({ ...run, runId: 'nightly-3', summary: {}, error: 'boom' }, failed)!;
    expect(other).toMatchObject({ kind: 'pipeline_failed', level: UNCODED });
    const ok = { ...run, runId: 'nightly-4', status: 'ok' as const, summary: {}, error: undefined };
    expect(pipelineNotice(ok, other)).toMatchObject({ kind: 'pipeline_recovered', level: UNCODED, rule_id: 'nightly-4' });
    expect(pipelineNotice(ok, pipelineNotice(ok, other))).toBeNull();
    expect(pipelineNotice(ok, null)).toBeNull();
    expect(pipelineNotice({ ...run, workflow: 'reconcileSubscriptions' }, null)).toBeNull();
  });

  it('names the command that shows more: a Temporal run history, or cbp status', () => {
    expect(seeMoreCommand('cbp-nightly/0190-ab')).toBe("temporal workflow show --workflow-id 'cbp-nightly' --run-id '0190-ab'");
    expect(seeMoreCommand('nightly-2026-03-01T02:00:00.000Z')).toBe('cbp status');
  });

  it('redacts secrets from the stored text, and carries workflow, code and command to a webhook', () => {
    const n = pipelineNotice({ ...run, error: 'token s3cret-value refused' }, null, (t) => t.replaceAll('s3cret-value', '[REDACTED]'))!;
    expect(n.message).not.toContain('s3cret-value');
    expect(JSON.parse(webhookBody(n))).toMatchObject({ kind: 'pipeline_failed', workflow: 'nightly', error_code: 'CBP_ERR_SERVICE_FORBIDDEN', run_id: 'nightly-1', command: 'cbp status' });
    expect(emailSubject(n)).toBe('[cbp] PIPELINE FAILED nightly: CBP_ERR_SERVICE_FORBIDDEN');
    expect(emailText(n)).toMatch(/Workflow: +nightly\nError code: +CBP_ERR_SERVICE_FORBIDDEN\nRun: +nightly-1\nSee more: +cbp status/);
    expect(slackMessage(n).text).toMatch(/^:x: Pipeline failed: nightly \[CBP_ERR_SERVICE_FORBIDDEN\]\n/);
  });
});

describe('pipeline notices under the local runner', () => {
  let store: Store | undefined;
  let dir: string | undefined;
  afterEach(() => cleanup(store, dir));

  it('sends pipeline_failed once for a nightly that fails for good, and pipeline_recovered after the next success', async () => {
    let failing = true;
    const t = await notifyingActivities((a) => ({
      async fetchAndLoad() {
        throw new CbpError('CBP_ERR_SERVICE_FORBIDDEN', 'the service refused the credential (HTTP 403)');
      },
      async ingestEvents() {
        if (failing) throw new Error('journal folder unreadable');
        return a.ingestEvents();
      },
    }));
    ({ store, dir } = t);
    let clock = Date.parse('2026-03-01T02:00:00Z');
    const runner = createLocalRunner(t.activities, { now: () => new Date((clock += 1000)).toISOString() });
    const nightly = { asOf: '2026-03-01T02:00:00Z', windowDays: 1, lookbackDays: 1, kinds: ['chargebacks' as const] };

    await expect(runner.nightly(nightly)).rejects.toThrow(/403/);
    expect(t.notifier.sent).toHaveLength(1);
    expect(t.notifier.sent[0]).toMatchObject({ kind: 'pipeline_failed', program: 'nightly', level: 'CBP_ERR_SERVICE_FORBIDDEN' });
    expect(t.notifier.sent[0].message).toMatch(/\[CBP_ERR_SERVICE_FORBIDDEN\].*see more: cbp status/);
    // The same failure again: no second notice.
    await expect(runner.nightly(nightly)).rejects.toThrow(/403/);
    expect(t.notifier.sent).toHaveLength(1);

    await expect(runner.ingestEvents()).rejects.toThrow(/unreadable/);
    expect(t.notifier.sent.map((n) => [n.kind, n.program, n.level])).toEqual([
      ['pipeline_failed', 'nightly', 'CBP_ERR_SERVICE_FORBIDDEN'],
      ['pipeline_failed', 'ingestEvents', UNCODED],
    ]);
    failing = false;
    await runner.ingestEvents();
    await runner.ingestEvents();
    expect(t.notifier.sent.map((n) => [n.kind, n.program])).toEqual([
      ['pipeline_failed', 'nightly'],
      ['pipeline_failed', 'ingestEvents'],
      ['pipeline_recovered', 'ingestEvents'],
    ]);
    // The notice history keeps them, as `cbp alerts` lists them.
    const kept = await t.store.all<{ kind: string }>("SELECT kind FROM alerts WHERE kind LIKE 'pipeline_%' ORDER BY created_at");
    expect(kept.map((r) => r.kind)).toEqual(['pipeline_failed', 'pipeline_failed', 'pipeline_recovered']);
  });

  it('sends pipeline_failed for a backfill and for an order push that fail for good, once each', async () => {
    const t = await notifyingActivities(() => ({
      async fetchAndLoad() {
        throw new CbpError('CBP_ERR_SERVICE_UNAVAILABLE', 'the service answered 503 after every retry');
      },
      async pushOrderBatch() {
        throw new CbpError('CBP_ERR_SERVICE_FORBIDDEN', 'the order data interface refused the credential (HTTP 403)');
      },
    }));
    ({ store, dir } = t);
    let clock = Date.parse('2026-03-01T02:00:00Z');
    const runner = createLocalRunner(t.activities, { now: () => new Date((clock += 1000)).toISOString() });
    const backfill = { from: '2026-01-01', to: '2026-01-02', windowDays: 1, kinds: ['chargebacks' as const] };
    const push = { source: `${t.dir}/orders.ndjson` };

    await expect(runner.backfill(backfill)).rejects.toThrow(/503/);
    await expect(runner.backfill(backfill)).rejects.toThrow(/503/);
    await expect(runner.pushOrders(push)).rejects.toThrow(/403/);
    expect(t.notifier.sent.map((n) => [n.kind, n.program, n.level])).toEqual([
      ['pipeline_failed', 'backfill', 'CBP_ERR_SERVICE_UNAVAILABLE'],
      ['pipeline_failed', 'pushOrders', 'CBP_ERR_SERVICE_FORBIDDEN'],
    ]);
    expect(t.notifier.sent[1].message).toMatch(/\[CBP_ERR_SERVICE_FORBIDDEN\].*see more: cbp status/);
  });
});
