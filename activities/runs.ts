// Run activities: the steps every run ends with: publish the analysts' snapshot when it is behind the store,
// and record the run (cbp status lists the runs).
import { publishIfBehind } from '../store/snapshot.ts';
import { recordRun } from '../store/runs.ts';
import type { ActivityContext } from './deps.ts';
import type { PipelineActivities } from './types.ts';

export function createRunActivities(ctx: ActivityContext): Pick<PipelineActivities, 'publishSnapshot' | 'recordRun'> {
  const { withStore, snapshotPath, logger } = ctx;
  return {
    async publishSnapshot() {
      // Only when the snapshot is behind the store: every run's publish step also repairs one a killed run left.
      const r = await withStore('publishSnapshot', (store) => publishIfBehind(store, { snapshotPath }));
      if (r.removedTemps.length) logger?.info({ removed: r.removedTemps }, 'removed temp copies a killed publish left beside the snapshot');
      return { path: r.path, published: r.published, generation: r.generation };
    },

    async recordRun(run) {
      await withStore('recordRun', (store) => recordRun(store, run));
    },
  };
}
