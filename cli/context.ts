// What every subcommand gets: the loaded configuration (lazily, so `--help` never needs settings),
// the logger, and output helpers that honour --json.
import type { Command } from 'commander';
import { loadConfig, secretValues, type Config } from '../lib/config.ts';
import { createLogger, registerSecrets, setLogger } from '../lib/log.ts';
import type { Logger } from 'pino';

export interface Ctx {
  config(): Config;
  logger(): Logger;
  /** Writes data to stdout: JSON when asked, else the human rendering. */
  out(data: unknown, human?: (d: any) => string, json?: boolean): void;
}

export function makeCtx(program: Command): Ctx {
  let cfg: Config | undefined;
  let logger: Logger | undefined;
  return {
    config() {
      if (!cfg) {
        const o = program.opts<{ config?: string }>();
        cfg = loadConfig({ file: o.config });
        registerSecrets(secretValues(cfg));
      }
      return cfg;
    },
    logger() {
      if (!logger) {
        logger = createLogger({ level: (this.config().logLevel as string) ?? 'info' });
        setLogger(logger);
      }
      return logger;
    },
    out(data, human, json) {
      if (json || !human) process.stdout.write(JSON.stringify(data, null, json ? 2 : 0) + '\n');
      else process.stdout.write(human(data) + (human(data).endsWith('\n') ? '' : '\n'));
    },
  };
}
