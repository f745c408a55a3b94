// The subcommands of cbp. Each module exports `register(program, ctx)`; add one line per command.
// Every `cbp` start loads all of them: a command imports what it uses at the top, except DuckDB (store/db,
// store/analyst, store/snapshot, store/export), Temporal (worker/, ../temporal.ts), fastify (webhook/server,
// sandbox/server, ./demo.ts), undici (client/, activities/) and nodemailer (alerts/notifiers/), which its
// action imports when it runs: each adds 0.1-0.4 s to every start (bench/startup.bench.ts; test/cli.test.ts
// fails when `cbp --version` or `--help` loads one).
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { register as config } from './config.ts';
import { register as demo } from './demo-command.ts';
import { register as webhook } from './webhook.ts';
import { register as run } from './run.ts';
import { register as db } from './db.ts';
import { register as load } from './load.ts';
import { register as sql } from './sql.ts';
import { register as ratios } from './ratios.ts';
import { register as alerts } from './alerts.ts';
import { register as sandbox } from './sandbox.ts';
import { register as worker } from './worker.ts';
import { register as schedule } from './schedule.ts';
import { register as status } from './status.ts';
import { register as exportCmd } from './export.ts';
import { register as report } from './report.ts';
import { register as metrics } from './metrics.ts';
// @register-imports (keep this marker: one import line per command above it)

export const commands: Array<(program: Command, ctx: Ctx) => void> = [
  config,
  demo,
  webhook,
  run,
  db,
  load,
  sql,
  ratios,
  alerts,
  sandbox,
  worker,
  schedule,
  status,
  exportCmd,
  report,
  metrics,
  // @register-list (keep this marker)
];
