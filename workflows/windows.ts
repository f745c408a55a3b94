// Planning report windows: which windows a nightly run or a backfill covers. Pure and deterministic (no
// clock), so the same code plans windows inside a Temporal workflow and in the local runner. The days,
// months and windows themselves (Window, windowId, windowBounds, ...) are lib/utc.ts's.
//
// Semantics (docs/spec-decisions.md, "Orchestration"):
// - a window is { from, to } with both days included; its report request runs from `from` 00:00:00 to
//   `to` 23:59:59 UTC;
// - chargebacks and prevention use rolling windows of `windowDays` days;
// - the MID report uses UTC calendar months, whole from the 1st, the last one cut at the range's end
//   (month-to-date), so a month's statistics are fetched in one request.
import type { ReportKind } from '../contract/reporting.ts';
import { addDays, dayNumber, dayString, monthStart, nextMonthStart, utcDay, windowId, WindowRangeError, type Window } from '../lib/utc.ts';

/** One unit of report work: a report kind over a window. */
export interface WindowTask {
  kind: ReportKind;
  window: Window;
}

export function taskId(t: WindowTask): string {
  return `${t.kind}:${windowId(t.window)}`;
}

function positiveInt(n: number, what: string): void {
  if (!Number.isInteger(n) || n < 1) throw new WindowRangeError(`${what} must be a whole number of at least 1, got ${n}`);
}

function range(from: string, to: string): [number, number] {
  const a = dayNumber(from);
  const b = dayNumber(to);
  if (a > b) throw new WindowRangeError(`the range starts after it ends: from ${utcDay(from)} is after to ${utcDay(to)}`);
  return [a, b];
}

/** Split [from, to] forward into windows of `windowDays` days; the last one is cut at `to`. */
export function rollingWindows(from: string, to: string, windowDays: number): Window[] {
  positiveInt(windowDays, 'windowDays');
  const [a, b] = range(from, to);
  const out: Window[] = [];
  for (let s = a; s <= b; s += windowDays) out.push({ from: dayString(s), to: dayString(Math.min(s + windowDays - 1, b)) });
  return out;
}

/**
 * Windows of `windowDays` days ending on `asOf`'s day and reaching back `lookbackDays` days (asOf's day
 * included); the oldest one is cut at the lookback's start. Returned oldest first.
 */
export function trailingWindows(asOf: string, lookbackDays: number, windowDays: number): Window[] {
  positiveInt(lookbackDays, 'lookbackDays');
  positiveInt(windowDays, 'windowDays');
  const end = dayNumber(asOf);
  const start = end - lookbackDays + 1;
  const out: Window[] = [];
  for (let e = end; e >= start; e -= windowDays) out.push({ from: dayString(Math.max(e - windowDays + 1, start)), to: dayString(e) });
  return out.reverse();
}

/**
 * UTC calendar months touching [from, to]: each starts on the 1st (even when `from` is later in that month)
 * and ends on its last day, except the last, which ends on `to` (month-to-date).
 */
export function calendarMonths(from: string, to: string): Window[] {
  const [a, b] = range(from, to);
  const out: Window[] = [];
  for (let s = monthStart(a); s <= b; s = nextMonthStart(s)) out.push({ from: dayString(s), to: dayString(Math.min(nextMonthStart(s) - 1, b)) });
  return out;
}

/** Windows of one report kind over [from, to]: calendar months for the MID report, rolling otherwise. */
export function windowsFor(kind: ReportKind, from: string, to: string, windowDays: number): Window[] {
  return kind === 'mid_report' ? calendarMonths(from, to) : rollingWindows(from, to, windowDays);
}

/** What a nightly run covers for `asOf`: trailing windows per kind, months for the MID report. */
export function nightlyTasks(kinds: readonly ReportKind[], asOf: string, lookbackDays: number, windowDays: number): WindowTask[] {
  const out: WindowTask[] = [];
  for (const kind of kinds) {
    if (kind === 'mid_report') {
      positiveInt(lookbackDays, 'lookbackDays');
      const end = utcDay(asOf);
      for (const window of calendarMonths(addDays(end, -(lookbackDays - 1)), end)) out.push({ kind, window });
    } else {
      for (const window of trailingWindows(asOf, lookbackDays, windowDays)) out.push({ kind, window });
    }
  }
  return out;
}

/** What a backfill of [from, to] covers, per kind. */
export function backfillTasks(kinds: readonly ReportKind[], from: string, to: string, windowDays: number): WindowTask[] {
  const out: WindowTask[] = [];
  for (const kind of kinds) for (const window of windowsFor(kind, from, to, windowDays)) out.push({ kind, window });
  return out;
}
