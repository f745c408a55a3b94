// The judged months of a series (store/judged-months.ts reads them from the SQL judge): indexed for the notices.
import type { JudgedMonth } from '../store/judged-months.ts';

/** A series' key: mid × network × program. */
export function seriesKey(r: { mid: string; network: string; program: string }): string {
  return `${r.mid}\u0000${r.network}\u0000${r.program}`;
}

/** One series' months in the order given, and by month. */
export interface SeriesMonths<T = JudgedMonth> {
  levels: T[];
  byMonth: Map<string, T>;
}

type SeriesMonth = { mid: string; network: string; program: string; month: string };

/** Months by series, in order of first appearance (the oracle's months too). */
export function seriesIndex<T extends SeriesMonth = JudgedMonth>(levels: readonly T[]): Map<string, SeriesMonths<T>> {
  const out = new Map<string, SeriesMonths<T>>();
  for (const l of levels) {
    const k = seriesKey(l);
    let cur = out.get(k);
    if (cur === undefined) { cur = { levels: [], byMonth: new Map() }; out.set(k, cur); }
    cur.levels.push(l);
    cur.byMonth.set(l.month, l);
  }
  return out;
}
