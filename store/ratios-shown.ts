// What `cbp ratios` reads of the kept ratio table (store/ratio-refresh.ts keeps it current): the newest month, and the
// rows of a range of months with every column of mart_ratios.
import type { RatioRow } from '../contract/ratios.ts';
import { readRatioRows, type QueryStore } from './ratios.ts';

/** The newest month of the ratio table (of one MID); null when it has none. */
export async function latestMartMonth(store: QueryStore, mid?: string): Promise<string | null> {
  const [r] = await store.all<{ month: string | null }>(`SELECT max(month) AS month FROM ratio_mart ${mid !== undefined ? 'WHERE mid = $mid' : ''}`,
    mid !== undefined ? { mid } : undefined);
  return r?.month ?? null;
}

/** The ratio rows of months from .. to (YYYY-MM), sorted by series, month and projection. */
export async function martRowsBetween(store: QueryStore, q: { from: string; to: string; mid?: string }): Promise<Array<Record<string, unknown>>> {
  return store.all<Record<string, unknown>>(
    `SELECT * FROM mart_ratios WHERE month >= $from AND month <= $to ${q.mid !== undefined ? 'AND mid = $mid' : ''}
      ORDER BY mid, network, program, metric, month, is_projection`,
    { from: q.from, to: q.to, ...(q.mid !== undefined ? { mid: q.mid } : {}) },
  );
}

/** One MID's ratio rows, sorted by series, month and projection (an alert notice's chart). */
export function martRatioRowsOf(store: QueryStore, mid: string): Promise<RatioRow[]> {
  return readRatioRows(store, 'SELECT * FROM mart_ratios WHERE mid = $mid ORDER BY network, program, metric, month, is_projection', { mid });
}
