// cbp demo (npm run demo): the whole pipeline end to end with no configuration at all. A sandbox of the
// service and a webhook receiver run in this process; the clients point at them through a Config built here
// (process.env is never touched); the same local runner as `cbp run` does the work. Everything is closed at
// the end, so the process exits by itself. The command itself is registered by demo-command.ts, which loads
// this module (sandbox, receiver, DuckDB) only when the demo runs. With `temporal` (cbp demo --temporal) the
// same story's runs go through a real Temporal server (cli/demo-temporal.ts): a dev server and a worker started
// here, the schedules applied, history as a schedule backfill and the nightly as a triggered schedule run.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { pushOrdersAsTheySettle, startAlertSink, type AlertSink } from '../demo-story.ts';
import { printDemoTables, type DueSoon } from '../demo-results.ts';
import { startLocalPostgres, type LocalPostgres } from '../../lib/local-postgres.ts';
import { maskLake } from '../../lib/lake-setting.ts';
import path from 'node:path';
import { DATA_DIR_SETTINGS, loadConfig, type Config } from '../../lib/config.ts';
import { sandboxEnv } from '../sandbox-env.ts';
import { DEMO_MARKER, prepareDemoDir } from '../demo-dir.ts';
import { createLogger } from '../../lib/log.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/index.ts';
import { startReceiver, type RunningReceiver } from '../../webhook/index.ts';
import { openPipeline, type Pipeline } from '../pipeline.ts';
import { latestNotices, programRatiosOf } from '../../store/demo-queries.ts';
import { addDays, dayNumber, utcDay } from '../../lib/utc.ts';
import { REPORT_KINDS } from '../../contract/reporting.ts';
import { DEMO_DAYS, DEMO_START } from './demo-command.ts';
import type { TemporalDemo } from '../demo-temporal.ts';
import type { NightlyResult } from '../../workflows/nightly.ts';

export interface DemoOptions {
  /** Wiped at start, but only if an earlier demo created it (its marker file) or it is empty: see demo-dir.ts. */
  dataDir: string;
  /** Paths of the configured store (data dir, DuckDB file, snapshot, journal): the demo refuses a folder holding one. */
  configured?: Array<{ name: string; path: string }>;
  /** Sandbox clock start (ISO date). Default 2025-12-01: the demo then lives through December, so every
   * event of that month (TC40 fraud reports included, which only arrive as events) reaches the store. */
  start?: string;
  /** Days of sandbox time let pass, a week at a time, pushing the orders settled so far before each week. Default 45. */
  days?: number;
  /** Days per chargebacks / prevention window of the backfill. Default 31. */
  backfillWindowDays?: number;
  seed?: number;
  /** Where step lines go. Default stdout. */
  write?: (line: string) => void;
  /**
   * Run the workflows through a real Temporal server: a dev server of this `temporal` binary, started and
   * stopped here. Aborting `signal` (Ctrl-C) stops every wait; everything started is stopped all the same.
   */
  temporal?: { cli: string; signal: AbortSignal };
  /**
   * The store a lake (CBP_STORE and CBP_LAKE_DATA_PATH), instead of the DuckDB file under dataDir; 'local': a lake of
   * the demo's own, catalogued in a PostgreSQL it starts under dataDir (lib/local-postgres.ts) and stops at the end.
   */
  lake?: { store: string; dataPath: string } | 'local';
}

export interface DemoResult {
  dataDir: string;
  dbPath: string;
  snapshotPath: string;
  asOf: string;
  ratios: Array<Record<string, unknown>>;
  alerts: Array<Record<string, unknown>>;
  /** Open cases due within 7 days or overdue on the service's day, and the due notices the alert webhook got. */
  dueSoon: DueSoon;
  sqlCommand: string;
  ms: number;
  /** With --temporal: the server it ran on (stopped by now) and what ran there. */
  temporal?: {
    address: string;
    uiUrl?: string;
    serverPid: number;
    dbFile: string;
    taskQueue: string;
    schedules: { nightly: string; ingest: string };
    workflows: string[];
  };
}

/** Settings of the demo: the sandbox's base URLs and credentials, a store under dataDir. */
/** The Temporal CLI as a command to type: relative inside the working folder (.tools/temporal/bin/temporal), else absolute. */
export function shownCli(cli: string): string {
  const r = path.relative(process.cwd(), path.resolve(cli));
  return r && !r.startsWith('..') && !path.isAbsolute(r) ? r : path.resolve(cli);
}

/** The e-mail the demo's subscriptions give the service for its notices. */
const DEMO_EMAIL = 'demo@cbp.example';

export function demoConfig(
  sb: RunningSandbox,
  dataDir: string,
  webhook: { username: string; password: string; url: string },
  thresholdsFile?: string,
  alertWebhookUrl?: string,
  lake?: { store: string; dataPath: string },
): Config {
  const env: Record<string, string> = {
    ...(lake ? { CBP_STORE: lake.store, CBP_LAKE_DATA_PATH: lake.dataPath } : {}),
    ...(thresholdsFile ? { CBP_THRESHOLDS_FILE: thresholdsFile } : {}),
    ...(alertWebhookUrl ? { CBP_ALERT_WEBHOOK_URL: alertWebhookUrl, CBP_ALERT_WEBHOOK_SECRET: randomBytes(18).toString('base64url') } : {}),
    ...sandboxEnv(sb, dataDir),
    CBP_WEBHOOK_USERNAME: webhook.username,
    CBP_WEBHOOK_PASSWORD: webhook.password,
    CBP_WEBHOOK_PUBLIC_URL: webhook.url,
    CBP_SUBSCRIPTION_EMAIL: DEMO_EMAIL,
    CBP_LOG_LEVEL: 'warn',
  };
  return loadConfig({ env });
}

async function admin<T>(sb: RunningSandbox, method: 'GET' | 'POST', route: string, body?: unknown): Promise<T> {
  const res = await fetch(`${sb.admin}${route}`, {
    method,
    ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`sandbox admin ${method} ${route} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

function secs(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

export async function runDemo(opts: DemoOptions): Promise<DemoResult> {
  const write = opts.write ?? ((l: string) => process.stdout.write(`${l}\n`));
  const t0 = Date.now();
  let tStep = t0;
  const signal = opts.temporal?.signal;
  const steps = opts.temporal ? 10 : 9;
  let stepNo = 0;
  const step = (label: string, detail: string) => {
    const now = Date.now();
    write(`[${++stepNo}/${steps}] ${label.padEnd(13)} ${detail}  (${secs(now - tStep)})`);
    tStep = now;
    if (signal?.aborted) throw signal.reason;
  };
  const replacing = existsSync(path.join(path.resolve(opts.dataDir), DEMO_MARKER));
  const dataDir = prepareDemoDir(opts.dataDir, opts.configured ?? []);
  let postgres: LocalPostgres | undefined;
  let lake = opts.lake === 'local' ? undefined : opts.lake;
  const rel = (p: string) => path.relative(process.cwd(), p) || p;
  const totalDays = opts.days ?? DEMO_DAYS;
  // The service time: from the sandbox's start day, and the day it ends on (the nightly covers it).
  const firstDay = utcDay(opts.start ?? DEMO_START);
  const lastDay = addDays(firstDay, totalDays);
  // The first line: whose data this folder now holds.
  write(
    `Data folder ${rel(dataDir)}: ${replacing ? "an earlier demo's data there was replaced" : 'new'} · service time ${firstDay}..${lastDay}` +
      (opts.temporal
        ? ` (with --temporal it ends today, since the nightly is a schedule's run as of now; the local demo's is ${DEMO_START}..${addDays(DEMO_START, DEMO_DAYS)})`
        : ''),
  );

  let sb: RunningSandbox | undefined;
  let receiver: RunningReceiver | undefined;
  let pipeline: Pipeline | undefined;
  let secondHost: Pipeline | undefined;
  let alertSink: AlertSink | undefined;
  let tdemo: TemporalDemo | undefined;
  const workflows: string[] = [];
  try {
    if (opts.lake === 'local') {
      postgres = await startLocalPostgres(path.join(dataDir, 'postgres'));
      postgres.createDb('cbp');
      lake = { store: `ducklake:postgres:${postgres.dsn('cbp')}`, dataPath: path.join(dataDir, 'lake') };
      mkdirSync(lake.dataPath, { recursive: true });
      write(`[lake] PostgreSQL ${postgres.port} (catalog) · data ${rel(lake.dataPath)}: the store is a DuckLake lake, stopped with the demo`);
    }
    sb = await startSandbox({ port: 0, start: opts.start ?? DEMO_START, ...(opts.seed !== undefined ? { seed: opts.seed } : {}) });
    const service = sb;
    const world = sb.state.world;
    const clock0 = (await admin<{ now: string }>(sb, 'GET', '/clock')).now;
    step('sandbox', `${sb.origin} · clock ${clock0} · ${world.mids.length} MIDs · ${world.chargebacks.length} chargebacks from ${world.from} (built-in scenario)`);

    const webhook = { username: 'cbp-demo', password: randomBytes(18).toString('base64url') };
    receiver = await startReceiver({ ...webhook, journalDir: path.join(dataDir, 'journal'), host: '127.0.0.1', port: 0 });
    step('receiver', `${receiver.url} · Basic user ${webhook.username} (password generated) · journal ${rel(receiver.journalDir)}`);

    // The service does not report a merchant account's Visa region; its merchant knows it. The demo writes
    // it into a thresholds file, as a user would, so the CEMEA account is judged by the CEMEA VAMP rule.
    const thresholdsFile = path.join(dataDir, 'thresholds.json');
    writeFileSync(
      thresholdsFile,
      JSON.stringify({ version: 1, mids: Object.fromEntries(world.mids.map((m) => [m.mid, { region: m.region }])) }, null, 2) + '\n',
    );
    // The rules travel with the data: any command pointed at this folder (CBP_DATA_DIR) judges by them (lib/config.ts).
    writeFileSync(path.join(dataDir, DATA_DIR_SETTINGS), JSON.stringify({ CBP_THRESHOLDS_FILE: 'thresholds.json' }, null, 2) + '\n');
    // Where alert notices go: a local endpoint standing in for the merchant's alerting webhook (HMAC-signed).
    alertSink = await startAlertSink();
    const cfg = demoConfig(sb, dataDir, { ...webhook, url: receiver.url }, thresholdsFile, alertSink.url, lake);
    pipeline = await openPipeline(cfg, { logger: createLogger({ level: 'warn' }), now: () => new Date().toISOString() });
    // The workflows' runs: the local runner, or through the Temporal server.
    const runner = pipeline.runner;
    let runs: Pick<typeof runner, 'reconcileSubscriptions' | 'pushOrders'> = runner;
    if (opts.temporal) {
      const { startTemporalDemo } = await import('../demo-temporal.ts');
      // Each nightly of the demo's schedule covers all the service's history (from world.from), one window a kind (the
      // MID report by month): a schedule backfill of a night then loads the history `cbp run backfill` loads, in fewer fetches.
      const lookbackDays = dayNumber(lastDay) - dayNumber(world.from) + 1;
      // On a lake, a second worker as on a second host: a data folder of its own, the same lake and service.
      if (lake) {
        secondHost = await openPipeline(demoConfig(sb, path.join(dataDir, 'host-b'), { ...webhook, url: receiver.url }, thresholdsFile, alertSink.url, lake), {
          logger: createLogger({ level: 'warn' }), now: () => new Date().toISOString(),
        });
      }
      tdemo = await startTemporalDemo({
        cli: opts.temporal.cli,
        dataDir,
        activities: pipeline.activities,
        ...(secondHost ? { secondHost: secondHost.activities } : {}),
        nightlyInput: { windowDays: lookbackDays, lookbackDays, kinds: [...REPORT_KINDS], parallelism: 2 },
        signal: opts.temporal.signal,
      });
      const t = tdemo;
      step(
        'temporal',
        `dev server ${rel(opts.temporal.cli)} (pid ${t.server.pid}) at ${t.server.address}, state in ${rel(t.dbFile)} · ` +
          `web UI ${t.server.uiUrl} (open it now: schedules, runs, activities) · ${t.hostQueue
            ? `two workers in this process as on two hosts of the lake: A on task queue ${t.taskQueue} and its own ${t.hostQueue} (its journal's ingest), B on ${t.taskQueue}`
            : `worker in this process on task queue ${t.taskQueue}`} · ` +
          `schedules ${t.schedules.nightly} and ${t.schedules.ingest} applied (paused: the demo starts their runs)`,
      );
      runs = {
        reconcileSubscriptions: async (input) => {
          const r = await t.reconcileSubscriptions(input);
          workflows.push(r.runId.split('/')[0]!);
          return r;
        },
        pushOrders: async (input) => {
          const r = await t.pushOrders(input);
          workflows.push(r.runId.split('/')[0]!);
          return r;
        },
      };
    }
    const rec = await runs.reconcileSubscriptions({
      webhookUrl: receiver.url,
      email: DEMO_EMAIL,
      // Only the username: the activities add the password from cfg (CBP_WEBHOOK_PASSWORD).
      auth: { username: webhook.username },
    });
    const subs = await admin<Array<{ active: boolean; event_type: string; vetting?: unknown }>>(sb, 'GET', '/subscriptions');
    const active = subs.filter((s) => s.active).length;
    step(
      'subscriptions',
      `created ${rec.created.length} (all 8 event types) · vetting: the service POSTed registration.new to the receiver → ${active}/${subs.length} active` +
        (tdemo ? ` · workflow ${rec.runId.split('/')[0]}` : ''),
    );

    const moved = await pushOrdersAsTheySettle({
      dataDir, orders: world.orders, clock0, totalDays, push: (source) => runs.pushOrders({ source }),
      advance: (days) => admin(service, 'POST', '/clock', { advance: `P${days}D` }),
    });
    const { pushedNew, rejected, invalid, events, deliveries } = moved;
    step(
      'orders',
      `pushed ${pushedNew} of ${world.orders.length} scenario orders as they settled (week by week) · ${rejected} rejected · ${invalid} invalid` +
        (tdemo ? ` · ${Math.ceil(totalDays / 7)} pushOrders workflows` : ''),
    );
    const asOf = moved.now;
    // Sealing the open segment makes every event received so far loadable now (ingest reads sealed ones).
    await receiver.close();
    const journaled = receiver.journal.status() as unknown as { appended?: number };
    receiver = undefined;
    step('clock', `${totalDays} days of service time to ${asOf}: ${events} events, ${deliveries} deliveries to the receiver${journaled.appended !== undefined ? ` · ${journaled.appended} journaled` : ''}`);

    let nightly: NightlyResult;
    let nightlyAsOf: string;
    let earlier: NightlyResult[] = [];
    if (!tdemo) {
      const to = addDays(utcDay(asOf), -1);
      const bf = await runner.backfill({ from: world.from, to, windowDays: opts.backfillWindowDays ?? 31, kinds: [...REPORT_KINDS], parallelism: 2 });
      step('backfill', `${world.from}..${to}, ${REPORT_KINDS.join(' + ')}: ${bf.loaded} windows, ${bf.records} records, ${bf.quarantined} quarantined`);

      const ing = await runner.ingestEvents({});
      step('ingest', `${ing.events} events from ${ing.segments} journal segments (${ing.duplicates} duplicates)`);

      nightly = await runner.nightly({ asOf, lookbackDays: 60, windowDays: 7, parallelism: 2 });
      nightlyAsOf = `as of ${asOf} (the sandbox clock)`;
    } else {
      // Events first, so every nightly below (backfilled or not) judges disputes and TC40 reports together.
      const ing = await tdemo.triggerIngest();
      workflows.push(ing.workflowId);
      step('ingest', `triggered run ${ing.workflowId} of ${tdemo.schedules.ingest}: ${ing.result.events} events from ${ing.result.segments} journal segments (${ing.result.duplicates} duplicates)`);

      // The two nights before the demo's last day, replayed as the schedule would have run them: one run per
      // nominal night, each with that night as its asOf (TemporalScheduledStartTime).
      const from = addDays(lastDay, -2);
      const to = addDays(lastDay, -1);
      const nights = await tdemo.backfillNights(from, to);
      workflows.push(...nights.map((n) => n.workflowId));
      const windows = nights.reduce((n, r) => n + r.result.windows.length, 0);
      const records = nights.reduce((n, r) => n + r.result.windows.reduce((m, w) => m + w.records, 0), 0);
      step(
        'backfill',
        `schedule backfill of ${tdemo.schedules.nightly} over the nights ${from}..${to}: ${nights.length} runs, one per night (${nights.map((n) => n.workflowId).join(', ')}), ` +
          `each over ${world.from}..its night, ${REPORT_KINDS.join(' + ')}: ${windows} windows, ${records} records`,
      );

      const t = await tdemo.triggerNightly();
      workflows.push(t.workflowId);
      nightly = t.result;
      nightlyAsOf = `triggered run ${t.workflowId} as of ${nightly.asOf} (the trigger's time; sandbox clock ${asOf})`;
      // The backfilled nights raised and sent the notices first: counted with the triggered run's.
      earlier = nights.map((n) => n.result);
    }
    const runsOf = [...earlier, nightly];
    const queued = runsOf.reduce((n, r) => n + r.ratios.noticesQueued, 0);
    // Deliveries count the due date notices too (alerts/due.ts): said apart from the alert notices, as the webhook got them.
    const dueSent = alertSink.received.filter((x) => x.body.kind === 'due').length;
    const sent = runsOf.reduce((n, r) => n + r.notices.sent, 0) - dueSent;
    step(
      'nightly',
      `${nightlyAsOf}: ${nightly.windows.length} windows, ${nightly.enrich.lookups} lookups, ${nightly.ratios.alerts} alert(s) firing, ${queued} notice(s) queued, ${sent} delivered to the alert webhook` +
        (earlier.length ? ` (over the ${runsOf.length} nightly runs)` : '') + (dueSent ? `; and ${dueSent} due date notice(s)` : ''),
    );
    if (nightly.warning) write(`WARNING: ${nightly.warning}`);

    // Every run has ended: the worker and the server are stopped, the schedules deleted, before the results
    // are read from the store (the one writer is this process either way).
    let temporal: DemoResult['temporal'];
    if (tdemo) {
      const t = tdemo;
      tdemo = undefined;
      await t.close();
      temporal = {
        address: t.server.address,
        ...(t.server.uiUrl ? { uiUrl: t.server.uiUrl } : {}),
        serverPid: t.server.pid,
        dbFile: t.dbFile,
        taskQueue: t.taskQueue,
        schedules: t.schedules,
        workflows,
      };
    }

    const store = pipeline.store;
    const month = addDays(`${utcDay(asOf).slice(0, 7)}-01`, -1).slice(0, 7);
    const ratios = await programRatiosOf(store, month);
    const alerts = await latestNotices(store, 20);
    step('results', `${ratios.length} program ratios for ${month}, ${alerts.length} alert notice(s)`);

    const dueSoon = await printDemoTables({ store, month, clock0, asOf, ratios, alerts, received: alertSink.received, write });
    const snapshotPath = cfg.snapshotPath;
    const relSnap = rel(snapshotPath);
    const sqlCommand = `npx cbp sql --snapshot ${relSnap} "SELECT mid, network, program, month, round(ratio_pct, 2) AS pct FROM mart_ratios WHERE metric = 'count' AND NOT is_projection ORDER BY ratio DESC NULLS LAST LIMIT 10"`;
    write('');
    if (lake) {
      write(`The store is the lake ${maskLake(lake.store)} (data ${rel(lake.dataPath)}); its PostgreSQL stops with the demo.`);
      write('Against a lake of your own, the same queries read it in place (docs/lake.md): CBP_STORE=ducklake:postgres:… CBP_LAKE_DATA_PATH=… npx cbp sql "…"');
    } else {
      write('Query the published snapshot (read-only; worked examples in sql/queries/):');
      write(`  ${sqlCommand}`);
      write(`  npx cbp sql --snapshot ${relSnap} --file sql/queries/top_reason_codes.sql`);
    }
    const relDir = rel(dataDir);
    if (!lake) write(`Or point any command at the demo's data (its rules, ${rel(path.join(dataDir, DATA_DIR_SETTINGS))}, come with it): CBP_DATA_DIR=${relDir} npx cbp ratios --month ${month}   (see the README's analyst's guide)`);
    write(`The analyst's report (cbp report), to open in a browser: ${path.relative(process.cwd(), (await (await import('./report.ts')).writeReport({ config: cfg, out: path.join(dataDir, 'report.html') })).out)}`);
    if (temporal) {
      write('');
      write(
        `Temporal: ${workflows.length} workflow runs on ${temporal.address}. The worker and the dev server (pid ${temporal.serverPid}) are stopped, the schedules deleted; ` +
          `the finished runs stay in ${rel(temporal.dbFile)}: \`${shownCli(opts.temporal!.cli)} server start-dev --db-filename ${rel(temporal.dbFile)}\` shows them in the web UI (http://localhost:8233).`,
      );
    }
    const ms = Date.now() - t0;
    write('');
    write(`demo finished in ${secs(ms)}; everything it started is closed. Data: ${relDir}`);
    return { dataDir, dbPath: cfg.dbPath, snapshotPath, asOf, ratios, alerts, dueSoon, sqlCommand, ms, ...(temporal ? { temporal } : {}) };
  } finally {
    // The worker first: its activities use the pipeline's store and clients.
    await tdemo?.close().catch(() => undefined);
    await pipeline?.close().catch(() => undefined);
    await secondHost?.close().catch(() => undefined);
    await receiver?.close().catch(() => undefined);
    await sb?.close().catch(() => undefined);
    await alertSink?.close().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
  }
}
