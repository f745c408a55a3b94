// The subcommands of cbp. Each module exports `register(program, ctx)`; add one line per command.
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { register as config } from './config.ts';
import { register as demo } from './demo.ts';
// @register-imports (keep this marker: one import line per command above it)

export const commands: Array<(program: Command, ctx: Ctx) => void> = [
  config,
  demo,
  // @register-list (keep this marker)
];
