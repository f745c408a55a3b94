// Alert activities: compute the ratios and evaluate the rules (queueing notices for new alerts), and send the
// queued notices.
import { secretValues } from '../lib/config.ts';
import { log } from '../lib/log.ts';
import { evaluateAfterLoad } from '../alerts/engine.ts';
import { deliverNotices as deliverOutbox, untoldNotices } from '../alerts/outbox.ts';
import { queueDueNotices } from '../alerts/due.ts';
import { chartRules, nobodyToldWarning, notifiersFromConfig, type Notifier } from '../alerts/notifiers/index.ts';
import { loadRules, type LoadedRules, type RuleSet } from '../rules/thresholds.ts';
import { midsWithoutRegion, noRegionNote } from '../rules/regions.ts';
import { ratioMids } from '../store/ratios.ts';
import type { ActivityContext } from './deps.ts';
import type { PipelineActivities } from './types.ts';

export function createAlertActivities(ctx: ActivityContext): Pick<PipelineActivities, 'computeRatios' | 'deliverNotices'> {
  const { withStore, now, config: cfg } = ctx;
  // Read when first needed, not at creation: a worker without them still runs every other activity.
  let rules: RuleSet | undefined = ctx.deps.rules;
  let notifiers: Notifier[] | undefined = ctx.deps.notifiers;
  return {
    async computeRatios({ asOf, notify }) {
      rules ??= loadRules(cfg.thresholdsFile, { defaultRegion: cfg.defaultRegion });
      const set = rules;
      const r = await withStore('computeRatios', async (store) => {
        const out = {
          ...(await evaluateAfterLoad(store, { asOf, rules: set, notify, now: now() })),
          // MIDs judged under the default region: the run summary says so (issue #13).
          noRegion: midsWithoutRegion(set, await ratioMids(store)).length,
        };
        // The worker lives on until the next run: what DuckDB cached for the evaluation goes back to the system
        // instead of staying held until then.
        await store.releaseMemory();
        return out;
      });
      const from = (set as Partial<LoadedRules>).defaultRegionFrom;
      return {
        ratios: r.ratios, alerts: r.alerts, noticesQueued: r.noticesQueued,
        // What to load, named in the run summary (at most 5 lines: the commands carry the months).
        ...(r.unknown.series ? { unknown: { series: r.unknown.series, missing: r.unknown.missing.slice(0, 5) } } : {}),
        ...(r.noRegion ? { noRegion: { mids: r.noRegion, region: set.defaultRegion, note: noRegionNote(r.noRegion, set.defaultRegion, from) } } : {}),
      };
    },

    async deliverNotices() {
      notifiers ??= notifiersFromConfig(cfg);
      const list = notifiers;
      const logger = ctx.logger ?? log();
      // Representment deadlines reached today (the service's day) join the notices to send (alerts/due.ts).
      const due = await withStore('deliverNotices', (store) => queueDueNotices(store, { leadDays: cfg.dueNoticeDays, now: now() }));
      const dueQueued = due.queued ? { dueQueued: due.queued } : {};
      if (list.length === 0) {
        // Alerts with nowhere to go: said in the result (the run summary prints it) and in the log.
        const untold = await withStore('deliverNotices', (store) => untoldNotices(store));
        if (untold === 0) return { sent: 0, failed: 0, notifiers: [], untold, ...dueQueued };
        const warning = nobodyToldWarning(untold);
        logger.warn({ untold }, warning);
        return { sent: 0, failed: 0, notifiers: [], untold, warning, ...dueQueued };
      }
      // The configuration's secrets (URL tokens, SMTP credentials) are redacted from every stored delivery error.
      const chart = rules ?? chartRules(cfg, logger);
      const r = await withStore('deliverNotices', (store) => deliverOutbox(store, list, { now: now(), secrets: secretValues(cfg), logger, chartRules: chart }));
      return { sent: r.sent, failed: r.retrying + r.failed, notifiers: list.map((n) => n.name), ...dueQueued };
    },
  };
}
