// cbp alerts: the alert history (every notice: reached, escalated, resolved, projected) with the delivery
// state of each notifier, read from the published snapshot, else the store read-only. Subcommands for
// operators write to the store: evaluate (what the pipeline runs after each load), deliver, requeue.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { ConfigError, UsageError } from '../../lib/errors.ts';
import { openForReading } from './ratios.ts';
import { intOption } from './run.ts';
import { parseInstant } from '../options.ts';

function render(rows: Array<Record<string, unknown>>): string {
  if (rows.length === 0) return 'No alerts yet.';
  const lines = rows.map((r) =>
    [String(r.created_at).slice(0, 19), String(r.kind).padEnd(9), String(r.month), `${r.mid} ${r.network} ${r.program} ${r.level}`,
      r.notify ? `[${r.delivery ?? 'not queued'}]` : '[history only]', '\n   ', String(r.message)].join(' '),
  );
  return [...lines, `(${rows.length} notice${rows.length === 1 ? '' : 's'})`].join('\n');
}

/** The notifier names deliveries are recorded under (alerts/notifiers/*). */
const NOTIFIERS = ['webhook', 'slack', 'email'];

async function writer(ctx: Ctx) {
  const { openStore } = await import('../../store/db.ts');
  return openStore({ dbPath: ctx.config().dbPath, memoryLimit: ctx.config().storeMemoryLimit });
}

export function register(program: Command, ctx: Ctx): void {
  const cmd = program
    .command('alerts')
    .description('List the alert history, newest first, with each notifier\'s delivery state')
    .option('--mid <mid>', 'only this MID')
    .option('--limit <n>', 'at most this many notices', intOption('--limit'), 1000)
    .option('--snapshot <file>', 'snapshot to read (default CBP_SNAPSHOT_PATH; the store read-only when none exists)')
    .option('--json', 'print an array of notices')
    .action(async (o: { mid?: string; limit: number; snapshot?: string; json?: boolean }) => {
      const { listAlerts } = await import('../../alerts/engine.ts');
      const store = await openForReading(ctx, o.snapshot);
      try {
        const rows = await listAlerts(store, { mid: o.mid, limit: o.limit });
        ctx.out(rows, render, o.json);
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
      const { loadRules } = await import('../../rules/thresholds.ts');
      const { evaluateAfterLoad } = await import('../../alerts/engine.ts');
      const rules = loadRules(ctx.config().thresholdsFile as string | undefined);
      const store = await writer(ctx);
      try {
        const r = await evaluateAfterLoad(store, { asOf, rules, notify: o.notify });
        ctx.out(r, (x: typeof r) => `${x.ratios} ratio rows judged, ${x.alerts} alerts in force, ${x.noticesQueued} new notices to deliver`, json(o));
      } finally {
        store.close();
      }
    });

  cmd
    .command('deliver')
    .description('Send pending notices through the configured notifiers (webhook, Slack, e-mail)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { json?: boolean }) => {
      const { notifiersFromConfig } = await import('../../alerts/notifiers/index.ts');
      const { deliverNotices } = await import('../../alerts/outbox.ts');
      const notifiers = notifiersFromConfig(ctx.config());
      if (notifiers.length === 0) {
        throw new ConfigError(['no alert notifier is configured: set CBP_ALERT_WEBHOOK_URL, CBP_SLACK_WEBHOOK_URL, or CBP_SMTP_URL with CBP_ALERT_EMAIL_TO']);
      }
      const store = await writer(ctx);
      try {
        const r = await deliverNotices(store, notifiers);
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
      const { requeueFailed } = await import('../../alerts/outbox.ts');
      const store = await writer(ctx);
      try {
        // Counted first: requeueFailed itself says nothing, and "done" with no number tells an operator little.
        const [{ n }] = await store.all<{ n: number | bigint }>(
          `SELECT count(*) AS n FROM alert_outbox WHERE status = 'failed' ${o.notifier ? 'AND notifier = $name' : ''}`,
          o.notifier ? { name: o.notifier } : undefined,
        );
        await requeueFailed(store, o.notifier);
        const r = { requeued: Number(n), notifier: o.notifier ?? null };
        ctx.out(r, (x: typeof r) => `${x.requeued} given-up deliver${x.requeued === 1 ? 'y' : 'ies'}${x.notifier ? ` (${x.notifier})` : ''} put back in the queue; send them with cbp alerts deliver`, json(o));
      } finally {
        store.close();
      }
    });
}
