// cbp worker: the Temporal worker of cbp. Polls TEMPORAL_TASK_QUEUE in TEMPORAL_NAMESPACE at TEMPORAL_ADDRESS
// (Temporal Cloud: TEMPORAL_API_KEY, or mTLS with TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY). On SIGINT / SIGTERM
// it stops polling and lets running activities finish (30 s grace). The worker process holds the store
// (one writer) from its first store activity until it stops: analysts and `cbp status` read the snapshot.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { intOption } from './run.ts';
import { CONNECT_TIMEOUT_MS } from '../options.ts';

export function register(program: Command, ctx: Ctx): void {
  program
    .command('worker')
    .description('Run the Temporal worker (workflows and activities of cbp) until SIGINT/SIGTERM; running activities get 30 s to finish')
    .option('--task-queue <name>', 'task queue (default TEMPORAL_TASK_QUEUE, cbp)')
    .option('--max-activities <n>', 'activities run at once (default 4)', intOption('--max-activities'))
    .option('--connect-timeout <ms>', `time allowed to reach Temporal (default ${CONNECT_TIMEOUT_MS})`, intOption('--connect-timeout'))
    .action(async (o: { taskQueue?: string; maxActivities?: number; connectTimeout?: number }) => {
      const { createActivities, sharedStore, storeOpener } = await import('../../activities/index.ts');
      const { createServiceClients } = await import('../../client/index.ts');
      const { createWorker, temporalTargetFromConfig } = await import('../../worker/worker.ts');
      const { checkTemporal } = await import('../temporal.ts');
      const cfg = ctx.config();
      const target = temporalTargetFromConfig(cfg);
      await checkTemporal(target, o.connectTimeout ?? CONNECT_TIMEOUT_MS);
      const store = sharedStore(storeOpener(cfg));
      const clients = createServiceClients(cfg);
      const logger = ctx.logger();
      try {
        const w = await createWorker({
          activities: createActivities({ config: cfg, store: store.get, clients, logger }),
          address: target.address,
          namespace: target.namespace,
          taskQueue: o.taskQueue ?? target.taskQueue,
          ...(target.apiKey ? { apiKey: target.apiKey } : {}),
          ...(target.tls ? { tls: target.tls } : {}),
          ...(o.maxActivities ? { maxConcurrentActivityTaskExecutions: o.maxActivities } : {}),
        });
        logger.info({ address: target.address, namespace: target.namespace, taskQueue: o.taskQueue ?? target.taskQueue }, 'cbp worker polling');
        // The SDK stops the worker on SIGINT/SIGTERM (shutdownGraceTime lets running activities finish).
        await w.run();
        logger.info('cbp worker stopped');
      } finally {
        await clients.close().catch(() => undefined);
        store.close();
      }
    });
}
