// cbp alerts: the alert history (every notice: reached, escalated, resolved, projected) with its delivery
// state and each notifier's last error, read from the published snapshot, else the store read-only.
// Subcommands for operators write to the store: evaluate (what the pipeline runs after each load), deliver,
// requeue; each republishes the snapshot after a change, so `cbp alerts` and analysts see it.
import type { Command } from 'commander';
import { configuredStore } from '../../store/lake.ts';
import type { Ctx } from '../context.ts';
import type { Store } from '../../store/db.ts';
import { evaluateAfterLoad, listAlerts } from '../../alerts/engine.ts';
import type { Delivery } from '../../store/alerts.ts';
import { deliverNotices, requeueFailed } from '../../alerts/outbox.ts';
import { createRedactor } from '../../alerts/redact.ts';
import { secretValues } from '../../lib/config.ts';
import { ConfigError, UsageError } from '../../lib/errors.ts';
import { scrub } from '../../lib/log.ts';
import { loadRules } from '../../rules/thresholds.ts';
import { NOTICE_KINDS } from '../../store/alerts.ts';
import { failedDeliveryCount } from '../../store/alert-history.ts';
import { openForReading } from './ratios.ts';
import { intOption } from './run.ts';
import { parseInstant } from '../options.ts';

function deliveryText(d: Delivery): string {
  if (d.status === 'sent') return `${d.notifier}: sent${d.sent_at ? ` ${d.sent_at}` : ''}`;
  const tries = `${d.attempts} attempt${d.attempts === 1 ? '' : 's'}`;
  if (d.status === 'failed') return `${d.notifier}: GIVEN UP after ${tries} (cbp alerts requeue)`;
  return `${d.notifier}: ${d.attempts ? `retrying (${tries}), next ${d.next_attempt_at ?? 'next run'}` : 'queued'}`;
}

function renderWith(anyNotifier: boolean) {
  return (rows: Array<Record<string, unknown>>): string => {
    if (rows.length === 0) return 'No alerts yet.';
    const lines = rows.map((r) => {
      const deliveries = (r.deliveries as Delivery[] | undefined) ?? [];
      const state = !r.notify
        ? '[history only]'
        : deliveries.length === 0
          ? `[not sent to anyone${anyNotifier ? '' : ': no notifier is configured'}]`
          : `[${deliveries.map(deliveryText).join('; ')}]`;
      const errors = deliveries.filter((d) => d.last_error).map((d) => `\n    last error (${d.notifier}): ${d.last_error}`);
      return [String(r.created_at).slice(0, 19), String(r.kind).padEnd(9), String(r.month), `${r.mid} ${r.network} ${r.program} ${r.level}`,
        state, '\n   ', String(r.message)].join(' ') + errors.join('');
    });
    return [...lines, `(${rows.length} notice${rows.length === 1 ? '' : 's'})`].join('\n');
  };
}

/** Publishes the snapshot after a write, so `cbp alerts` (which reads it) and analysts see the change. */
async function republish(ctx: Ctx, store: Store): Promise<string> {
  const { publishSnapshot } = await import('../../store/snapshot.ts');
  return (await publishSnapshot(store, { snapshotPath: ctx.config().snapshotPath })).path;
}

/** The notifier names deliveries are recorded under (alerts/notifiers/*). */
const NOTIFIERS = ['webhook', 'slack', 'email'];

async function writer(ctx: Ctx) {
  const { openStore } = await import('../../store/db.ts');
  return openStore(configuredStore(ctx.config()));
}

export function register(program: Command, ctx: Ctx): void {
  const cmd = program
    .command('alerts')
    .description('List the alert history, the levels\' notices first, each part newest first, with each notifier\'s delivery state')
    .option('--mid <mid>', 'only this MID')
    .option('--kind <kinds>', `only these kinds, comma-separated: ${NOTICE_KINDS.join(', ')}`)
    .option('--limit <n>', 'at most this many notices', intOption('--limit'), 1000)
    .option('--snapshot <file>', 'snapshot to read (default CBP_SNAPSHOT_PATH; the store read-only when none exists)')
    .option('--json', 'print an array of notices')
    .action(async (o: { mid?: string; kind?: string; limit: number; snapshot?: string; json?: boolean }) => {
      const kinds = o.kind === undefined ? undefined : o.kind.split(',').map((k) => k.trim()).filter(Boolean);
      const bad = (kinds ?? []).filter((k) => !(NOTICE_KINDS as readonly string[]).includes(k));
      if (kinds?.length === 0 || bad.length) throw new UsageError(`--kind: unknown kind ${bad.map((k) => JSON.stringify(k)).join(', ') || '""'}; expected one or more of ${NOTICE_KINDS.join(', ')}`);
      const { configuredNotifiers, notifierSecrets } = await import('../../alerts/notifiers/index.ts');
      const cfg = ctx.config();
      // Errors are redacted when stored; a store written before that may hold one, so they are redacted again.
      const redact = createRedactor([...secretValues(cfg), ...notifierSecrets(cfg)]);
      const store = await openForReading(ctx, o.snapshot);
      try {
        const rows = await listAlerts(store, { mid: o.mid, kinds, limit: o.limit, redact: (t) => scrub(redact(t)) });
        ctx.out(rows, renderWith(configuredNotifiers(cfg).length > 0), o.json);
      } finally {
        store.close();
      }
    });

  // commander hands a --json written after a subcommand to `alerts` itself, which has one too.
  const json = (o: { json?: boolean }) => Boolean(o.json || cmd.opts<{ json?: boolean }>().json);

  cmd
    .command('evaluate')
    .description('Evaluate the alert rules over the store now (the pipeline does this after every load)')
    .option('--as-of <date>', 'UTC date-time the evaluation is for (default: now)')
    .option('--no-notify', 'record notices as history only (a backfill)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { asOf?: string; notify: boolean; json?: boolean }) => {
      const asOf = o.asOf === undefined ? new Date().toISOString() : parseInstant('--as-of', o.asOf);
      const { configuredNotifiers, NOTIFIER_SETTINGS } = await import('../../alerts/notifiers/index.ts');
      const rules = loadRules(ctx.config().thresholdsFile, { defaultRegion: ctx.config().defaultRegion });
      const store = await writer(ctx);
      try {
        const e = await evaluateAfterLoad(store, { asOf, rules, notify: o.notify });
        // Analysts (and `cbp alerts`) read the snapshot: the new notices are theirs once it is republished.
        const snapshot = await republish(ctx, store);
        const nowhere = e.noticesQueued > 0 && configuredNotifiers(ctx.config()).length === 0;
        const r = { ...e, snapshot, ...(nowhere ? { warning: `no alert notifier is configured, so nobody will be told: set ${NOTIFIER_SETTINGS}, then run cbp alerts deliver` } : {}) };
        if (r.warning) ctx.logger().warn(r.warning);
        ctx.out(r, (x: typeof r) => [
          `${x.ratios} ratio rows judged, ${x.alerts} alerts in force${x.alertsMonth ? ` in ${x.alertsMonth}` : ''}, ${x.noticesQueued} new notices to deliver; snapshot published to ${x.snapshot}`,
          ...(x.warning ? [`WARNING: ${x.warning}`] : []),
        ].join('\n'), json(o));
      } finally {
        store.close();
      }
    });

  cmd
    .command('deliver')
    .description('Send pending notices through the configured notifiers (webhook, Slack, e-mail)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { json?: boolean }) => {
      const { chartRules, notifiersFromConfig, NOTIFIER_SETTINGS } = await import('../../alerts/notifiers/index.ts');
      const notifiers = notifiersFromConfig(ctx.config());
      if (notifiers.length === 0) {
        throw new ConfigError([`no alert notifier is configured: set ${NOTIFIER_SETTINGS}`]);
      }
      const store = await writer(ctx);
      try {
        const d = await deliverNotices(store, notifiers, { secrets: secretValues(ctx.config()), logger: ctx.logger(), chartRules: chartRules(ctx.config(), ctx.logger()) });
        const changed = d.redacted + d.sent + d.retrying + d.failed > 0;
        const r = { ...d, snapshot: changed ? await republish(ctx, store) : null };
        ctx.out(r, (x: typeof r) => `${x.sent} sent, ${x.retrying} to retry later, ${x.failed} given up (see cbp alerts; requeue with cbp alerts requeue)`, json(o));
      } finally {
        for (const n of notifiers) await n.close?.();
        store.close();
      }
    });

  cmd
    .command('requeue')
    .description('Put deliveries that were given up back in the queue (after fixing a notifier)')
    .option('--notifier <name>', 'only this notifier (webhook, slack, email)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { notifier?: string; json?: boolean }) => {
      if (o.notifier !== undefined && !NOTIFIERS.includes(o.notifier)) {
        throw new UsageError(`--notifier: unknown notifier ${JSON.stringify(o.notifier)}; expected one of ${NOTIFIERS.join(', ')}`);
      }
      const store = await writer(ctx);
      try {
        // Counted first: requeueFailed itself says nothing, and "done" with no number tells an operator little.
        const n = await failedDeliveryCount(store, o.notifier);
        await requeueFailed(store, o.notifier);
        if (n > 0) await republish(ctx, store);
        const r = { requeued: n, notifier: o.notifier ?? null };
        ctx.out(r, (x: typeof r) => `${x.requeued} given-up deliver${x.requeued === 1 ? 'y' : 'ies'}${x.notifier ? ` (${x.notifier})` : ''} put back in the queue; send them with cbp alerts deliver`, json(o));
      } finally {
        store.close();
      }
    });
}
