// `cbp demo`: its options only. The demo itself (demo.ts) loads the sandbox, the receiver and DuckDB, so it is
// imported when the command runs, not on every `cbp` start. `cbp demo --temporal` finds the Temporal CLI, and
// turns Ctrl-C (SIGINT, SIGTERM) into an orderly stop of everything the demo started.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { ConfigError, UsageError } from '../../lib/errors.ts';
import { HOW_TO_GET_TEMPORAL, findTemporalCli, whereTemporalWasSought } from '../../lib/temporal-cli.ts';
import { addDays, dayNumber, utcDay } from '../../lib/utc.ts';
import { parseInstant } from '../options.ts';

/** The demo's defaults (also runDemo's, in demo.ts, which loads the sandbox, the receiver and DuckDB). */
export const DEMO_START = '2025-12-01';
export const DEMO_DAYS = 45;

/**
 * Where the configured store lives, which the demo must never wipe. The configuration (environment, .env,
 * config file) must load for the demo to know it: one that does not is refused rather than guessed at, since a
 * guess that missed a .env line naming the store could wipe it.
 */
function configuredPaths(ctx: Ctx): Array<{ name: string; path: string }> {
  let c: { dataDir?: unknown; dbPath?: unknown; snapshotPath?: unknown; journalDir?: unknown };
  try {
    c = ctx.config();
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    throw new ConfigError([
      ...e.problems,
      'cbp demo needs no settings, but reads them to be sure it never wipes the configured store: fix the settings above, or run the demo from a folder without that .env / config file',
    ]);
  }
  const named: Array<[string, unknown]> = [
    ['store (CBP_DB_PATH)', c.dbPath],
    ['snapshot (CBP_SNAPSHOT_PATH)', c.snapshotPath],
    ['journal (CBP_JOURNAL_DIR)', c.journalDir],
    ['data folder (CBP_DATA_DIR)', c.dataDir],
  ];
  return named.filter((n): n is [string, string] => typeof n[1] === 'string' && n[1] !== '').map(([name, p]) => ({ name, path: p }));
}

/**
 * With --temporal the service's time must end today: the nightly is a triggered schedule run, whose asOf is the
 * server's clock (now). Default start: the first day of last month (UTC), so the demo lives through a whole
 * month as the local one lives through December.
 */
export function temporalDemoDays(start: string | undefined, now = new Date()): { start: string; days: number } {
  const today = utcDay(now.toISOString());
  const s = start ?? `${addDays(`${today.slice(0, 7)}-01`, -1).slice(0, 7)}-01`;
  const startDay = utcDay(parseInstant('--start', s));
  if (startDay !== s.trim().slice(0, 10) || s.trim().length !== 10) {
    throw new UsageError(`--start must be a date YYYY-MM-DD with --temporal (the service's days run from it to today), got ${JSON.stringify(s)}`);
  }
  const days = dayNumber(today) - dayNumber(startDay);
  if (days < 1 || days > 366) {
    throw new UsageError(`with --temporal the demo lives from --start to today (${today}), from 1 to 366 days: --start ${startDay} gives ${days}`);
  }
  return { start: startDay, days };
}

export function register(program: Command, ctx: Ctx): void {
  program
    .command('demo')
    .description('Run the whole pipeline end to end against an in-process sandbox, with no configuration (npm run demo); --temporal: through a real Temporal dev server')
    .option('--data-dir <dir>', 'demo data folder: created, or wiped at start if an earlier demo created it (any other non-empty folder is refused)', 'data/demo')
    .option('--start <date>', `sandbox clock start (UTC date; default ${DEMO_START}, with --temporal the first day of last month)`)
    .option('--days <n>', `days of sandbox time to live through, a week at a time (default ${DEMO_DAYS}; with --temporal: until today, not settable)`)
    .option(
      '--temporal',
      'run the workflows through a Temporal dev server started for the demo (temporal on PATH, or npm run temporal:install): schedules applied, ' +
        'history as a schedule backfill, the nightly as a triggered schedule run, the web UI open while it runs; all stopped at the end',
    )
    .option('--lake', 'the store a DuckLake lake catalogued in a PostgreSQL the demo starts under --data-dir, with two workers as on two hosts on a Temporal dev server (implies --temporal); all stopped at the end (PostgreSQL installed, npm run lake:install and npm run temporal:install)')
    .option('--json', 'print the result as JSON at the end (step lines still go to stderr)')
    .action(async (o: { dataDir: string; start?: string; days?: string; temporal?: boolean; lake?: boolean; json?: boolean }) => {
      let start: string;
      let days: number;
      let cli: string | undefined;
      // A lake's demo is the deployment it is for: two workers on a Temporal dev server.
      if (o.lake) o.temporal = true;
      if (o.temporal) {
        if (o.days !== undefined) {
          throw new UsageError("--days does not go with --temporal: the service's time runs from --start to today, since the triggered nightly covers today (the server's clock)");
        }
        ({ start, days } = temporalDemoDays(o.start));
        cli = findTemporalCli();
        if (!cli) throw new UsageError(`cbp demo --temporal needs the Temporal CLI (its dev server): ${whereTemporalWasSought()}. ${HOW_TO_GET_TEMPORAL}`);
      } else {
        start = o.start ?? DEMO_START;
        days = Number(o.days ?? DEMO_DAYS);
        if (!Number.isInteger(days) || days < 1 || days > 366) throw new UsageError(`--days must be a whole number of days from 1 to 366, got ${JSON.stringify(o.days)}`);
        parseInstant('--start', start);
      }
      if (o.lake) {
        const { postgresBin } = await import('../../lib/local-postgres.ts');
        if (!postgresBin()) throw new UsageError('cbp demo --lake needs PostgreSQL (initdb, postgres) to catalogue its lake: apt-get install postgresql (or your system\'s package)');
      }
      const write = o.json ? (l: string) => process.stderr.write(`${l}\n`) : undefined;
      const configured = configuredPaths(ctx);
      const { runDemo } = await import('./demo.ts');
      if (!cli) {
        const r = await runDemo({ dataDir: o.dataDir, configured, start, days, ...(o.lake ? { lake: 'local' as const } : {}), ...(write ? { write } : {}) });
        if (o.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
        return;
      }
      // Ctrl-C: every wait of the demo gives up, and its finally stops the worker and the server and deletes
      // the schedules. A second Ctrl-C does not wait for that.
      const { DemoInterrupted } = await import('../demo-temporal.ts');
      const controller = new AbortController();
      let signals = 0;
      const onSignal = (sig: NodeJS.Signals) => {
        signals += 1;
        if (signals === 1) {
          process.stderr.write(`\ncbp demo: ${sig}: stopping the worker and the Temporal dev server, deleting the schedules...\n`);
          controller.abort(new DemoInterrupted());
        } else {
          process.exit(130);
        }
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      try {
        const r = await runDemo({ dataDir: o.dataDir, configured, start, days, temporal: { cli, signal: controller.signal }, ...(o.lake ? { lake: 'local' as const } : {}), ...(write ? { write } : {}) });
        if (o.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
      } catch (e) {
        if (!controller.signal.aborted) throw e;
        process.stderr.write('cbp demo: interrupted; everything it started is stopped\n');
        process.exitCode = 130;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
      }
    });
}
