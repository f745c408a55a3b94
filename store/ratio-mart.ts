// The ratio mart kept as a table (ratio_mart, migration 017): every evaluation writes the rows of the months it judged,
// computed from the kept ratio inputs and the explanations it just stored (sql/views/40_ratios.sql
// ratio_mart_rows_between), so mart_ratios, `cbp ratios`, `cbp report` and `cbp export` read rows instead of computing
// every month again. docs/ratios.md "The kept ratio table" says when it is written and how a reader knows it is behind.
import type { Store } from './db.ts';
import { CAPTURE_MONTH, lastEvaluation, sourceMarks } from './alerts.ts';
import { touchedMonths } from './ratio-inputs.ts';
import { ratioMids } from './ratios.ts';

type ReadStore = Pick<Store, 'all'>;

/** MIDs written in one transaction: a transaction holds what it inserted in memory until it commits. */
export const MART_BATCH_MIDS = 1_000;

/**
 * Replaces the mart's rows of months fromMonth on (null: every month) with those the last evaluation explains, a range
 * of MIDs a transaction. The state row says "incomplete" until the last range is written: a write cut short (killed)
 * leaves readers told the mart is behind, and the next evaluation (which judges every month then) writes it all again.
 */
export async function writeRatioMart(store: Store, opts: { fromMonth: string | null; batchMids?: number }): Promise<{ rows: number }> {
  const from = opts.fromMonth ?? '0000-00';
  await store.transaction(async (s) => {
    await s.run('DELETE FROM ratio_mart_state');
    await s.run('INSERT INTO ratio_mart_state VALUES (now()::TIMESTAMP, $from, FALSE)', { from: opts.fromMonth });
  });
  const mids = await ratioMids(store);
  const size = Math.max(1, opts.batchMids ?? MART_BATCH_MIDS);
  // Open at both ends, so that the rows of MIDs no longer in the data (before the first or after the last) go too.
  const ranges: Array<{ lo: string | null; hi: string | null }> = [];
  for (let i = 0; i < mids.length; i += size) ranges.push({ lo: i === 0 ? null : mids[i], hi: i + size >= mids.length ? null : mids[i + size - 1] });
  if (ranges.length === 0) ranges.push({ lo: null, hi: null });
  const first = opts.fromMonth === null ? "DATE '0001-01-01'" : "strptime($from || '-01', '%Y-%m-%d')::DATE";
  let rows = 0;
  for (const { lo, hi } of ranges) {
    const where = [lo === null ? '' : 'mid >= $lo', hi === null ? '' : 'mid <= $hi'].filter(Boolean);
    const params: Record<string, string> = { from, ...(lo === null ? {} : { lo }), ...(hi === null ? {} : { hi }) };
    const and = where.length ? ` AND ${where.join(' AND ')}` : '';
    await store.transaction(async (s) => {
      await s.run(`DELETE FROM ratio_mart WHERE month >= $from${and}`, params);
      const { from: _, ...bounds } = params;
      const [r] = await s.all<{ Count: number | bigint }>(
        `INSERT INTO ratio_mart BY NAME SELECT * FROM ratio_mart_rows_between(${first}, DATE '9999-12-01', cached := TRUE) WHERE TRUE${and}`,
        opts.fromMonth === null ? bounds : params,
      );
      rows += Number(r?.Count ?? 0);
    });
  }
  await store.transaction((s) => s.run('UPDATE ratio_mart_state SET complete = TRUE, written_at = now()::TIMESTAMP'));
  return { rows };
}

export interface MartFreshness {
  /** the mart holds every row of the data as the store holds it now */
  current: boolean;
  /** why not, and what to run; null when current */
  behind: string | null;
  /** months whose sources changed since the mart was written */
  changedMonths: string[];
}

/** The command that brings the mart up to date. */
export const MART_CATCH_UP = 'cbp alerts evaluate';

/**
 * Whether the kept mart reflects the data: written in full by the last evaluation, and no source month added, changed
 * or gone since (store/alerts.ts sourceMarks against the fingerprints that evaluation saw).
 */
export async function martFreshness(store: ReadStore): Promise<MartFreshness> {
  const behind = (why: string, changedMonths: string[] = []): MartFreshness => ({ current: false, behind: `${why}: run \`${MART_CATCH_UP}\``, changedMonths });
  let state: { complete: boolean } | undefined;
  try {
    [state] = await store.all<{ complete: boolean }>('SELECT complete FROM ratio_mart_state LIMIT 1');
  } catch {
    return behind('this store has no kept ratio table yet (an older cbp wrote it)');
  }
  const last = await lastEvaluation(store);
  if (!state || !last) return behind('no rule evaluation has written the ratio table yet');
  if (!state.complete) return behind('the last write of the ratio table did not finish');
  const now = await sourceMarks(store);
  const touched = touchedMonths(last.marks, now.filter((m) => m.month <= last.asOfMonth));
  if (touched.includes(CAPTURE_MONTH)) return behind('events were first captured at another day since the ratios were computed', touched);
  const changed = touched;
  const later = [...new Set(now.filter((m) => m.month > last.asOfMonth && m.source === 'mid_stats').map((m) => m.month))].sort();
  if (changed.length) return behind(`data of ${monthList(changed)} changed since the ratios were computed`, changed);
  if (later.length) return behind(`data of ${monthList(later)} was loaded after the ratios were computed (as of ${last.asOfMonth})`, later);
  return { current: true, behind: null, changedMonths: [] };
}

function monthList(months: string[]): string {
  return months.length <= 3 ? months.join(', ') : `${months.slice(0, 3).join(', ')} and ${months.length - 3} more months`;
}
