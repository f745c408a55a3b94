// `cbp demo`: its options only. The demo itself (demo.ts) loads the sandbox, the receiver and DuckDB, so it is
// imported when the command runs, not on every `cbp` start.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { ConfigError, UsageError } from '../../lib/errors.ts';
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

export function register(program: Command, ctx: Ctx): void {
  program
    .command('demo')
    .description('Run the whole pipeline end to end against an in-process sandbox, with no configuration (npm run demo)')
    .option('--data-dir <dir>', 'demo data folder: created, or wiped at start if an earlier demo created it (any other non-empty folder is refused)', 'data/demo')
    .option('--start <date>', 'sandbox clock start (UTC date)', DEMO_START)
    .option('--days <n>', 'days of sandbox time to live through, a week at a time', String(DEMO_DAYS))
    .option('--json', 'print the result as JSON at the end (step lines still go to stderr)')
    .action(async (o: { dataDir: string; start: string; days: string; json?: boolean }) => {
      const days = Number(o.days);
      if (!Number.isInteger(days) || days < 1 || days > 366) throw new UsageError(`--days must be a whole number of days from 1 to 366, got ${JSON.stringify(o.days)}`);
      parseInstant('--start', o.start);
      const write = o.json ? (l: string) => process.stderr.write(`${l}\n`) : undefined;
      const { runDemo } = await import('./demo.ts');
      const r = await runDemo({ dataDir: o.dataDir, configured: configuredPaths(ctx), start: o.start, days, ...(write ? { write } : {}) });
      if (o.json) process.stdout.write(JSON.stringify(r, null, 2) + '\n');
    });
}
