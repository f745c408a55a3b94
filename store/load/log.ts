// The loads log: one row per (file digest, kind, window), counting how often it was loaded. A repeat of exactly
// the same load is answered from it without reading the file again.
import type { ReportKind } from '../../contract/reporting.ts';
import type { Store } from '../db.ts';
import type { Window } from '../../lib/utc.ts';
import type { FileFormat, LoadResult } from '../load.ts';

/** The same file: its digest, kind and window ($1 to $4 of sameFile's parameters), as the log keys a row. */
const SAME_FILE = 'sha256 = $1 AND kind = $2 AND window_start IS NOT DISTINCT FROM $3::DATE AND window_end IS NOT DISTINCT FROM $4::DATE';
const sameFile = (l: { sha256: string; kind: ReportKind; window: Window | null }) => [l.sha256, l.kind, l.window?.from ?? null, l.window?.to ?? null];
const BUMP = 'UPDATE loads SET last_loaded_at = current_timestamp::TIMESTAMP, load_count = load_count + 1 WHERE';

/**
 * Whether this file (digest, kind, window) was loaded before, and when exactly this load was (landing file and
 * seen_at too): then its log row is bumped, recorded as the caller asks, and returned as `again`. One read of the log.
 */
export async function repeatOf(
  store: Store, l: { landing: string; kind: ReportKind; format: FileFormat; window: Window | null; seen: string; sha256: string },
  record?: (s: Store, r: LoadResult) => Promise<void>,
): Promise<{ again?: LoadResult; loadedBefore: boolean }> {
  const exact = 'landing_file = $5 AND seen_at = $6::TIMESTAMP';
  const params = [...sameFile(l), l.landing, l.seen];
  return store.transaction(async (s) => {
    const [prior] = await s.all<{ n: string; rows_read: string | null; rows_loaded: string; quarantined: string }>(
      `SELECT count(*) AS n, any_value(rows_read) FILTER (WHERE ${exact}) AS rows_read, any_value(rows_loaded) FILTER (WHERE ${exact}) AS rows_loaded,
         any_value(quarantined) FILTER (WHERE ${exact}) AS quarantined FROM loads WHERE ${SAME_FILE}`,
      params,
    );
    if (prior.rows_read === null) return { loadedBefore: Number(prior.n) > 0 };
    await s.run(`${BUMP} ${SAME_FILE} AND ${exact}`, params);
    const again: LoadResult = {
      file: l.landing, kind: l.kind, format: l.format, window: l.window, seenAt: l.seen, sha256: l.sha256,
      rowsRead: Number(prior.rows_read), rowsLoaded: Number(prior.rows_loaded), quarantined: Number(prior.quarantined), reloaded: true,
    };
    await record?.(s, again);
    return { again, loadedBefore: true };
  });
}

/**
 * Logs a load inside its transaction. Returns whether the same file (digest, kind, window) had been loaded
 * before (`loadedBefore`: what repeatOf read of the log in this load; only loads write it, one at a time): then
 * its row is bumped, and the store was left unchanged by design.
 */
export async function logLoad(
  s: Store,
  l: { landing: string; kind: ReportKind; format: FileFormat; window: Window | null; seen: string; sha256: string; rowsRead: number; rowsLoaded: number; quarantined: number },
  loadedBefore?: boolean,
): Promise<boolean> {
  const reloaded = loadedBefore ?? Number((await s.all<{ n: string }>(`SELECT count(*) AS n FROM loads WHERE ${SAME_FILE}`, sameFile(l)))[0]!.n) > 0;
  if (reloaded) {
    await s.run(`${BUMP} ${SAME_FILE}`, sameFile(l));
  } else {
    await s.run(
      `INSERT INTO loads VALUES ($1, $2, $3, $4::DATE, $5::DATE, $6::TIMESTAMP, $7, $8, $9, $10, current_timestamp::TIMESTAMP, current_timestamp::TIMESTAMP, 1)`,
      [l.landing, l.kind, l.format, l.window?.from ?? null, l.window?.to ?? null, l.seen, l.rowsRead, l.rowsLoaded, l.quarantined, l.sha256],
    );
  }
  return reloaded;
}
