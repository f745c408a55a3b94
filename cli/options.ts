// Option parsers shared by the commands: dates read strictly, as UTC.
import { UsageError } from '../lib/errors.ts';
import { isCalendarDay } from '../lib/utc.ts';

/** Time `cbp worker` and `cbp schedule` allow to reach the Temporal frontend (--connect-timeout). */
export const CONNECT_TIMEOUT_MS = 5_000;


/** A UTC day YYYY-MM-DD, or a UsageError naming the option. */
export function parseDay(name: string, v: string): string {
  const s = v.trim();
  if (!isCalendarDay(s)) throw new UsageError(`${name} must be a date YYYY-MM-DD (UTC), got ${JSON.stringify(v)}`);
  return s;
}

/**
 * An ISO 8601 date or date-time as a UTC instant (toISOString). A date means its midnight UTC; a date-time
 * without an offset is read as UTC too (Date.parse would take the machine's zone).
 */
export function parseInstant(name: string, v: string): string {
  const s = v.trim();
  const m = /^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(s);
  const t = m && isCalendarDay(m[1]) ? Date.parse(m[2] ? `${m[1]}T${m[2]}${m[3] ?? 'Z'}` : `${m[1]}T00:00:00Z`) : Number.NaN;
  if (Number.isNaN(t)) throw new UsageError(`${name} must be an ISO 8601 date or date-time in UTC, e.g. 2026-02-01 or 2026-02-01T00:00:00Z, got ${JSON.stringify(v)}`);
  return new Date(t).toISOString();
}

/** Commander option parsers for the two above. */
export const dayOption = (name: string) => (v: string): string => parseDay(name, v);
export const instantOption = (name: string) => (v: string): string => parseInstant(name, v);
