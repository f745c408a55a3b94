// cbp metrics: the pipeline gauges and the journal's, in Prometheus' text format, from this process: for a
// node_exporter textfile collector (`cbp metrics > /var/lib/prometheus/node-exporter/cbp.prom`, from cron) or a
// look by hand. Reads the store read-only, or the snapshot while a writer (a run, the worker) holds the store;
// the worker's own /metrics serves the same gauges read from the store it holds.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';

export function register(program: Command, ctx: Ctx): void {
  program
    .command('metrics')
    .description("Print the pipeline's gauges (last successful runs, data covered, alert levels, quarantine, rejected orders, snapshot lag) and the journal's in Prometheus' text format")
    .option('--json', 'print the figures as JSON instead')
    .action(async (o: { json?: boolean }) => {
      const cfg = ctx.config();
      const { Registry } = await import('prom-client');
      const { openForStatus } = await import('./status.ts');
      const { readPipelineGauges } = await import('../../store/pipeline-gauges.ts');
      const { registerPipelineGauges } = await import('../../activities/pipeline-metrics.ts');
      const { registerJournalGauges } = await import('../../webhook/metrics.ts');
      const { journalBacklog, diskSpace, journalReadiness } = await import('../../lib/journal-space.ts');
      const { sizeBytes } = await import('../../lib/size.ts');
      const opened = await openForStatus(cfg);
      let gauges = null;
      try {
        if (opened.store) gauges = await readPipelineGauges(opened.store, { snapshotPath: cfg.snapshotPath, source: opened.source === 'snapshot' ? 'snapshot' : 'store' });
      } finally {
        opened.store?.close();
      }
      const minFree = sizeBytes(cfg.journalMinFree);
      if (o.json) {
        const journal = { dir: cfg.journalDir, waiting: journalBacklog(cfg.journalDir), disk: diskSpace(cfg.journalDir), ready: journalReadiness(cfg.journalDir, minFree).ready };
        ctx.out({ ...(opened.note ? { note: opened.note } : {}), pipeline: gauges, journal }, undefined, true);
        return;
      }
      if (opened.note) ctx.logger().info({ note: opened.note }, 'cbp metrics');
      const registry = new Registry();
      registerPipelineGauges(registry).set(gauges);
      registerJournalGauges(registry, cfg.journalDir, minFree);
      process.stdout.write(await registry.metrics());
    });
}
