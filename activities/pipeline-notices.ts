// The recordRun activity with failure notices: after the run is recorded, the notice it owes (alerts/pipeline-notices.ts)
// is stored and sent at once through the configured notifiers: a failed nightly never reaches its own deliver step.
// A notice that cannot be sent now stays queued in the outbox for the next deliver step; recording never fails on it.
import { secretValues } from '../lib/config.ts';
import { log, scrub } from '../lib/log.ts';
import { createRedactor } from '../alerts/redact.ts';
import { pipelineNotice } from '../alerts/pipeline-notices.ts';
import { insertNotice, latestPipelineNotice } from '../store/pipeline-notices.ts';
import type { ActivityContext } from './deps.ts';
import type { PipelineActivities } from './types.ts';

/** The ingestEvents activity, saying when the ingest workflow's last failure is still open (IngestResult.afterFailure). */
export function withFailureFlag(ctx: ActivityContext, ingestEvents: PipelineActivities['ingestEvents']): PipelineActivities['ingestEvents'] {
  return async () => {
    const r = await ingestEvents();
    const latest = await ctx.withStore('ingestEvents', (store) => latestPipelineNotice(store, 'ingestEvents'));
    return latest?.kind === 'pipeline_failed' ? { ...r, afterFailure: true } : r;
  };
}

export function withPipelineNotices(
  ctx: ActivityContext,
  acts: Pick<PipelineActivities, 'recordRun' | 'deliverNotices'>,
): PipelineActivities['recordRun'] {
  const redact = createRedactor(secretValues(ctx.config));
  return async (run) => {
    await acts.recordRun(run);
    const queued = await ctx.withStore('recordRun', async (store) => {
      const n = pipelineNotice(run, await latestPipelineNotice(store, run.workflow), (t) => scrub(redact(t)), ctx.now().toISOString());
      if (n) await insertNotice(store, n);
      return n;
    });
    if (!queued) return;
    const logger = ctx.logger ?? log();
    logger.warn({ workflow: run.workflow, runId: run.runId, notice: queued.notice_id, kind: queued.kind }, queued.message);
    try {
      await acts.deliverNotices();
    } catch (e) {
      logger.warn({ err: scrub(redact(String((e as Error)?.message ?? e))) }, `${queued.kind} notice queued, not sent yet: the next deliver step sends it`);
    }
  };
}
