import type { Command } from 'commander';
import type { Ctx } from '../context.ts';

export function register(program: Command, _ctx: Ctx): void {
  program
    .command('demo')
    .description('Run the whole pipeline end to end against a local sandbox (npm run demo)')
    .action(() => {
      process.stdout.write(
        'cbp demo: not yet. The end-to-end demo arrives with the orchestration work (workflows and local runner).\n',
      );
    });
}
