// Report activities: download a report window to a landing file and load it (one activity, so the file never
// travels between worker hosts), the fetch and a finished window recorded in the load's commit; older workers' marks.
import path from 'node:path';
import type { ServiceClients } from '../client/index.ts';
import { fetchReport } from '../store/landing.ts';
import { loadReport } from '../store/load.ts';
import { doneWindowIds, recordReportFetch, recordWindowOutcome } from '../store/windows.ts';
import { windowBounds, windowComplete, windowId } from '../lib/utc.ts';
import type { ActivityContext } from './deps.ts';
import { withHeartbeat } from './heartbeat.ts';
import type { ReportActivities, WindowStateActivities } from './types.ts';

export function createReportActivities(ctx: ActivityContext): ReportActivities & WindowStateActivities {
  const { withStore, dataDir, now, logger } = ctx;
  return {
    async fetchAndLoad({ kind, window, runId }) {
      return withHeartbeat(async (signal) => {
        const bounds = windowBounds(window);
        // The signal reaches the download: a cancelled activity stops streaming at once.
        const client = {
          fetchReport: (args: Parameters<ServiceClients['reporting']['fetchReport']>[0]) => ctx.clients.reporting.fetchReport({ ...args, signal }),
        };
        const landed = await fetchReport({ client, dataDir }, kind, { start: bounds.start, end: bounds.end, format: 'json' });
        // When the service answered, by its own clock (its Date header); without one, ours at the answer.
        const serviceTime = landed.meta.service_time ?? landed.meta.fetched_at;
        const landingFile = path.relative(dataDir, landed.path);
        // The fetch and the window's outcome are recorded in the load's commit: neither claims more than the store holds.
        const r = await withStore('fetchAndLoad', (store) => loadReport(store, landed.path, {
          kind, format: 'json', window,
          record: async (s, loaded) => {
            const counts = { records: loaded.rowsLoaded, quarantined: loaded.quarantined, runId };
            await recordReportFetch(s, { kind, window, serviceTime, fetchedAt: landed.meta.fetched_at, ...counts });
            await recordWindowOutcome(s, { kind, window, ...counts, landingFile, serviceTime, doneAt: now().toISOString() });
          },
        }));
        const complete = windowComplete(window, serviceTime);
        logger?.debug(
          { kind, window: windowId(window), runId, records: r.rowsLoaded, quarantined: r.quarantined, serviceTime, complete },
          complete ? 'report window loaded' : "report window loaded; it reaches past the service's clock, so it holds the data so far",
        );
        return {
          kind,
          windowId: windowId(window),
          records: r.rowsLoaded,
          quarantined: r.quarantined,
          landingFile,
          serviceTime,
          outcomeRecorded: true,
        };
      });
    },

    async windowsDone(kind, windows) {
      if (windows.length === 0) return [];
      return withStore('windowsDone', (store) => doneWindowIds(store, kind, windows));
    },

    async markWindowDone(kind, window, result) {
      if (result.outcomeRecorded) return;
      const at = now().toISOString();
      // A result without a service time (an older worker's) is judged by this worker's clock.
      const serviceTime = result.serviceTime ?? at;
      const done = await withStore('markWindowDone', (store) =>
        recordWindowOutcome(store, {
          kind,
          window,
          records: result.records,
          quarantined: result.quarantined,
          landingFile: result.landingFile ?? null,
          serviceTime,
          doneAt: at,
        }),
      );
      if (!done) logger?.debug({ kind, window: windowId(window), serviceTime }, "report window left open: the service answered before its end");
    },
  };
}
