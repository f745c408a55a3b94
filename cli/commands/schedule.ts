// cbp schedule: the Temporal Schedules of cbp (nightly, the frequent event ingest, upkeep and the digest), and history loads
// through Temporal (a schedule backfill with BUFFER_ALL, or the backfill workflow with --workflow).
import type { Command } from 'commander';
import type { Ctx } from '../context.ts';
import { UsageError } from '../../lib/errors.ts';
import type { ReportKind } from '../../contract/reporting.ts';
import { DEFAULT_WINDOWS_PER_RUN, type BackfillInput } from '../../workflows/backfill.ts';
import { intOption, kindsOption } from './run.ts';
import { CONNECT_TIMEOUT_MS, dayOption } from '../options.ts';
import { WORKFLOW_TYPES } from '../../workflows/names.ts';

const temporal = async () => ({
  ...(await import('../../worker/schedules.ts')),
  ...(await import('../../worker/worker.ts')),
  ...(await import('../temporal.ts')),
});

const day = dayOption;

export function register(program: Command, ctx: Ctx): void {
  const schedule = program.command('schedule').description('Temporal Schedules of cbp: apply them, or load history through Temporal');

  schedule
    .command('apply')
    .description('Create or update the cbp-nightly and cbp-ingest schedules, cbp-maintain when a lake or CBP_RETENTION_DAYS needs upkeep, and cbp-digest when CBP_SMTP_URL and CBP_ALERT_EMAIL_TO are set and CBP_DIGEST_AT is not off (default mon 07:00) (idempotent: a second run changes nothing)')
    .option('--connect-timeout <ms>', `time allowed to reach Temporal (default ${CONNECT_TIMEOUT_MS})`, intOption('--connect-timeout'))
    .option('--json', 'print the result as JSON')
    .action(async (o: { connectTimeout?: number; json?: boolean }) => {
      const { applySchedules, connectTemporal, scheduleOptionsFromConfig, temporalTargetFromConfig } = await temporal();
      const cfg = ctx.config();
      const opts = scheduleOptionsFromConfig(cfg);
      const client = await connectTemporal(temporalTargetFromConfig(cfg), o.connectTimeout ?? CONNECT_TIMEOUT_MS);
      try {
        const applied = await applySchedules(client, opts);
        ctx.out({ schedules: applied, nightly: { at: opts.nightly.at, timezone: opts.nightly.timezone, input: opts.nightly.input }, ingest: opts.ingest }, (d: { schedules: typeof applied }) =>
          d.schedules.map((s) => `${s.scheduleId}: ${s.action}`).join('\n'), o.json);
      } finally {
        await client.connection.close().catch(() => undefined);
      }
    });

  schedule
    .command('backfill')
    .description('Load history through Temporal: replay the nightly schedule over [from, to] (BUFFER_ALL), or with --workflow start the backfill workflow (fetches each window once)')
    .requiredOption('--from <date>', 'first day, YYYY-MM-DD (UTC)', day('--from'))
    .requiredOption('--to <date>', 'last day, YYYY-MM-DD (UTC), included', day('--to'))
    .option('--workflow', 'start the backfill workflow instead of a schedule backfill')
    .option('--kinds <list>', '--workflow: report kinds, comma-separated', kindsOption)
    .option('--window-days <n>', '--workflow: days per window (default CBP_WINDOW_DAYS, 7)', intOption('--window-days'))
    .option('--parallelism <n>', '--workflow: windows at once (default CBP_REPORT_PARALLELISM, 2)', intOption('--parallelism'))
    .option('--windows-per-run <n>', `--workflow: continue as new after this many windows (default ${DEFAULT_WINDOWS_PER_RUN})`, intOption('--windows-per-run'))
    .option('--force', '--workflow: fetch every window of the range again, also those recorded as done (as cbp run backfill --force; loads stay idempotent)')
    .option('--connect-timeout <ms>', `time allowed to reach Temporal (default ${CONNECT_TIMEOUT_MS})`, intOption('--connect-timeout'))
    .option('--json', 'print the result as JSON')
    .action(async (o: { from: string; to: string; workflow?: boolean; kinds?: ReportKind[]; windowDays?: number; parallelism?: number; windowsPerRun?: number; force?: boolean; connectTimeout?: number; json?: boolean }) => {
      if (o.from > o.to) throw new UsageError(`--from ${o.from} is after --to ${o.to}`);
      if (!o.workflow && (o.kinds || o.windowDays || o.parallelism || o.windowsPerRun || o.force)) {
        throw new UsageError(
          '--kinds, --window-days, --parallelism, --windows-per-run and --force apply to --workflow only (a schedule backfill runs the nightly as scheduled, ' +
            'and a nightly fetches every window of its lookback anyway)',
        );
      }
      const { backfillSchedule, connectTemporal, temporalTargetFromConfig } = await temporal();
      const cfg = ctx.config();
      const target = temporalTargetFromConfig(cfg);
      const client = await connectTemporal(target, o.connectTimeout ?? CONNECT_TIMEOUT_MS);
      try {
        if (o.workflow) {
          const input: BackfillInput = {
            from: o.from,
            to: o.to,
            windowDays: o.windowDays ?? cfg.windowDays,
            parallelism: o.parallelism ?? cfg.reportParallelism,
            windowsPerRun: o.windowsPerRun ?? DEFAULT_WINDOWS_PER_RUN,
            ...(o.kinds ? { kinds: o.kinds } : {}),
            ...(o.force ? { force: true } : {}),
          };
          const workflowId = `cbp-backfill-${o.from}-${o.to}`;
          const handle = await client.workflow.start(WORKFLOW_TYPES.backfill, { taskQueue: target.taskQueue, workflowId, args: [input] });
          ctx.out({ started: 'workflow', workflowId, runId: handle.firstExecutionRunId, input }, (d: { workflowId: string }) => `backfill workflow started: ${d.workflowId} (follow it in the Temporal UI or with \`temporal workflow show -w ${d.workflowId}\`)`, o.json);
        } else {
          const r = await backfillSchedule(client, { from: o.from, to: o.to });
          ctx.out({ started: 'schedule', ...r }, (d: typeof r) => `schedule ${d.scheduleId}: backfill ${d.start} .. ${d.end} (${d.overlap})`, o.json);
        }
      } finally {
        await client.connection.close().catch(() => undefined);
      }
    });
}
