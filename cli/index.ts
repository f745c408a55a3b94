// The cbp command. Exit codes: 0 success, 1 failure, 2 bad usage or configuration. A start loads the modules of the
// command it runs only (cli/commands/index.ts): `cbp --version` loads commander and package.json, nothing else.
import { Command, CommanderError } from 'commander';
import { COMMANDS, commandsFor } from './commands/index.ts';
import { CbpError, ConfigError, UsageError, describeError } from '../lib/errors.ts';
import { PACKAGE_VERSION } from '../lib/package-root.ts';

/** The program with the commands `argv` (process.argv: node, script, args...) needs; every command without argv. */
export async function buildProgram(argv?: readonly string[]): Promise<Command> {
  const program = new Command();
  program
    .name('cbp')
    .description('Chargeback reporting pipeline: reports, events and ratios of a chargeback service, in DuckDB')
    .version(PACKAGE_VERSION, '-V, --version')
    .option('-c, --config <file>', 'config file (JSON or YAML); the environment and a .env file override it')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  const names = argv ? commandsFor(argv.slice(2)) : Object.keys(COMMANDS);
  if (names.length) {
    const { makeCtx } = await import('./context.ts');
    const ctx = makeCtx(program);
    for (const reg of await Promise.all(names.map((n) => COMMANDS[n]!()))) reg(program, ctx);
  }
  program.commands.forEach(function walk(c: Command) {
    c.exitOverride();
    c.commands.forEach(walk);
  });
  return program;
}

export function exitCodeFor(e: unknown): number {
  if (e instanceof ConfigError || e instanceof UsageError) return 2;
  if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
  return 1;
}

/**
 * A reader that stops early (`cbp sql ... | head`) closes the pipe, and the next write fails with EPIPE. Like
 * any Unix filter, cbp then ends quietly: stdout's reader is gone, so the process exits (0 unless a failure
 * was already recorded); a closed stderr only loses the messages, the work goes on.
 */
export function endQuietlyOnClosedPipes(): void {
  if (pipesWatched) return;
  pipesWatched = true;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
    const code = Number(process.exitCode ?? 0);
    process.exit(Number.isInteger(code) ? code : 1);
  });
  process.stderr.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
  });
}

let pipesWatched = false;

/** Runs cbp on argv. `exitAfterFailure: false` (a caller that runs cbp in its own process): no exit timer after a failure. */
export async function main(argv: string[], o: { exitAfterFailure?: boolean } = {}): Promise<void> {
  endQuietlyOnClosedPipes();
  try {
    const program = await buildProgram(argv);
    await program.parseAsync(argv);
  } catch (e) {
    const code = exitCodeFor(e);
    if (!(e instanceof CommanderError)) {
      // The module the configuration registered its secrets with (loaded by then if any were).
      const { scrub } = await import('../lib/log.ts');
      process.stderr.write(`cbp: ${scrub(describeError(e))}\n`);
      if (!(e instanceof CbpError) && process.env.CBP_DEBUG) process.stderr.write(`${(e as Error).stack}\n`);
    }
    process.exitCode = code;
    // A statement given up (a lake's catalog not answering) may still hold a thread: a failed command ends anyway.
    if (o.exitAfterFailure !== false) setTimeout(() => process.exit(code), 3_000).unref();
  }
}
