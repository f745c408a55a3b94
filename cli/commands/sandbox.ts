// `cbp sandbox`: runs the emulated service until SIGINT/SIGTERM. The FIRST stdout line (with --json) is
// one JSON object with the base URLs, the admin URL and the credentials, so a script or test can read it.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { UsageError } from '../../lib/errors.ts';
import { addDays, utcDay } from '../../lib/utc.ts';
import { parseInstant } from '../options.ts';
import type { RunningSandbox } from '../../sandbox/server.ts';
import { sandboxServiceEnv } from '../sandbox-env.ts';

interface Opts {
  port: string;
  host: string;
  seed?: string;
  scenario?: string;
  start?: string;
  realtime?: boolean;
  speed: string;
  tokenTtl?: string;
  apiSecret?: string;
  dataUsername?: string;
  dataPassword?: string;
  reportingKey?: string;
  companyToken?: string;
  json?: boolean;
}

/** The UTC day before an ISO instant's day (the last whole day a clock standing there has finished). */
function dayBefore(iso: string): string {
  return addDays(utcDay(iso), -1);
}

function int(v: string | undefined, flag: string, min: number): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${flag} must be a whole number of at least ${min}, got ${JSON.stringify(v)}`);
  return n;
}

/**
 * What `cbp sandbox` prints: addresses, credentials, and its clock with how to move it. The clock matters:
 * reports hold only what happened by it, and cbp judges which report windows are complete by it (the
 * answers' Date header), so a backfill past it leaves windows open.
 */
export function describeSandbox(sb: RunningSandbox, opts: { realtime?: boolean; speed?: number } = {}) {
  const realtime = opts.realtime === true;
  return {
    baseUrls: sb.baseUrls,
    admin: sb.admin,
    credentials: sb.credentials,
    clock: {
      now: sb.state.clock.nowIso(),
      realtime,
      ...(realtime ? { speed: opts.speed ?? 1 } : {}),
      /** The admin call that moves it forward (it never goes back); GET the same url reads it. */
      move: { method: 'POST' as const, url: `${sb.admin}/clock`, body: { advance: 'P1D' }, or: { to: '<ISO 8601 UTC date-time>' } },
    },
  };
}

export function humanSandbox(d: ReturnType<typeof describeSandbox>): string {
  const c = d.clock;
  return [
    'cbp sandbox is running (Ctrl-C stops it).',
    `Sandbox clock        ${c.now}  (${c.realtime ? `runs with real time${c.speed && c.speed !== 1 ? `, ${c.speed}x` : ''}` : 'stands still: only the admin call below moves it; --realtime lets real time drive it'})`,
    `  move it forward     curl -X POST ${c.move.url} -H 'content-type: application/json' -d '{"advance":"P1D"}'   (or '{"to":"2026-02-01T00:00:00Z"}')`,
    `  read it             curl ${c.move.url}`,
    '  Reports hold only what happened by this clock: report windows ending after it are loaded but left open',
    `  (fetched again by the next run); back-fill up to it, e.g. \`cbp run backfill --from ... --to ${dayBefore(c.now)}\`.`,
    `  token interface      ${d.baseUrls.auth}`,
    `  events interface     ${d.baseUrls.events}`,
    `  order data           ${d.baseUrls.orders}  (also ${d.baseUrls.ordersStage})`,
    `  reporting            ${d.baseUrls.reporting}`,
    `  administration       ${d.admin}`,
    'Credentials (test values):',
    `  API secret           ${d.credentials.apiSecret}`,
    `  data username        ${d.credentials.dataUsername}`,
    `  data password        ${d.credentials.dataPassword}`,
    `  reporting key        ${d.credentials.reportingKey}`,
    `  company token        ${d.credentials.companyToken}`,
    'Point cbp at it (in another shell):',
    ...Object.entries(sandboxServiceEnv(d)).map(([k, v]) => `  export ${k}=${v}`),
  ].join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('sandbox')
    .description('Run a local, stateful emulator of the chargeback service (all four interfaces, simulated clock, deliveries, faults)')
    .option('--port <n>', 'port to listen on (0: any free port)', '8790')
    .option('--host <addr>', 'address to listen on', '127.0.0.1')
    .option('--seed <n>', 'seed of the generated world and of fault rolls (default: the scenario\'s, else 42)')
    .option('--scenario <file>', 'scenario file (JSON or YAML; default: the built-in scenario)')
    .option('--start <iso>', 'clock start, e.g. 2026-01-01 (default: the scenario\'s start, else 2026-01-01T00:00:00Z)')
    .option('--realtime', 'let real time drive the clock (else only POST /_sandbox/clock moves it)')
    .option('--speed <n>', 'with --realtime: sandbox seconds per real second', '1')
    .option('--token-ttl <seconds>', 'token lifetime in real seconds (CBP_SANDBOX_TOKEN_TTL_SECONDS, default 300)')
    .option('--api-secret <s>', 'API secret to accept (CBP_SANDBOX_API_SECRET, default sandbox-api-secret)')
    .option('--data-username <s>', 'order data username (CBP_SANDBOX_DATA_USERNAME, default sandbox-user)')
    .option('--data-password <s>', 'order data password (CBP_SANDBOX_DATA_PASSWORD, default sandbox-password)')
    .option('--reporting-key <s>', 'reporting key (CBP_SANDBOX_REPORTING_KEY, default sandbox-reporting-key)')
    .option('--company-token <s>', 'company token (CBP_SANDBOX_COMPANY_TOKEN, default sandbox-company-token)')
    .option('--json', 'print the addresses and credentials as one JSON line')
    .action(async (o: Opts) => {
      const cfg = ctx.config();
      const port = int(o.port, '--port', 0)!;
      if (port > 65535) throw new UsageError(`--port must be 0-65535, got ${port}`);
      // Checked here so a typo is bad usage (exit 2); the sandbox gets the text as given.
      if (o.start !== undefined) parseInstant('--start', o.start);
      const speed = Number(o.speed);
      if (!(speed > 0)) throw new UsageError(`--speed must be a positive number, got ${JSON.stringify(o.speed)}`);
      const { startSandbox } = await import('../../sandbox/server.ts');
      const sb = await startSandbox({
        host: o.host,
        port,
        seed: int(o.seed, '--seed', 0),
        scenarioFile: o.scenario,
        start: o.start,
        realtime: Boolean(o.realtime),
        realtimeSpeed: speed,
        tokenTtlSeconds: int(o.tokenTtl, '--token-ttl', 1) ?? cfg.sandboxTokenTtlSeconds,
        deliveryTimeoutMs: cfg.sandboxDeliveryTimeoutMs,
        credentials: {
          apiSecret: o.apiSecret ?? cfg.sandboxApiSecret,
          dataUsername: o.dataUsername ?? cfg.sandboxDataUsername,
          dataPassword: o.dataPassword ?? cfg.sandboxDataPassword,
          reportingKey: o.reportingKey ?? cfg.sandboxReportingKey,
          companyToken: o.companyToken ?? cfg.sandboxCompanyToken,
        },
      });
      // Handlers before the start line: a script that signals as soon as it reads it gets a clean stop.
      const stopped = new Promise<void>((resolve) => {
        const stop = () => {
          process.off('SIGINT', stop);
          process.off('SIGTERM', stop);
          resolve();
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
      });
      const info = describeSandbox(sb, { realtime: Boolean(o.realtime), speed });
      process.stdout.write((o.json ? JSON.stringify(info) : humanSandbox(info)) + '\n');
      await stopped;
      await sb.close();
      process.exitCode = 0;
    });
}
