// UTC days, months and report windows: the one copy every layer uses (workflows, activities, store, cli).
// Pure and deterministic: no clock, no I/O, no node: imports, so the Temporal workflow bundle may import it
// too. All times are UTC; months are UTC calendar months (DESIGN.md).
import { CbpError } from './errors.ts';

/** A date range, window size or parallelism that cannot be planned. */
export class WindowRangeError extends CbpError {
  constructor(message: string) {
    super('CBP_ERR_WINDOW_RANGE', message);
  }
}

/**
 * A report window: inclusive whole UTC days. Its report request runs from `from` 00:00:00 to `to` 23:59:59
 * UTC (windowBounds).
 */
export interface Window {
  /** First day, YYYY-MM-DD (UTC), included. */
  from: string;
  /** Last day, YYYY-MM-DD (UTC), included. */
  to: string;
}

export const DAY_MS = 86_400_000;

const DAY_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DAY_PREFIX_RE = /^(\d{4})-(\d{2})-(\d{2})/;

function isYmd(y: number, m: number, d: number): boolean {
  const t = new Date(Date.UTC(y, m - 1, d));
  return t.getUTCFullYear() === y && t.getUTCMonth() === m - 1 && t.getUTCDate() === d;
}

/** True for a real calendar day written YYYY-MM-DD (Date.parse alone takes 2026-02-30 as 2 March). */
export function isCalendarDay(s: string): boolean {
  const m = DAY_RE.exec(s);
  return m !== null && isYmd(+m[1]!, +m[2]!, +m[3]!);
}

/** Days since 1970-01-01 of a `YYYY-MM-DD` or an ISO date-time (its UTC day). */
export function dayNumber(value: string): number {
  const s = String(value).trim();
  const m = DAY_PREFIX_RE.exec(s);
  if (!m) throw new WindowRangeError(`not a date (YYYY-MM-DD) or date-time: ${JSON.stringify(value)}`);
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  if (!isYmd(y, mo, d)) throw new WindowRangeError(`not a calendar date: ${JSON.stringify(value)}`);
  const ms = Date.UTC(y, mo - 1, d);
  if (s.length === 10) return ms / DAY_MS;
  // A date-time: a zone offset may move it to another UTC day; no zone means UTC (all times are UTC).
  let t = s.replace(' ', 'T');
  if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(t)) t += 'Z';
  const at = Date.parse(t);
  if (Number.isNaN(at)) throw new WindowRangeError(`not a date-time: ${JSON.stringify(value)}`);
  return Math.floor(at / DAY_MS);
}

/** The day (YYYY-MM-DD) of a day number (days since 1970-01-01). */
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

/** The day number of the 1st of the UTC month holding day number `n`. */
export function monthStart(n: number): number {
  const d = new Date(n * DAY_MS);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / DAY_MS;
}

/** The day number of the 1st of the UTC month after the one holding day number `n`. */
export function nextMonthStart(n: number): number {
  const d = new Date(n * DAY_MS);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) / DAY_MS;
}

/** A YYYY-MM month as a count of months (year × 12 + month − 1), as the SQL judge's ratio_month_idx counts them. */
export function monthIndex(month: string): number {
  return Number(month.slice(0, 4)) * 12 + Number(month.slice(5, 7)) - 1;
}

/** YYYY-MM plus n months (n may be negative). */
export function addMonths(month: string, n: number): string {
  const idx = monthIndex(month) + n;
  const y = Math.floor(idx / 12);
  return `${String(y).padStart(4, '0')}-${String(idx - y * 12 + 1).padStart(2, '0')}`;
}

/** Stable identifier of a window (`from..to`), used to record finished windows. */
export function windowId(w: Window): string {
  return `${w.from}..${w.to}`;
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

export function windowDayCount(w: Window): number {
  return dayNumber(w.to) - dayNumber(w.from) + 1;
}

/** The later of two ISO instants (null and undefined ignored); compared as instants, not as text. */
export function laterInstant(a: string | null | undefined, b: string | null | undefined): string | null {
  if (!a) return b ?? null;
  if (!b) return a;
  return Date.parse(b) > Date.parse(a) ? b : a;
}

/** Hours from one ISO instant to another; NaN when either is unreadable. */
export function hoursBetween(fromIso: string, toIso: string): number {
  const a = Date.parse(fromIso);
  const b = Date.parse(toIso);
  if (Number.isNaN(a) || Number.isNaN(b)) return Number.NaN;
  return (b - a) / 3_600_000;
}

/** A Date as DuckDB's TIMESTAMP text (`YYYY-MM-DD HH:MM:SS.mmm`, UTC, no zone): how the store stamps rows. */
export function sqlTimestamp(d: Date): string {
  return d.toISOString().replace('T', ' ').replace('Z', '');
}
