// Event activities: load the webhook journal's sealed segments, and look up the details matched events name; and the
// store's upkeep, which runs beside them on its own schedule.
import { ingestEvents as ingestJournal } from '../store/ingest.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { applyRetention } from '../store/retention.ts';
import { refreshRatios } from '../alerts/refresh.ts';
import { loadRules } from '../rules/thresholds.ts';
import type { ActivityContext } from './deps.ts';
import { enrichEvents } from './enrich.ts';
import type { PipelineActivities } from './types.ts';

export function createEventActivities(ctx: ActivityContext): Pick<PipelineActivities, 'ingestEvents' | 'enrich' | 'maintainStore'> {
  const { withStore, now, journalDir } = ctx;
  return {
    async maintainStore(input) {
      const r = await withStore('maintainStore', (store) => maintainStore(store, input));
      const t = await withStore('maintainStore', (store) => applyRetention(store, { days: ctx.config.retentionDays, dataDir: ctx.dataDir, journalDir, now: now() }));
      const retention = t.days === null ? {} : { retention: { days: t.days, landingFiles: t.landingFiles, journalSegments: t.journalSegments, bytes: t.bytes, keptNotLoaded: t.keptNotLoaded } };
      return { lake: r.lake, mergedFiles: r.mergedFiles, expiredSnapshots: r.expiredSnapshots, deletedFiles: r.deletedFiles + r.deletedOrphans, dataFiles: r.dataFiles, ...retention };
    },

    async ingestEvents() {
      const r = await withStore('ingestEvents', async (store) => {
        const done = await ingestJournal({ store, journalDir, now });
        // Events are a source of the ratios (TC40 reports, RDR): the table judged again where they changed it.
        if (done.loaded > 0) {
          const rules = ctx.deps.rules ?? loadRules(ctx.config.thresholdsFile, { defaultRegion: ctx.config.defaultRegion });
          await refreshRatios(store, rules);
        }
        return done;
      });
      ctx.deps.onIngested?.(r);
      return { segments: r.segments.length - r.failed, events: r.loaded, duplicates: r.duplicates, quarantined: r.quarantined, failed: r.failed };
    },

    async enrich() {
      // Each store step (reading the missing ids, writing a chunk's answers) holds the lock; the lookups do not.
      const r = await enrichEvents({
        store: (fn) => withStore('enrich', fn),
        events: ctx.clients.events,
        now,
        concurrency: ctx.deps.enrichConcurrency ?? 4,
      });
      const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
      return { lookups: sum(r.fetched) + sum(r.notFound) + r.failed.length, failed: r.failed.length };
    },
  };
}
