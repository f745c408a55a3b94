import type { Command } from 'commander';
import type { Ctx } from '../context.ts';

export function register(program: Command, ctx: Ctx): void {
  const cmd = program.command('config').description('Show or check the configuration');
  cmd
    .command('show')
    .description('Print every setting with its value (secrets hidden) and where defaults apply')
    .option('--json', 'print as JSON')
    .action(async (o: { json?: boolean }) => {
      const { SETTINGS } = await import('../../lib/config.ts');
      const cfg = ctx.config();
      const rows = SETTINGS.map((d) => ({
        setting: d.env,
        value: cfg[d.key] === undefined ? null : d.secret ? '(set, hidden)' : cfg[d.key],
        default: d.default ?? null,
        description: d.description,
      }));
      ctx.out(rows, (r: typeof rows) => r.map((x) => `${x.setting.padEnd(26)} ${x.value === null ? '-' : String(x.value)}`).join('\n'), o.json);
    });
  cmd
    .command('example')
    .description('Print a .env.example listing every setting')
    .action(async () => {
      const { envExample } = await import('../../lib/config.ts');
      process.stdout.write(envExample());
    });
}
