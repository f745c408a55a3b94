// Report windows: inclusive ranges of whole UTC days. Pure and deterministic (no clock), so the same code
// plans windows inside a Temporal workflow and in the local runner.
//
// Semantics (docs/spec-decisions.md, "Orchestration"):
// - a window is { from, to } with both days included; its report request runs from `from` 00:00:00 to
//   `to` 23:59:59 UTC;
// - chargebacks and prevention use rolling windows of `windowDays` days;
// - the MID report uses UTC calendar months, whole from the 1st, the last one cut at the range's end
//   (month-to-date), so a month's statistics are fetched in one request.
import type { ReportKind } from '../contract/reporting.ts';
import { WindowRangeError } from './errors.ts';

export interface Window {
  /** First day, YYYY-MM-DD (UTC), included. */
  from: string;
  /** Last day, YYYY-MM-DD (UTC), included. */
  to: string;
}

/** One unit of report work: a report kind over a window. */
export interface WindowTask {
  kind: ReportKind;
  window: Window;
}

const DAY_MS = 86_400_000;
const DAY_RE = /^(\d{4})-(\d{2})-(\d{2})/;

/** Days since 1970-01-01 of a `YYYY-MM-DD` or an ISO date-time (its UTC day). */
export function dayNumber(value: string): number {
  const s = String(value).trim();
  const m = DAY_RE.exec(s);
  if (!m) throw new WindowRangeError(`not a date (YYYY-MM-DD) or date-time: ${JSON.stringify(value)}`);
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  const ms = Date.UTC(y, mo - 1, d);
  const check = new Date(ms);
  if (check.getUTCFullYear() !== y || check.getUTCMonth() !== mo - 1 || check.getUTCDate() !== d) {
    throw new WindowRangeError(`not a calendar date: ${JSON.stringify(value)}`);
  }
  if (s.length === 10) return ms / DAY_MS;
  // A date-time: a zone offset may move it to another UTC day; no zone means UTC (all times are UTC).
  let t = s.replace(' ', 'T');
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(t)) t += 'Z';
  const at = Date.parse(t);
  if (Number.isNaN(at)) throw new WindowRangeError(`not a date-time: ${JSON.stringify(value)}`);
  return Math.floor(at / DAY_MS);
}

export function dayString(n: number): string {
  return new Date(n * DAY_MS).toISOString().slice(0, 10);
}

/** The UTC day (YYYY-MM-DD) of a date or date-time. */
export function utcDay(value: string): string {
  return dayString(dayNumber(value));
}

export function addDays(day: string, n: number): string {
  return dayString(dayNumber(day) + n);
}

/** Stable identifier of a window, used to record finished backfill windows. */
export function windowId(w: Window): string {
  return `${w.from}..${w.to}`;
}

export function taskId(t: WindowTask): string {
  return `${t.kind}:${windowId(t.window)}`;
}

/** Report request bounds of a window (UTC, whole days). */
export function windowBounds(w: Window): { start: string; end: string } {
  return { start: `${w.from}T00:00:00Z`, end: `${w.to}T23:59:59Z` };
}

/**
 * Whether a window's data was whole when the service answered at `serviceTime` (ISO, either spelling): its
 * end (the request's end, `to` 23:59:59 UTC) is at or before that instant. A window still running when the
 * service answered holds only the data so far; the service cannot report what has not happened yet.
 */
export function windowComplete(w: Window, serviceTime: string): boolean {
  const at = Date.parse(serviceTime);
  if (Number.isNaN(at)) throw new WindowRangeError(`not a date-time: ${JSON.stringify(serviceTime)}`);
  return Date.parse(windowBounds(w).end) <= at;
}

/** The later of two ISO instants (null and undefined ignored); compared as instants, not as text. */
export function laterInstant(a: string | null | undefined, b: string | null | undefined): string | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return Date.parse(b) > Date.parse(a) ? b : a;
}

export function windowDayCount(w: Window): number {
  return dayNumber(w.to) - dayNumber(w.from) + 1;
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

function monthStart(n: number): number {
  const d = new Date(n * DAY_MS);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / DAY_MS;
}

function nextMonthStart(n: number): number {
  const d = new Date(n * DAY_MS);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / DAY_MS;
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
