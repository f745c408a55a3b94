// cbp run <step>: one pipeline step run by hand, outside the scheduler. Each step is a subcommand registered
// below; the orchestration work adds nightly, backfill, ... beside ingest.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import type { IngestResult } from '../../store/ingest.ts';
import type { PublishResult } from '../../activities/types.ts';
import { invalidOrderLines, rejectedOrders } from '../../store/orders.ts';
import { backfillTasks, nightlyTasks } from '../../workflows/windows.ts';
import { ordersNeedAttention } from '../../workflows/push-orders.ts';
import { existsSync } from 'node:fs';
import { NotFoundError, UsageError } from '../../lib/errors.ts';
import type { Config } from '../../lib/config.ts';
import { REPORT_KINDS, type ReportKind } from '../../contract/reporting.ts';
import { dayOption, instantOption } from '../options.ts';
import { ORDER_DETAIL_LIMIT, countWindows, humanBackfill, humanNightly, humanPush, humanReconcile, openPipeline, progressBar, requireFor, type PipelineOptions, type PushOrdersReport } from '../pipeline.ts';

function snapshotLine(s: { path: string; published: boolean }): string {
  return s.published ? `snapshot ${s.path} published` : `snapshot ${s.path} already up to date`;
}

function humanIngest(r: IngestResult & { snapshot: { path: string; published: boolean } }): string {
  if (r.segments.length === 0) return `no sealed journal segments in ${r.journalDir}: nothing to load; ${snapshotLine(r.snapshot)}`;
  const lines = r.segments.map((s) =>
    s.error
      ? `  ${s.segment}: FAILED (${s.error}); left in the journal for the next run`
      : `  ${s.segment}: ${s.lines} lines, ${s.loaded} new events, ${s.duplicates} duplicates, ${s.quarantined} quarantined`,
  );
  return [
    `loaded ${r.loaded} new events from ${r.segments.length - r.failed} segments (${r.duplicates} duplicates ignored, ${r.quarantined} quarantined); archived to ${r.archiveDir}`,
    ...lines,
    snapshotLine(r.snapshot),
  ].join('\n');
}

function registerIngest(run: Command, ctx: Ctx): void {
  run
    .command('ingest')
    .description('Load sealed journal segments into events_raw (re-deliveries ignored), then archive them')
    .option('--journal <dir>', 'journal directory (default CBP_JOURNAL_DIR, <CBP_DATA_DIR>/journal)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { journal?: string; json?: boolean }) => {
      const cfg = ctx.config();
      // The ingest workflow's body, as the worker runs it: load, then publish (only when the snapshot is behind
      // the store, so a run killed between its commit and its publish is made good by the next one), then the
      // run record cbp status lists. What is printed per segment comes from the store's account of the load.
      const seen: { loaded?: IngestResult; snap?: PublishResult } = {};
      const p = await openPipeline(cfg, {
        activityDeps: { ...(o.journal ? { journalDir: o.journal } : {}), onIngested: (l) => (seen.loaded = l) },
        wrap: (a) => ({ ...a, publishSnapshot: async () => (seen.snap = await a.publishSnapshot()) }),
      });
      try {
        await p.runner.ingestEvents();
      } finally {
        await p.close();
      }
      const { loaded, snap } = seen;
      if (!loaded || !snap) throw new Error('the ingest workflow ended without loading and publishing');
      const r = { ...loaded, snapshot: { path: snap.path, published: snap.published === true, generation: snap.generation ?? null } };
      ctx.out(r, humanIngest, o.json);
      if (r.failed) process.exitCode = 1;
    });
}

// --- the orchestration's steps, run in-process by the local runner (worker/local.ts) -----------------------

export function intOption(name: string, min = 1) {
  return (v: string): number => {
    const n = Number(v);
    if (!/^\s*\d+\s*$/.test(v) || !Number.isInteger(n) || n < min) throw new UsageError(`${name} must be a whole number of at least ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
}

export function kindsOption(v: string): ReportKind[] {
  const list = v.split(',').map((k) => k.trim()).filter(Boolean);
  for (const k of list) {
    if (!(REPORT_KINDS as readonly string[]).includes(k)) throw new UsageError(`--kinds: unknown report kind ${JSON.stringify(k)}; expected ${REPORT_KINDS.join(', ')}`);
  }
  if (list.length === 0) throw new UsageError('--kinds needs at least one report kind');
  return list as ReportKind[];
}

/** Runs fn over a pipeline opened for this step, with a progress bar for report windows. */
async function withPipeline<T>(cfg: Config, json: boolean | undefined, label: string, fn: (p: Awaited<ReturnType<typeof openPipeline>>, progress: ReturnType<typeof progressBar>) => Promise<T>, opts: PipelineOptions = {}): Promise<T> {
  const progress = progressBar(json);
  const p = await openPipeline(cfg, { ...opts, wrap: countWindows(() => progress.tick()) });
  try {
    return await fn(p, progress);
  } finally {
    progress.stop();
    await p.close();
  }
}

function registerNightly(run: Command, ctx: Ctx): void {
  run
    .command('nightly')
    .description('Refresh every report over its trailing windows, then events, enrichment, ratios and alerts, notices, the snapshot')
    .option('--as-of <iso>', 'nominal time the run covers (default: now)', instantOption('--as-of'))
    .option('--lookback-days <n>', 'days re-fetched, as-of day included (default CBP_LOOKBACK_DAYS, 60)', intOption('--lookback-days'))
    .option('--window-days <n>', 'days per chargebacks / prevention window (default CBP_WINDOW_DAYS, 7)', intOption('--window-days'))
    .option('--kinds <list>', 'report kinds, comma-separated (default: chargebacks,prevention,mid_report)', kindsOption)
    .option('--parallelism <n>', 'report windows fetched at once (default CBP_REPORT_PARALLELISM, 2)', intOption('--parallelism'))
    .option('--json', 'print the result as JSON')
    .action(async (o: { asOf?: string; lookbackDays?: number; windowDays?: number; kinds?: ReportKind[]; parallelism?: number; json?: boolean }) => {
      const cfg = ctx.config();
      requireFor(cfg, ['reporting', 'events'], 'cbp run nightly');
      const r = await withPipeline(cfg, o.json, 'nightly', async (p, progress) => {
        const input = {
          asOf: o.asOf ?? new Date().toISOString(),
          lookbackDays: o.lookbackDays ?? cfg.lookbackDays,
          windowDays: o.windowDays ?? cfg.windowDays,
          parallelism: o.parallelism ?? cfg.reportParallelism,
          ...(o.kinds ? { kinds: o.kinds } : {}),
        };
        progress.start(nightlyTasks(input.kinds ?? REPORT_KINDS, input.asOf, input.lookbackDays, input.windowDays).length, 'nightly');
        return p.runner.nightly(input);
      });
      if (r.warning) ctx.logger().warn({ runId: r.runId, asOf: r.asOf, serviceTime: r.serviceTime }, r.warning);
      ctx.out(r, humanNightly, o.json);
    });
}

function registerBackfill(run: Command, ctx: Ctx): void {
  run
    .command('backfill')
    .description('Load history window by window (resumable: windows already done are skipped), then ratios and the snapshot')
    .requiredOption('--from <date>', 'first day, YYYY-MM-DD (UTC)', dayOption('--from'))
    .requiredOption('--to <date>', 'last day, YYYY-MM-DD (UTC), included', dayOption('--to'))
    .option('--kinds <list>', 'report kinds, comma-separated (default: chargebacks,prevention,mid_report)', kindsOption)
    .option('--window-days <n>', 'days per chargebacks / prevention window (default CBP_WINDOW_DAYS, 7)', intOption('--window-days'))
    .option('--parallelism <n>', 'windows loaded at once (default CBP_REPORT_PARALLELISM, 2)', intOption('--parallelism'))
    .option('--force', 'fetch every window of the range again, also those recorded as done (loads stay idempotent)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { from: string; to: string; kinds?: ReportKind[]; windowDays?: number; parallelism?: number; force?: boolean; json?: boolean }) => {
      if (o.from > o.to) throw new UsageError(`--from ${o.from} is after --to ${o.to}`);
      const cfg = ctx.config();
      requireFor(cfg, ['reporting'], 'cbp run backfill');
      const r = await withPipeline(cfg, o.json, 'backfill', async (p, progress) => {
        const input = {
          from: o.from,
          to: o.to,
          windowDays: o.windowDays ?? cfg.windowDays,
          parallelism: o.parallelism ?? cfg.reportParallelism,
          ...(o.kinds ? { kinds: o.kinds } : {}),
          ...(o.force ? { force: true } : {}),
        };
        progress.start(backfillTasks(input.kinds ?? REPORT_KINDS, input.from, input.to, input.windowDays).length, 'backfill');
        return p.runner.backfill(input);
      });
      if (r.status === 'done' && r.warning) ctx.logger().warn({ runId: r.runId, open: r.open, openWindows: r.openWindows, serviceTime: r.serviceTime }, r.warning);
      ctx.out(r, humanBackfill, o.json);
    });
}

function registerSubscriptions(run: Command, ctx: Ctx): void {
  run
    .command('subscriptions')
    .description("Make cbp's own webhook subscriptions (all 8 event types) match this receiver: re-activate those switched off, re-create those that failed vetting; other consumers' subscriptions are left alone and listed")
    .option('--webhook-url <url>', 'where the service pushes events (default CBP_WEBHOOK_PUBLIC_URL); https, or http on loopback')
    .option('--email <address>', "e-mail for the service's subscription notices (default CBP_SUBSCRIPTION_EMAIL)")
    .option('--force-auth', 're-send the Basic credentials to every subscription (password rotation)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { webhookUrl?: string; email?: string; forceAuth?: boolean; json?: boolean }) => {
      // The flags stand in for their settings, which are then not required.
      const cfg = { ...ctx.config(), ...(o.webhookUrl ? { webhookPublicUrl: o.webhookUrl } : {}), ...(o.email ? { subscriptionEmail: o.email } : {}) };
      // The password is still required here although only the activities read it: refused before anything is
      // listed, with every missing setting named at once, rather than failing halfway through the plan.
      requireFor(cfg, ['events', 'webhook'], 'cbp run subscriptions', ['webhookPublicUrl', 'subscriptionEmail']);
      const r = await withPipeline(cfg, true, 'subscriptions', (p) =>
        p.runner.reconcileSubscriptions({
          webhookUrl: cfg.webhookPublicUrl,
          email: cfg.subscriptionEmail,
          auth: { username: cfg.webhookUsername },
          ...(o.forceAuth ? { forceAuth: true } : {}),
        }),
      );
      ctx.out(r, humanReconcile, o.json);
    });
}

function registerOrders(run: Command, ctx: Ctx): void {
  run
    .command('orders')
    .description('Push new and changed orders from an NDJSON or CSV file to the order data interface (unchanged ones are skipped); exit 1 when any order is invalid or rejected')
    .requiredOption('--source <file>', 'NDJSON (one order per line) or CSV (header row) file of orders (docs/orders.md)')
    .option('--batch-size <n>', 'records read per batch (default 500)', intOption('--batch-size'))
    .option('--retry-rejected', 'send again the orders the service refused in earlier runs, even if unchanged')
    .option('--json', 'print the result as JSON')
    .action(async (o: { source: string; batchSize?: number; retryRejected?: boolean; json?: boolean }) => {
      const cfg = ctx.config();
      requireFor(cfg, ['data'], 'cbp run orders');
      // Before the pipeline opens: a typo in the path must not create or lock the store.
      if (!existsSync(o.source)) throw new NotFoundError(`order file ${o.source} does not exist: give the NDJSON or CSV file of orders with --source`);
      const r: PushOrdersReport = await withPipeline(cfg, true, 'orders', async (p) => {
        const result = await p.runner.pushOrders({ source: o.source, ...(o.batchSize ? { batchSize: o.batchSize } : {}), ...(o.retryRejected ? { retryRejected: true } : {}) });
        // The details stay out of the run's result (it is workflow history under Temporal): read them from the store.
        const rejected = await rejectedOrders(p.store, { runId: result.runId, limit: ORDER_DETAIL_LIMIT });
        const invalid = await invalidOrderLines(p.store, { runId: result.runId, limit: ORDER_DETAIL_LIMIT });
        return {
          ...result,
          rejectedOrders: rejected.orders.map(({ order_id, http_status, message }) => ({ order_id, http_status, message })),
          invalidLines: invalid.lines.map(({ line, order_id, message }) => ({ line, order_id, message })),
        };
      });
      ctx.out(r, humanPush, o.json);
      if (ordersNeedAttention(r)) process.exitCode = 1;
    });
}

function registerDigest(run: Command, ctx: Ctx): void {
  run
    .command('digest')
    .description('Send the digest e-mail now: MIDs at risk with their headroom and fees, cases due soon, two trend charts (as the digest schedule does; CBP_SMTP_URL and CBP_ALERT_EMAIL_TO)')
    .option('--json', 'print what was sent as JSON')
    .action(async (o: { json?: boolean }) => {
      const cfg = ctx.config();
      // Refused before the store is opened when no e-mail is configured (exit 2, naming the settings).
      const digest = await import('../../alerts/digest.ts');
      digest.digestMailOptions(cfg);
      const r = await withPipeline(cfg, true, 'digest', (p) => p.runner.sendDigest());
      ctx.out(r, digest.digestSentText, o.json);
    });
}

/** The steps of `cbp run`: add one entry per step (each registers its own subcommand on the group). */
const steps: Array<(run: Command, ctx: Ctx) => void> = [
  registerIngest,
  registerNightly,
  registerBackfill,
  registerSubscriptions,
  registerOrders,
  registerDigest,
  // @run-steps (keep this marker: one entry per `cbp run` subcommand above it)
];

export function register(program: Command, ctx: Ctx): void {
  const run = program.command('run').description('Run one pipeline step now, in this process (ingest, nightly, backfill, subscriptions, orders, digest)');
  for (const step of steps) step(run, ctx);
}
