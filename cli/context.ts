// What every subcommand gets: the loaded configuration (read when first asked for, so `--help` never needs
// settings), the logger, and output helpers that honour --json.
import type { Command } from 'commander';
import type { Logger } from 'pino';
import { loadConfig, secretValues, type Config } from '../lib/config.ts';
import { createLogger, registerSecrets, setLogger } from '../lib/log.ts';
import { setStoreThreads } from '../store/threads.ts';

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
        // The .env of the working folder, as .env.example and `cbp config example` suggest; the environment
        // still wins over it. Read into the configuration only: process.env is left as it is.
        cfg = loadConfig({ file: o.config, dotenv: '.env' });
        registerSecrets(secretValues(cfg));
        setStoreThreads(cfg.storeThreads);
      }
      return cfg;
    },
    logger() {
      if (!logger) {
        logger = createLogger({ level: this.config().logLevel });
        setLogger(logger);
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
