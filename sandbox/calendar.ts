// The generator's UTC calendar: whole calendar months and the two timestamp spellings of a world, written
// without Date objects in the hot path (a big world formats hundreds of thousands of them). Kept inside the
// sandbox, which imports only contract/ (DESIGN.md); the project's shared UTC helpers are a later step of
// issue #11 (lib/utc.ts).

export const DAY = 86_400_000;
export const HOUR = 3_600_000;

/** One whole UTC calendar month of the world. */
export interface Month {
  /** YYYY-MM */
  key: string;
  /** months from the start's month (negative: history) */
  index: number;
  startMs: number;
  endMs: number;
}

/** The world's months: `history` before the month of startMs, that month, and `horizon` after it. */
export function monthsOf(startMs: number, history: number, horizon: number): Month[] {
  const d = new Date(startMs);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  const out: Month[] = [];
  for (let i = -history; i <= horizon; i++) {
    const s = Date.UTC(y, m + i, 1);
    const e = Date.UTC(y, m + i + 1, 1);
    out.push({ key: new Date(s).toISOString().slice(0, 7), index: i, startMs: s, endMs: e });
  }
  return out;
}

/** Days since 1970-01-01 -> [year, month, day], by Hinnant's civil-from-days (no Date objects in the hot path). */
function civil(days: number): [number, number, number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

// Written as char codes into a flat string: template literals leave cons-string trees that the garbage
// collector keeps copying for the world's lifetime (hundreds of thousands of timestamps in a big world).
const codes = new Array<number>(20);
function put(i: number, v: number, width: number): void {
  for (let k = width - 1; k >= 0; k--, v = Math.floor(v / 10)) codes[i + k] = 48 + (v % 10);
}
/** Writes YYYY-MM-DD of a day since 1970-01-01 into codes[0..9]. */
function putDate(days: number): void {
  const [y, m, d] = civil(days);
  put(0, y, 4);
  codes[4] = 45;
  put(5, m, 2);
  codes[7] = 45;
  put(8, d, 2);
}

/** The UTC day of a time, `YYYY-MM-DD`. */
export const ymd = (ms: number): string => {
  putDate(Math.floor(ms / DAY));
  return String.fromCharCode.apply(null, codes.slice(0, 10));
};

/** ISO 8601 UTC to the second, `YYYY-MM-DDTHH:MM:SSZ`. */
export const iso = (ms: number): string => {
  const s = Math.floor(ms / 1000);
  const days = Math.floor(s / 86400);
  const rest = s - days * 86400;
  putDate(days);
  codes[10] = 84;
  put(11, Math.floor(rest / 3600), 2);
  codes[13] = 58;
  put(14, Math.floor((rest % 3600) / 60), 2);
  codes[16] = 58;
  put(17, rest % 60, 2);
  codes[19] = 90;
  return String.fromCharCode.apply(null, codes);
};
