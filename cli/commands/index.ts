// The subcommands of cbp, by name. Each module exports `register(program, ctx)`; add one line per command.
// A start loads only the module of the command it runs (`cbp sql ...` loads sql.ts and what it imports), all of them
// for `cbp --help` or a name it does not know (commander lists them and suggests the nearest), none for
// `cbp --version`. Within a module, DuckDB (store/db, store/analyst, store/snapshot, store/export), Temporal (worker/,
// ../temporal.ts), fastify (webhook/server, sandbox/server, ./demo.ts), undici (client/, activities/) and nodemailer
// (alerts/notifiers/) load in the action that uses them: each slows a start (bench/startup.bench.ts measures it;
// test/cli.test.ts fails when `cbp --version` loads more than commander, or `--help` one of those).
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';

export type Register = (program: Command, ctx: Ctx) => void;

export const COMMANDS: Record<string, () => Promise<Register>> = {
  config: async () => (await import('./config.ts')).register,
  demo: async () => (await import('./demo-command.ts')).register,
  webhook: async () => (await import('./webhook.ts')).register,
  run: async () => (await import('./run.ts')).register,
  db: async () => (await import('./db.ts')).register,
  load: async () => (await import('./load.ts')).register,
  sql: async () => (await import('./sql.ts')).register,
  ratios: async () => (await import('./ratios.ts')).register,
  alerts: async () => (await import('./alerts.ts')).register,
  sandbox: async () => (await import('./sandbox.ts')).register,
  worker: async () => (await import('./worker.ts')).register,
  schedule: async () => (await import('./schedule.ts')).register,
  status: async () => (await import('./status.ts')).register,
  export: async () => (await import('./export.ts')).register,
  report: async () => (await import('./report.ts')).register,
  disputes: async () => (await import('./disputes.ts')).register,
  metrics: async () => (await import('./metrics.ts')).register,
};

/**
 * The commands a command line needs registered: the one it names (after the global options), none for a bare
 * `--version`, every one otherwise (`--help`, no command, `help`, a name cbp does not know).
 */
export function commandsFor(args: readonly string[]): string[] {
  const all = Object.keys(COMMANDS);
  let version = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-c' || a === '--config') { i++; continue; }
    if (a === '-V' || a === '--version') { version = true; continue; }
    if (a.startsWith('-')) {
      if (a === '-h' || a === '--help') return all;
      continue;
    }
    return Object.hasOwn(COMMANDS, a) ? [a] : all;
  }
  return version ? [] : all;
}
