// Temporal Schedules of cbp: the nightly run, the frequent event ingest, and (for a lake) the daily upkeep.
// applySchedules creates them or brings existing ones to the given definition (idempotent); backfillSchedule
// replays a nightly range.
import { ScheduleAlreadyRunning, ScheduleOverlapPolicy, type Client, type ScheduleOptions } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import type { Config } from '../lib/config.ts';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import type { NightlyInput } from '../workflows/nightly.ts';
import { WorkflowInputError } from '../workflows/errors.ts';
import { DAY_MS, dayNumber, WindowRangeError } from '../lib/utc.ts';
import { lakeCatalog } from '../lib/lake-setting.ts';

export const SCHEDULE_DEFAULTS = {
  nightlyScheduleId: 'cbp-nightly',
  ingestScheduleId: 'cbp-ingest',
  maintainScheduleId: 'cbp-maintain',
  digestScheduleId: 'cbp-digest',
  /** The store's upkeep, an hour after the nightly's default time. */
  maintainAt: '03:30',
  taskQueue: 'cbp',
  /** HH:MM in `timezone`. */
  nightlyAt: '02:30',
  /** IANA zone of nightlyAt; the run's asOf is still an instant, and windows are UTC days. */
  timezone: 'UTC',
  /** A run late by a night still covers its own nominal date, so BUFFER_ONE loses nothing and never piles up. */
  nightlyOverlap: ScheduleOverlapPolicy.BUFFER_ONE,
  /** After an outage, one missed night is caught up; older ones are covered by the 60-day lookback. */
  nightlyCatchupWindow: '1 day',
  ingestEvery: '5m',
  /** An ingest run loads every closed segment, so a skipped start loses nothing. */
  ingestOverlap: ScheduleOverlapPolicy.SKIP,
  ingestCatchupWindow: '10 minutes',
  /** The server buffers at most 1,000 starts of one schedule. */
  maxBackfillRuns: 1000,
} as const;

export interface ApplySchedulesOptions {
  taskQueue?: string;
  nightly: {
    scheduleId?: string;
    /** HH:MM, 24-hour. Default 02:30. */
    at?: string;
    /** IANA time zone of `at`. Default UTC. */
    timezone?: string;
    /** What each run covers; asOf comes from the schedule's nominal time. */
    input: Omit<NightlyInput, 'asOf' | 'runId'>;
    overlap?: ScheduleOverlapPolicy;
    catchupWindow?: Duration;
    paused?: boolean;
  };
  ingest?: {
    scheduleId?: string;
    /** The queue its runs go to (default taskQueue): a host's own, whose worker holds the journal. */
    taskQueue?: string;
    every?: Duration;
    overlap?: ScheduleOverlapPolicy;
    catchupWindow?: Duration;
    paused?: boolean;
  };
  /** The store's upkeep (a lake's: scheduleOptionsFromConfig sets it when the store is one), daily at `at`. */
  maintain?: {
    scheduleId?: string;
    at?: string;
    timezone?: string;
    keepDays?: number;
    graceHours?: number;
    paused?: boolean;
  };
  /** The digest e-mail (scheduleOptionsFromConfig sets it when e-mail is configured and CBP_DIGEST_AT is not off). */
  digest?: DigestScheduleOptions;
}

export interface DigestScheduleOptions {
  scheduleId?: string;
  /** "<day> HH:MM" (day mon..sun, or daily), CBP_DIGEST_AT */
  at: string;
  timezone?: string;
  paused?: boolean;
}

export interface AppliedSchedule {
  scheduleId: string;
  action: 'created' | 'updated';
}

/** The parts of the Temporal client used here (a test passes a fake). */
export type ScheduleClientLike = Pick<Client, 'schedule'>;

/** The schedules as configured (CBP_NIGHTLY_AT, CBP_SCHEDULE_TIMEZONE, CBP_INGEST_EVERY, CBP_WINDOW_DAYS, ...). */
export function scheduleOptionsFromConfig(cfg: Config): ApplySchedulesOptions {
  return {
    taskQueue: cfg.temporalTaskQueue,
    nightly: {
      at: cfg.nightlyAt,
      timezone: cfg.scheduleTimezone,
      input: { windowDays: cfg.windowDays, lookbackDays: cfg.lookbackDays, parallelism: cfg.reportParallelism },
    },
    // A host's own ingest queue gets a schedule of its own: each host's worker ingests the journal it holds.
    ingest: cfg.ingestTaskQueue
      ? { every: cfg.ingestEvery, taskQueue: cfg.ingestTaskQueue, scheduleId: `${SCHEDULE_DEFAULTS.ingestScheduleId}-${cfg.ingestTaskQueue}` }
      : { every: cfg.ingestEvery },
    // A lake's small files and snapshots pile up with every commit: its upkeep runs daily (cbp db maintain's defaults);
    // so does a file store's when retention is on (CBP_RETENTION_DAYS: the worker holds the store, cbp db maintain can't).
    ...(lakeCatalog(cfg.store) !== null || cfg.retentionDays !== undefined ? { maintain: { timezone: cfg.scheduleTimezone } } : {}),
    // The digest goes by e-mail: scheduled only where one is configured, and not when CBP_DIGEST_AT is off.
    ...(cfg.smtpUrl && cfg.alertEmailTo && cfg.digestAt !== 'off' ? { digest: { at: cfg.digestAt, timezone: cfg.scheduleTimezone } } : {}),
  };
}

const DAYS = { sun: 'SUNDAY', mon: 'MONDAY', tue: 'TUESDAY', wed: 'WEDNESDAY', thu: 'THURSDAY', fri: 'FRIDAY', sat: 'SATURDAY' } as const;

/** "mon 07:00" → Monday 07:00; "daily 07:00" → every day. */
export function parseDigestAt(at: string): { dayOfWeek?: (typeof DAYS)[keyof typeof DAYS]; hour: number; minute: number } {
  const [day, time] = at.trim().toLowerCase().split(/\s+/);
  if (!time || !(day === 'daily' || day in DAYS)) throw new WorkflowInputError(`digest time must be "<day> HH:MM" (day mon..sun or daily), got ${JSON.stringify(at)}`);
  return { ...(day === 'daily' ? {} : { dayOfWeek: DAYS[day as keyof typeof DAYS] }), ...parseAt(time) };
}

export function parseAt(at: string): { hour: number; minute: number } {
  const m = /^(\d{1,2}):(\d{2})$/.exec(at.trim());
  const hour = m ? Number(m[1]) : NaN;
  const minute = m ? Number(m[2]) : NaN;
  if (!m || hour > 23 || minute > 59) throw new WorkflowInputError(`schedule time must be HH:MM (24-hour), got ${JSON.stringify(at)}`);
  return { hour, minute };
}

/** The two schedule definitions, without talking to Temporal. */
export function scheduleDefinitions(opts: ApplySchedulesOptions): ScheduleOptions[] {
  const taskQueue = opts.taskQueue ?? SCHEDULE_DEFAULTS.taskQueue;
  const n = opts.nightly;
  const nightlyId = n.scheduleId ?? SCHEDULE_DEFAULTS.nightlyScheduleId;
  const { hour, minute } = parseAt(n.at ?? SCHEDULE_DEFAULTS.nightlyAt);
  const defs: ScheduleOptions[] = [
    {
      scheduleId: nightlyId,
      spec: { calendars: [{ hour, minute, comment: 'cbp nightly' }], timezone: n.timezone ?? SCHEDULE_DEFAULTS.timezone },
      action: { type: 'startWorkflow', workflowType: WORKFLOW_TYPES.nightly, workflowId: nightlyId, taskQueue, args: [n.input] },
      policies: {
        overlap: n.overlap ?? SCHEDULE_DEFAULTS.nightlyOverlap,
        catchupWindow: n.catchupWindow ?? SCHEDULE_DEFAULTS.nightlyCatchupWindow,
      },
      state: { paused: n.paused ?? false },
    },
  ];
  const i = opts.ingest ?? {};
  const ingestId = i.scheduleId ?? SCHEDULE_DEFAULTS.ingestScheduleId;
  defs.push({
    scheduleId: ingestId,
    spec: { intervals: [{ every: i.every ?? SCHEDULE_DEFAULTS.ingestEvery }] },
    action: { type: 'startWorkflow', workflowType: WORKFLOW_TYPES.ingestEvents, workflowId: ingestId, taskQueue: i.taskQueue ?? taskQueue, args: [{}] },
    policies: {
      overlap: i.overlap ?? SCHEDULE_DEFAULTS.ingestOverlap,
      catchupWindow: i.catchupWindow ?? SCHEDULE_DEFAULTS.ingestCatchupWindow,
    },
    state: { paused: i.paused ?? false },
  });
  if (opts.maintain) {
    const m = opts.maintain;
    const id = m.scheduleId ?? SCHEDULE_DEFAULTS.maintainScheduleId;
    const at = parseAt(m.at ?? SCHEDULE_DEFAULTS.maintainAt);
    const input = { ...(m.keepDays !== undefined ? { keepDays: m.keepDays } : {}), ...(m.graceHours !== undefined ? { graceHours: m.graceHours } : {}) };
    defs.push({
      scheduleId: id,
      spec: { calendars: [{ ...at, comment: 'cbp store upkeep' }], timezone: m.timezone ?? SCHEDULE_DEFAULTS.timezone },
      action: { type: 'startWorkflow', workflowType: WORKFLOW_TYPES.maintainStore, workflowId: id, taskQueue, args: [input] },
      // One upkeep at a time; a missed one is simply the next day's.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 hour' },
      state: { paused: m.paused ?? false },
    });
  }
  if (opts.digest) {
    const d = opts.digest;
    const id = d.scheduleId ?? SCHEDULE_DEFAULTS.digestScheduleId;
    defs.push({
      scheduleId: id,
      spec: { calendars: [{ ...parseDigestAt(d.at), comment: 'cbp digest e-mail' }], timezone: d.timezone ?? SCHEDULE_DEFAULTS.timezone },
      action: { type: 'startWorkflow', workflowType: WORKFLOW_TYPES.sendDigest, workflowId: id, taskQueue, args: [{}] },
      // One digest at a time; one missed by an outage is sent when the worker is back within a day.
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 day' },
      state: { paused: d.paused ?? false },
    });
  }
  return defs;
}

function alreadyExists(e: unknown): boolean {
  return e instanceof ScheduleAlreadyRunning || (e as { name?: unknown })?.name === 'ScheduleAlreadyRunning';
}

/**
 * Create the nightly and ingest schedules, or update existing ones to this definition. Running it twice
 * changes nothing the second time (an update to the same definition).
 */
export async function applySchedules(client: ScheduleClientLike, opts: ApplySchedulesOptions): Promise<AppliedSchedule[]> {
  const out: AppliedSchedule[] = [];
  for (const def of scheduleDefinitions(opts)) {
    try {
      await client.schedule.create(def);
      out.push({ scheduleId: def.scheduleId, action: 'created' });
    } catch (e) {
      if (!alreadyExists(e)) throw e;
      await client.schedule.getHandle(def.scheduleId).update(() => ({
        spec: def.spec,
        action: def.action,
        policies: def.policies,
        state: { paused: def.state?.paused ?? false },
      }));
      out.push({ scheduleId: def.scheduleId, action: 'updated' });
    }
  }
  return out;
}

export interface BackfillScheduleOptions {
  /** Default: the nightly schedule. */
  scheduleId?: string;
  /** First nominal time (ISO date or date-time, UTC). */
  from: string;
  /** Last nominal time (ISO date or date-time, UTC); a bare date means the end of that day. */
  to: string;
  /** BUFFER_ALL (one after another, the default) or ALLOW_ALL (at once). SKIP would drop runs silently. */
  overlap?: typeof ScheduleOverlapPolicy.BUFFER_ALL | typeof ScheduleOverlapPolicy.ALLOW_ALL;
}

function instant(v: string, endOfDay: boolean): Date {
  dayNumber(v); // validates the day
  const s = v.trim();
  if (s.length === 10) return new Date(`${s}T${endOfDay ? '23:59:59.999' : '00:00:00.000'}Z`);
  const t = s.replace(' ', 'T');
  return new Date(/(Z|[+-]\d{2}:?\d{2})$/i.test(t) ? t : `${t}Z`);
}

/**
 * Run the schedule's actions for every nominal time in [from, to], as if that time passed now. Each run
 * carries its historical time in TemporalScheduledStartTime, so nightly covers the right days.
 */
export async function backfillSchedule(client: ScheduleClientLike, opts: BackfillScheduleOptions): Promise<{ scheduleId: string; start: string; end: string; overlap: string }> {
  const overlap = opts.overlap ?? ScheduleOverlapPolicy.BUFFER_ALL;
  if (overlap !== ScheduleOverlapPolicy.BUFFER_ALL && overlap !== ScheduleOverlapPolicy.ALLOW_ALL) {
    throw new WorkflowInputError(`backfill overlap must be BUFFER_ALL or ALLOW_ALL (got ${String(overlap)}): SKIP drops runs silently`);
  }
  const start = instant(opts.from, false);
  const end = instant(opts.to, true);
  if (start.getTime() > end.getTime()) throw new WindowRangeError(`the backfill starts after it ends: ${opts.from} is after ${opts.to}`);
  // Nightly fires once a day: more days than the server buffers would lose the overflow.
  const days = Math.ceil((end.getTime() - start.getTime()) / DAY_MS);
  if (days > SCHEDULE_DEFAULTS.maxBackfillRuns) {
    throw new WindowRangeError(
      `a schedule backfill of ${days} days exceeds the ${SCHEDULE_DEFAULTS.maxBackfillRuns} runs Temporal buffers: split the range, ` +
        'or load history with the backfill workflow (cbp backfill), which fetches each window once',
    );
  }
  const scheduleId = opts.scheduleId ?? SCHEDULE_DEFAULTS.nightlyScheduleId;
  await client.schedule.getHandle(scheduleId).backfill([{ start, end, overlap }]);
  return { scheduleId, start: start.toISOString(), end: end.toISOString(), overlap };
}
