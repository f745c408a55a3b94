// What every subcommand gets: the loaded configuration (lazily, so `--help` never needs settings),
// the logger, and output helpers that honour --json.
// Only types are imported at the top: zod, yaml and pino cost ~0.4 s to load, which `cbp --version` and
// `--help` should not pay. prepare() loads them before any action runs (a preAction hook in cli/index.ts).
import type { Command } from 'commander';
import type { Config } from '../lib/config.ts';
import type { Logger } from 'pino';

export interface Ctx {
  /** Loads the modules config() and logger() need; cli/index.ts awaits it before every action. */
  prepare(): Promise<void>;
  config(): Config;
  logger(): Logger;
  /** Writes data to stdout: JSON when asked, else the human rendering. */
  out(data: unknown, human?: (d: any) => string, json?: boolean): void;
}

type Modules = { config: typeof import('../lib/config.ts'); log: typeof import('../lib/log.ts') };

export function makeCtx(program: Command): Ctx {
  let cfg: Config | undefined;
  let logger: Logger | undefined;
  let mods: Modules | undefined;
  const loaded = (): Modules => {
    if (!mods) throw new Error('cbp: ctx.prepare() must run before an action reads the configuration');
    return mods;
  };
  return {
    async prepare() {
      mods ??= { config: await import('../lib/config.ts'), log: await import('../lib/log.ts') };
    },
    config() {
      if (!cfg) {
        const { config, log } = loaded();
        const o = program.opts<{ config?: string }>();
        // The .env of the working folder, as .env.example and `cbp config example` suggest; the environment
        // still wins over it. Read into the configuration only: process.env is left as it is.
        cfg = config.loadConfig({ file: o.config, dotenv: '.env' });
        log.registerSecrets(config.secretValues(cfg));
      }
      return cfg;
    },
    logger() {
      if (!logger) {
        const { log } = loaded();
        logger = log.createLogger({ level: (this.config().logLevel as string) ?? 'info' });
        log.setLogger(logger);
      }
      return logger;
    },
    out(data, human, json) {
      if (json || !human) process.stdout.write(JSON.stringify(data, null, json ? 2 : 0) + '\n');
      else {
        const text = human(data);
        process.stdout.write(text + (text.endsWith('\n') ? '' : '\n'));
      }
    },
  };
}
