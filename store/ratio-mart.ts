// The ratio mart kept as a table (ratio_mart, migration 017): every evaluation writes the rows of the months it judged,
// computed from the kept ratio inputs and the explanations it just stored (sql/views/42_ratio_mart.sql
// ratio_mart_rows_between), so mart_ratios, `cbp ratios`, `cbp report` and `cbp export` read rows instead of computing
// every month again. docs/ratios.md "The kept ratio table" says when it is written and how a reader knows it is behind.
import type { Store } from './db.ts';
import { CAPTURE_MONTH, lastEvaluation, sourceMarks } from './alerts.ts';
import { touchedMonths } from './ratio-inputs.ts';

type ReadStore = Pick<Store, 'all'>;

/**
 * Kept-input rows (one a MID × network × month, about 4 rows of the mart each) written in one transaction: a
 * transaction holds what it inserted in memory until it commits. Runs are cut by months: a month bound reaches the
 * scan of the kept inputs, a MID bound does not (ten batches of MIDs computed every MID ten times).
 */
export const MART_INPUT_ROWS = 1_500_000;

/**
 * Replaces the mart's rows of months fromMonth on (null: every month) with those the last evaluation explains, a run
 * of months a transaction. The state row says "incomplete" until the last run is written: a write cut short (killed)
 * leaves readers told the mart is behind, and the next evaluation (which judges every month then) writes it all again.
 */
export async function writeRatioMart(store: Store, opts: { fromMonth: string | null; inputRows?: number }): Promise<{ rows: number }> {
  const from = opts.fromMonth ?? '0000-00';
  const months = (await store.all<{ month: string; n: number }>(
    'SELECT month, count(*)::INTEGER AS n FROM ratio_month_inputs WHERE month >= $from GROUP BY month ORDER BY month', { from },
  )).map((m) => ({ month: String(m.month), n: Number(m.n) }));
  await store.transaction(async (s) => {
    await s.run('DELETE FROM ratio_mart_state');
    await s.run('INSERT INTO ratio_mart_state VALUES (now()::TIMESTAMP, $from, FALSE)', { from: opts.fromMonth });
    // Months no longer in the data go (their rows are not written again below).
    if (months.length === 0) await s.run('DELETE FROM ratio_mart WHERE month >= $from', { from });
    else {
      await s.run(`DELETE FROM ratio_mart WHERE month >= $from AND month NOT IN (SELECT month FROM ratio_month_inputs WHERE month >= $from)`, { from });
    }
  });
  let rows = 0;
  for (const run of monthRuns(months, opts.inputRows ?? MART_INPUT_ROWS)) {
    await store.transaction(async (s) => {
      const params = { first: run.first, last: run.last };
      await s.run('DELETE FROM ratio_mart WHERE month >= $first AND month <= $last', params);
      const [r] = await s.all<{ Count: number | bigint }>(
        `INSERT INTO ratio_mart BY NAME SELECT * FROM ratio_mart_rows_between(strptime($first || '-01', '%Y-%m-%d')::DATE,
           strptime($last || '-01', '%Y-%m-%d')::DATE, cached := TRUE)`,
        params,
      );
      rows += Number(r?.Count ?? 0);
    });
  }
  await store.transaction((s) => s.run('UPDATE ratio_mart_state SET complete = TRUE, written_at = now()::TIMESTAMP'));
  return { rows };
}

/** Consecutive months in runs of at most `size` kept-input rows (a month larger than that is a run of its own). */
export function monthRuns(months: Array<{ month: string; n: number }>, size: number): Array<{ first: string; last: string }> {
  const out: Array<{ first: string; last: string }> = [];
  let cur: { first: string; last: string; n: number } | null = null;
  for (const m of months) {
    if (cur && cur.n + m.n <= size) { cur.last = m.month; cur.n += m.n; continue; }
    if (cur) out.push({ first: cur.first, last: cur.last });
    cur = { first: m.month, last: m.month, n: m.n };
  }
  if (cur) out.push({ first: cur.first, last: cur.last });
  return out;
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
