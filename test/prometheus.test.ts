// The metrics as an operator's Prometheus sees them: a real Prometheus server (Debian's package) scrapes a
// `cbp webhook` and a `cbp worker` (on a Temporal dev server) started here, traffic goes through both, and the
// values are read back through Prometheus' HTTP API. promtool checks the example alerting rules and runs their
// unit tests. Skipped without prometheus/promtool or a temporal CLI unless CBP_REQUIRE_PROMETHEUS=1 (CI).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { findTemporalCli, HOW_TO_GET_TEMPORAL } from '../lib/temporal-cli.ts';
import { startDevServer, type DevServer } from '../cli/temporal-dev.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { pollUntil, prometheusRequired, prometheusTitle, promtoolBin, skipPrometheus, startPrometheus, type RunningPrometheus } from './helpers/prometheus.ts';
import { tempDir } from './helpers/tmp.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CBP = cbpEntry();
const RULES_DIR = path.join(ROOT, 'docs', 'prometheus');
const USER = 'cbp-hook';
const PASS = 's3cret-pass-for-the-hook';
const temporalCli = findTemporalCli();

describe.skipIf(skipPrometheus)(prometheusTitle('the example alerting rules'), () => {
  it('pass promtool check rules', () => {
    const r = spawnSync(promtoolBin!, ['check', 'rules', path.join(RULES_DIR, 'alerts.yml')], { encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/SUCCESS: 7 rules found/);
  });

  it('pass their unit tests (promtool test rules)', () => {
    const r = spawnSync(promtoolBin!, ['test', 'rules', 'alerts.test.yml', 'alerts-daily.test.yml'], { cwd: RULES_DIR, encoding: 'utf8' });
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout.match(/SUCCESS/g)).toHaveLength(2);
  });
});

interface Child {
  proc: ChildProcess;
  out: () => string;
  stop(): Promise<void>;
}

/** A cbp command in the background; resolves once `ready` matches its stdout + stderr (or it has exited). */
async function background(args: string[], env: Record<string, string>, ready: RegExp): Promise<Child> {
  const base = cleanEnv();
  const proc = spawn(process.execPath, [CBP, ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<void>((resolve) => proc.once('close', () => resolve()));
  await new Promise<void>((resolve) => {
    const seen = (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) resolve();
    };
    proc.stdout!.on('data', seen);
    proc.stderr!.on('data', seen);
    void exited.then(() => resolve());
  });
  return {
    proc,
    out: () => out,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      await exited;
    },
  };
}

// The worker needs a Temporal dev server: without a temporal CLI the scrape is skipped, as the server suites are, unless
// CBP_REQUIRE_PROMETHEUS=1 (CI), where beforeAll fails saying how to get one.
const scrapeTitle = temporalCli || prometheusRequired
  ? prometheusTitle('a real Prometheus scraping cbp webhook and cbp worker')
  : `a real Prometheus scraping cbp webhook and cbp worker (skipped: no temporal CLI; ${HOW_TO_GET_TEMPORAL})`;
describe.skipIf(skipPrometheus || (!temporalCli && !prometheusRequired))(scrapeTitle, { timeout: 240_000 }, () => {
  const dir = tempDir();
  const data = path.join(dir, 'data');
  let server: DevServer | undefined;
  let receiver: Child | undefined;
  let worker: Child | undefined;
  let prometheus: RunningPrometheus | undefined;
  let eventsUrl = '';

  beforeAll(async () => {
    if (!temporalCli) throw new Error(`CBP_REQUIRE_PROMETHEUS=1 needs a Temporal dev server for the worker, and there is no temporal CLI. ${HOW_TO_GET_TEMPORAL}`);
    server = await startDevServer({ cli: temporalCli, headless: true });
    const env = { CBP_DATA_DIR: data, CBP_WEBHOOK_USERNAME: USER, CBP_WEBHOOK_PASSWORD: PASS, TEMPORAL_ADDRESS: server.address, TEMPORAL_TASK_QUEUE: 'cbp-prometheus-test', CBP_JOURNAL_SEGMENT_MAX_AGE_MS: '300' };
    receiver = await background(['webhook', '--port', '0', '--metrics-addr', '127.0.0.1:0', '--json'], env, /^\{"url".*\}\n/m);
    const started = JSON.parse(receiver.out().split('\n').find((l) => l.startsWith('{"url"'))!) as { url: string; metrics: string | null };
    expect(started.metrics, receiver.out()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    eventsUrl = started.url;
    worker = await background(['worker', '--metrics-addr', '127.0.0.1:0', '--grace', '5s'], env, /cbp worker: serving/);
    const workerMetrics = /metrics at (http:\/\/\S+\/metrics)/.exec(worker.out())?.[1];
    expect(workerMetrics, worker.out()).toBeDefined();
    prometheus = await startPrometheus(dir, { 'cbp-webhook': new URL(started.metrics!).host, 'cbp-worker': new URL(workerMetrics!).host });
  }, 180_000);

  afterAll(async () => {
    await prometheus?.stop();
    await worker?.stop();
    await receiver?.stop();
    await server?.stop();
  }, 60_000);

  it("reads the receiver's requests, refusals and acknowledgement latency back from Prometheus", async () => {
    const push = (guid: string, password = PASS) =>
      fetch(eventsUrl, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${USER}:${password}`).toString('base64')}`, 'content-type': 'application/json' },
        body: JSON.stringify({ event_guid: guid, event_type: 'chargeback.new' }),
      }).then((r) => r.status);
    expect(await Promise.all([push('p1'), push('p2'), push('p3')])).toEqual([200, 200, 200]);
    expect(await push('p4', 'not-the-password-at-all')).toBe(401);
    const p = prometheus!;
    expect(await pollUntil(() => p.value('up{job="cbp-webhook"}'), (v) => v === 1)).toBe(1);
    expect(await pollUntil(() => p.value('cbp_webhook_requests_total{job="cbp-webhook",route="events",status="200"}'), (v) => v === 3)).toBe(3);
    expect(await pollUntil(() => p.value('cbp_webhook_auth_refused_total{job="cbp-webhook"}'), (v) => v === 1)).toBe(1);
    expect(await pollUntil(() => p.value('cbp_webhook_ack_seconds_count{job="cbp-webhook"}'), (v) => v === 3)).toBe(3);
    expect(await pollUntil(() => p.value('cbp_journal_ready{job="cbp-webhook"}'), (v) => v === 1)).toBe(1);
    expect(await pollUntil(() => p.value('cbp_journal_disk_free_bytes{job="cbp-webhook"}'), (v) => (v ?? 0) > 0)).toBeGreaterThan(0);
  });

  it("reads the worker's activity runs, the Temporal SDK's metrics and the pipeline gauges back after a workflow", async () => {
    const p = prometheus!;
    // The pushes above, sealed (segments of 300 ms here), wait for ingest: the backlog gauge says so.
    expect(await pollUntil(() => p.value('cbp_journal_waiting_segments{job="cbp-webhook"}'), (v) => (v ?? 0) >= 1)).toBeGreaterThanOrEqual(1);
    const connection = await Connection.connect({ address: server!.address });
    try {
      const client = new Client({ connection, namespace: 'default' });
      await client.workflow.execute(WORKFLOW_TYPES.ingestEvents, { taskQueue: 'cbp-prometheus-test', workflowId: `prometheus-test-ingest-${Date.now()}`, args: [{}] });
    } finally {
      await connection.close();
    }
    expect(await pollUntil(() => p.value('up{job="cbp-worker"}'), (v) => v === 1)).toBe(1);
    expect(await pollUntil(() => p.value('sum(cbp_activity_runs_total{job="cbp-worker"})'), (v) => (v ?? 0) >= 1)).toBeGreaterThanOrEqual(1);
    expect(await pollUntil(() => p.value('sum(cbp_activity_duration_seconds_count{job="cbp-worker"})'), (v) => (v ?? 0) >= 1)).toBeGreaterThanOrEqual(1);
    // The SDK's own runtime telemetry, served through the worker's /metrics.
    expect(await pollUntil(() => p.value('count({job="cbp-worker", __name__=~"temporal_.+"})'), (v) => (v ?? 0) > 0)).toBeGreaterThan(0);
    // The ingest recorded its run: the pipeline gauge carries when it succeeded.
    const at = await pollUntil(() => p.value('cbp_last_success_timestamp_seconds{job="cbp-worker",workflow="ingestEvents"}'), (v) => (v ?? 0) > 0);
    expect(at).toBeGreaterThan(Date.now() / 1000 - 3600);
    expect(await pollUntil(() => p.value('cbp_snapshot_published{job="cbp-worker"}'), (v) => v === 1)).toBe(1);
    expect(await pollUntil(() => p.value('cbp_journal_waiting_segments{job="cbp-webhook"}'), (v) => v === 0)).toBe(0);
  });
});
