// Failure is a notice too, under a real Temporal server: the real activities over a temp store, one of them failing
// for good (a non-retryable error), send pipeline_failed with the workflow, its code and the Temporal command that
// shows the run; the next success sends pipeline_recovered. Skipped where no server can be had (see temporal-env).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { CbpError } from '../lib/errors.ts';
import { createWorker } from '../worker/worker.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { cleanup } from './ratios-fixtures.ts';
import { notifyingActivities } from './pipeline-notices-fixtures.ts';
import { skipTemporal, temporalTitle, useTemporalEnv, workflowBundle } from './helpers/temporal-env.ts';

describe.skipIf(skipTemporal)(temporalTitle('pipeline notices through Temporal'), () => {
  const server = useTemporalEnv();

  it('sends pipeline_failed for an ingest that fails for good, once, and pipeline_recovered after the next success', async () => {
    const env = server();
    let failing = true;
    const t = await notifyingActivities((a) => ({
      async ingestEvents() {
        if (failing) throw new CbpError('CBP_ERR_CONFIG', 'CBP_JOURNAL_DIR is not a folder');
        return a.ingestEvents();
      },
    }));
    const taskQueue = `cbp-test-${randomUUID()}`;
    const w = await createWorker({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', activities: t.activities, taskQueue, workflowBundle: await workflowBundle(), shutdownGraceTime: '2 seconds' });
    const running = w.run();
    const ingest = (workflowId: string) => env.client.workflow.execute(WORKFLOW_TYPES.ingestEvents, { taskQueue, workflowId, args: [{}] });
    try {
      await expect(ingest('ingest-a')).rejects.toThrow();
      await expect(ingest('ingest-b')).rejects.toThrow();
      expect(t.notifier.sent).toHaveLength(1);
      const failed = t.notifier.sent[0];
      expect(failed).toMatchObject({ kind: 'pipeline_failed', program: 'ingestEvents', level: 'CBP_ERR_CONFIG' });
      expect(failed.rule_id).toMatch(/^ingest-a\//);
      expect(failed.message).toContain("see more: temporal workflow show --workflow-id 'ingest-a' --run-id '");
      failing = false;
      await ingest('ingest-c');
      await ingest('ingest-d');
      expect(t.notifier.sent.map((n) => [n.kind, n.rule_id?.split('/')[0]])).toEqual([
        ['pipeline_failed', 'ingest-a'],
        ['pipeline_recovered', 'ingest-c'],
      ]);
    } finally {
      await w.shutdown();
      await running;
      cleanup(t.store, t.dir);
    }
  });
});
