// cbp demo (npm run demo): the whole pipeline end to end with no configuration at all. A sandbox of the
// service and a webhook receiver run in this process; the clients point at them through a Config built here
// (process.env is never touched); the same local runner as `cbp run` does the work. Everything is closed at
// the end, so the process exits by itself. The command itself is registered by demo-command.ts, which loads
// this module (sandbox, receiver, DuckDB) only when the demo runs.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../../lib/config.ts';
import { sandboxEnv } from '../sandbox-env.ts';
import { prepareDemoDir } from '../demo-dir.ts';
import { createLogger } from '../../lib/log.ts';
import { startSandbox, type RunningSandbox } from '../../sandbox/index.ts';
import { startReceiver, type RunningReceiver } from '../../webhook/index.ts';
import { openPipeline, type Pipeline } from '../pipeline.ts';
import { renderTable } from './sql.ts';
import { latestNotices, programRatiosOf } from '../../store/demo-queries.ts';
import { addDays, utcDay } from '../../lib/utc.ts';
import { REPORT_KINDS } from '../../contract/reporting.ts';
import { DEMO_DAYS, DEMO_START } from './demo-command.ts';

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
}

export interface DemoResult {
  dataDir: string;
  dbPath: string;
  snapshotPath: string;
  asOf: string;
  ratios: Array<Record<string, unknown>>;
  alerts: Array<Record<string, unknown>>;
  sqlCommand: string;
  ms: number;
}

/** Settings of the demo: the sandbox's base URLs and credentials, a store under dataDir. */
/** The e-mail the demo's subscriptions give the service for its notices. */
const DEMO_EMAIL = 'demo@cbp.example';

export function demoConfig(
  sb: RunningSandbox,
  dataDir: string,
  webhook: { username: string; password: string; url: string },
  thresholdsFile?: string,
  alertWebhookUrl?: string,
): Config {
  const env: Record<string, string> = {
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
  const step = (n: number, label: string, detail: string) => {
    const now = Date.now();
    write(`[${n}/9] ${label.padEnd(13)} ${detail}  (${secs(now - tStep)})`);
    tStep = now;
  };
  const dataDir = prepareDemoDir(opts.dataDir, opts.configured ?? []);

  let sb: RunningSandbox | undefined;
  let receiver: RunningReceiver | undefined;
  let pipeline: Pipeline | undefined;
  let alertSink: AlertSink | undefined;
  try {
    sb = await startSandbox({ port: 0, start: opts.start ?? DEMO_START, ...(opts.seed !== undefined ? { seed: opts.seed } : {}) });
    const world = sb.state.world;
    const clock0 = (await admin<{ now: string }>(sb, 'GET', '/clock')).now;
    step(1, 'sandbox', `${sb.origin} · clock ${clock0} · ${world.mids.length} MIDs · ${world.chargebacks.length} chargebacks from ${world.from} (built-in scenario)`);

    const webhook = { username: 'cbp-demo', password: randomBytes(18).toString('base64url') };
    receiver = await startReceiver({ ...webhook, journalDir: path.join(dataDir, 'journal'), host: '127.0.0.1', port: 0 });
    step(2, 'receiver', `${receiver.url} · Basic user ${webhook.username} (password generated) · journal ${path.relative(process.cwd(), receiver.journalDir) || receiver.journalDir}`);

    // The service does not report a merchant account's Visa region; its merchant knows it. The demo writes
    // it into a thresholds file, as a user would, so the CEMEA account is judged by the CEMEA VAMP rule.
    const thresholdsFile = path.join(dataDir, 'thresholds.json');
    writeFileSync(
      thresholdsFile,
      JSON.stringify({ version: 1, mids: Object.fromEntries(world.mids.map((m) => [m.mid, { region: m.region }])) }, null, 2) + '\n',
    );
    // Where alert notices go: a local endpoint standing in for the merchant's alerting webhook (HMAC-signed).
    alertSink = await startAlertSink();
    const cfg = demoConfig(sb, dataDir, { ...webhook, url: receiver.url }, thresholdsFile, alertSink.url);
    pipeline = await openPipeline(cfg, { logger: createLogger({ level: 'warn' }), now: () => new Date().toISOString() });
    const rec = await pipeline.runner.reconcileSubscriptions({
      webhookUrl: receiver.url,
      email: DEMO_EMAIL,
      // Only the username: the activities add the password from cfg (CBP_WEBHOOK_PASSWORD).
      auth: { username: webhook.username },
    });
    const subs = await admin<Array<{ active: boolean; event_type: string; vetting?: unknown }>>(sb, 'GET', '/subscriptions');
    const active = subs.filter((s) => s.active).length;
    step(3, 'subscriptions', `created ${rec.created.length} (all 8 event types) · vetting: the service POSTed registration.new to the receiver → ${active}/${subs.length} active`);

    // As a merchant's systems would: orders pushed as they settle, while the service's time passes and
    // its events flow to the receiver. A week at a time keeps each push ahead of the cases that match it.
    const ordersFile = path.join(dataDir, 'orders.ndjson');
    const totalDays = opts.days ?? DEMO_DAYS;
    let now = clock0;
    let pushedNew = 0;
    let rejected = 0;
    let invalid = 0;
    let events = 0;
    let deliveries = 0;
    for (let done = 0; done < totalDays; ) {
      const due = world.orders.filter((o) => o.order_date <= now);
      writeFileSync(ordersFile, due.map((o) => JSON.stringify(o)).join('\n') + '\n');
      const pushed = await pipeline.runner.pushOrders({ source: ordersFile });
      pushedNew += pushed.new + pushed.changed;
      rejected += pushed.rejected;
      invalid += pushed.invalid;
      const days = Math.min(7, totalDays - done);
      const moved = await admin<{ now: string; events: number; deliveries: number }>(sb, 'POST', '/clock', { advance: `P${days}D` });
      now = moved.now;
      events += moved.events;
      deliveries += moved.deliveries;
      done += days;
    }
    step(4, 'orders', `pushed ${pushedNew} of ${world.orders.length} scenario orders as they settled (week by week) · ${rejected} rejected · ${invalid} invalid`);
    const asOf = now;
    // Sealing the open segment makes every event received so far loadable now (ingest reads sealed ones).
    await receiver.close();
    const journaled = receiver.journal.status() as unknown as { appended?: number };
    receiver = undefined;
    step(5, 'clock', `${totalDays} days of service time to ${asOf}: ${events} events, ${deliveries} deliveries to the receiver${journaled.appended !== undefined ? ` · ${journaled.appended} journaled` : ''}`);

    const to = addDays(utcDay(asOf), -1);
    const bf = await pipeline.runner.backfill({ from: world.from, to, windowDays: opts.backfillWindowDays ?? 31, kinds: [...REPORT_KINDS], parallelism: 2 });
    step(6, 'backfill', `${world.from}..${to}, ${REPORT_KINDS.join(' + ')}: ${bf.loaded} windows, ${bf.records} records, ${bf.quarantined} quarantined`);

    const ing = await pipeline.runner.ingestEvents({});
    step(7, 'ingest', `${ing.events} events from ${ing.segments} journal segments (${ing.duplicates} duplicates)`);

    const nightly = await pipeline.runner.nightly({ asOf, lookbackDays: 60, windowDays: 7, parallelism: 2 });
    step(
      8,
      'nightly',
      `as of ${asOf} (the sandbox clock): ${nightly.windows.length} windows, ${nightly.enrich.lookups} lookups, ${nightly.ratios.alerts} alert(s) firing, ${nightly.ratios.noticesQueued} notice(s) queued, ${nightly.notices.sent} delivered to the alert webhook`,
    );

    const store = pipeline.store;
    const month = addDays(`${utcDay(asOf).slice(0, 7)}-01`, -1).slice(0, 7);
    const ratios = await programRatiosOf(store, month);
    const alerts = await latestNotices(store, 20);
    step(9, 'results', `${ratios.length} program ratios for ${month}, ${alerts.length} alert notice(s)`);

    const cell = (v: unknown) => (v === null || v === undefined ? null : typeof v === 'object' ? JSON.stringify(v) : (v as string | number | boolean));
    const show = (rows: Array<Record<string, unknown>>, cols: string[]) => renderTable(cols, rows.map((r) => cols.map((c) => cell(r[c]))));
    write('');
    write(`Chargeback ratios, ${month} (count metrics; level = the program level reached):`);
    write(show(ratios, ['mid', 'network', 'program', 'numerator', 'denominator', 'ratio_pct', 'level']));
    write(`(VAMP adds TC40 fraud reports, which arrive only as events: months before ${utcDay(clock0)}, when the demo subscribed, count disputes alone.)`);
    write('');
    write('Alerts raised (newest months first; notify = false: an older month, kept as history, no one paged):');
    write(alerts.length ? show(alerts, ['kind', 'mid', 'network', 'program', 'level', 'month', 'ratio_pct', 'notify']) : '(none)');
    for (const a of alertSink.received) {
      write(`Alert webhook received (signed ${a.signature ? a.signature.slice(0, 14) + '…' : 'no'}): ${String(a.body.message ?? JSON.stringify(a.body))}`);
    }
    const snapshotPath = cfg.snapshotPath;
    const rel = path.relative(process.cwd(), snapshotPath) || snapshotPath;
    const sqlCommand = `npx cbp sql --snapshot ${rel} "SELECT mid, network, program, month, round(ratio_pct, 2) AS pct FROM mart_ratios WHERE metric = 'count' AND NOT is_projection ORDER BY ratio DESC NULLS LAST LIMIT 10"`;
    write('');
    write('Query the published snapshot (read-only; worked examples in sql/queries/):');
    write(`  ${sqlCommand}`);
    write(`  npx cbp sql --snapshot ${rel} --file sql/queries/top_reason_codes.sql`);
    const relDir = path.relative(process.cwd(), dataDir) || dataDir;
    write(`Or point any command at the demo's data: CBP_DATA_DIR=${relDir} npx cbp ratios --month ${month}   (see the README's analyst's guide)`);
    write(`The analyst's report (cbp report), to open in a browser: ${path.relative(process.cwd(), (await (await import('./report.ts')).writeReport({ config: cfg, out: path.join(dataDir, 'report.html') })).out)}`);
    const ms = Date.now() - t0;
    write('');
    write(`demo finished in ${secs(ms)}; everything it started is closed. Data: ${path.relative(process.cwd(), dataDir) || dataDir}`);
    return { dataDir, dbPath: cfg.dbPath, snapshotPath, asOf, ratios, alerts, sqlCommand, ms };
  } finally {
    await pipeline?.close().catch(() => undefined);
    await receiver?.close().catch(() => undefined);
    await sb?.close().catch(() => undefined);
    await alertSink?.close().catch(() => undefined);
  }
}

interface AlertSink {
  url: string;
  received: Array<{ signature: string | undefined; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

/** A loopback HTTP endpoint that records the alert notices it is sent. */
async function startAlertSink(): Promise<AlertSink> {
  const received: AlertSink['received'] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        received.push({ signature: req.headers['x-cbp-signature'] as string | undefined, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
      } catch {
        // not JSON: still answered, nothing recorded
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    received,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
