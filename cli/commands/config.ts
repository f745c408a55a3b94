import path from 'node:path';
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { SETTINGS, defaultText, settingSources, shownValue } from '../../lib/config.ts';
import { envExample } from '../../lib/env-example.ts';

interface Row {
  setting: string;
  value: unknown;
  /** environment, .env, config file <f>, default, command line; null when unset */
  source: string | null;
  default: string | null;
  description: string;
}

function human(rows: Row[]): string {
  return rows
    .map((x) => {
      const value = x.value === null ? '-' : String(x.value);
      const from = x.source && x.source !== 'default' ? `  (${x.source})` : '';
      return `${x.setting.padEnd(31)} ${value}${from}`;
    })
    .join('\n');
}

export function register(program: Command, ctx: Ctx): void {
  const cmd = program.command('config').description('Show or check the configuration');
  cmd
    .command('show')
    .description('Print every setting with its value (secrets hidden, URLs with their passwords and tokens masked), where it comes from, and every path cbp uses (absolute)')
    .option('--json', 'print as JSON')
    .action(async (o: { json?: boolean }) => {
      const cfg = ctx.config();
      const sources = settingSources(cfg);
      const rows: Row[] = SETTINGS.map((d) => ({
        setting: d.env,
        value: cfg[d.key] === undefined ? null : shownValue(d, cfg[d.key]),
        source: cfg[d.key] === undefined ? null : (sources[d.key] ?? null),
        default: defaultText(d) ?? null,
        description: d.description,
      }));
      // Not a setting, but a path cbp writes: reports as received always go under the data folder.
      rows.push({
        setting: '(landing files)',
        value: path.join(cfg.dataDir, 'landing'),
        source: 'under CBP_DATA_DIR',
        default: '<CBP_DATA_DIR>/landing',
        description: 'Reports as received, one file per window (not a setting: it follows CBP_DATA_DIR)',
      });
      ctx.out(rows, human, o.json);
    });
  cmd
    .command('example')
    .description('Print a .env.example listing every setting')
    .action(() => {
      process.stdout.write(envExample());
    });
}
