// The ratio mart kept as a table (ratio_mart, migration 017): every evaluation writes the rows of the months it judged,
// computed from the kept ratio inputs and the explanations it just stored (sql/views/42_ratio_mart.sql
// ratio_mart_rows_between), so mart_ratios, `cbp ratios`, `cbp report` and `cbp export` read rows instead of computing
// every month again. docs/ratios.md "The kept ratio table" says when it is written and how a reader knows it is behind.
import type { Store } from './db.ts';
import { CAPTURE_MONTH, lastEvaluation, sourceMarks } from './alerts.ts';
import { monthRuns, touchedMonths } from './ratio-inputs.ts';
import { insertChunked } from './insert.ts';

type ReadStore = Pick<Store, 'all'>;

/**
 * Kept-input rows (one a MID × network × month, about 4 rows of the mart each) written in one transaction: a
 * transaction holds what it inserted in memory until it commits. Runs are cut by months: a month bound reaches the
 * scan of the kept inputs, a MID bound does not (ten batches of MIDs computed every MID ten times). With the headroom
 * and fee columns, 1.5 million (all 36 months of 10,000 MIDs) ran out of the store's 192MB on a re-judge under other rules.
 */
export const MART_INPUT_ROWS = 600_000;

/** What an evaluation rewrites of the months from fromMonth on (store/ratio-mart.ts writeRatioMart). */
export interface MartScope {
  /** first month judged; null: every month, every row */
  fromMonth: string | null;
  /** months written whole (their sources changed); default: every month */
  wholeMonths?: string[];
  /** and every month after this one (those past the last evaluation's month: their rows were not explained then) */
  wholeAfter?: string;
  /** of the other months, the rows of these MIDs only (those whose stored explanations may have changed) */
  mids?: string[];
  /** kept-input rows a transaction (default MART_INPUT_ROWS) */
  inputRows?: number;
}

/** MIDs with explanations stored in months from fromMonth on: taken before and after an evaluation, their rows may change. */
export async function explainedMids(store: ReadStore, fromMonth: string): Promise<string[]> {
  return (await store.all<{ mid: string }>('SELECT DISTINCT mid FROM ratio_explanations WHERE month >= $from', { from: fromMonth })).map((r) => r.mid);
}

/**
 * Replaces the mart's rows of months fromMonth on with those the last evaluation explains: the months of
 * scope.wholeMonths whole, a run of months a transaction, and of the other months the rows of scope.mids (with those
 * explained now) only: a nightly with nothing new rewrites the few MIDs the rules judged, not every MID's month. The
 * state row says "incomplete" until the last run is written: a write cut short (killed) leaves readers told the mart is
 * behind, and the next write (whatever its scope) writes every row again.
 */
export async function writeRatioMart(store: Store, scope: MartScope): Promise<{ rows: number }> {
  const [state] = await store.all<{ complete: boolean }>('SELECT complete FROM ratio_mart_state LIMIT 1');
  const all = !state?.complete || scope.fromMonth === null;
  const fromMonth = all ? null : scope.fromMonth;
  const from = fromMonth ?? '0000-00';
  const months = (await store.all<{ month: string; n: number }>(
    'SELECT month, count(*)::INTEGER AS n FROM ratio_month_inputs WHERE month >= $from GROUP BY month ORDER BY month', { from },
  )).map((m) => ({ month: String(m.month), n: Number(m.n) }));
  const whole = new Set(months.map((m) => m.month).filter((m) => all || !scope.wholeMonths || scope.wholeMonths.includes(m) || (scope.wholeAfter !== undefined && m > scope.wholeAfter)));
  await store.transaction(async (s) => {
    await s.run('DELETE FROM ratio_mart_state');
    await s.run('INSERT INTO ratio_mart_state VALUES (now()::TIMESTAMP, $from, FALSE)', { from: fromMonth });
    // Months no longer in the data go (their rows are not written again below).
    await s.run(`DELETE FROM ratio_mart WHERE month >= $from AND month NOT IN (SELECT month FROM ratio_month_inputs WHERE month >= $from)`, { from });
  });
  let rows = 0;
  const insert = async (s: Pick<Store, 'all'>, first: string, last: string, kept = 'ratio_month_inputs') => {
    const [r] = await s.all<{ Count: number | bigint }>(
      `INSERT INTO ratio_mart BY NAME SELECT * FROM ratio_mart_stored_between(strptime($first || '-01', '%Y-%m-%d')::DATE,
         strptime($last || '-01', '%Y-%m-%d')::DATE, kept := '${kept}')`,
      { first, last },
    );
    rows += Number(r?.Count ?? 0);
  };
  // Runs of consecutive months (ratio-inputs.ts monthRuns): a month not written whole is never inside one.
  const sizes = new Map(months.map((m) => [m.month, m.n]));
  for (const [first, last] of monthRuns(months.map((m) => m.month).filter((m) => whole.has(m)), sizes, scope.inputRows ?? MART_INPUT_ROWS)) {
    await store.transaction(async (s) => {
      await s.run('DELETE FROM ratio_mart WHERE month >= $first AND month <= $last', { first, last });
      await insert(s, first, last);
    });
  }
  const partial = months.filter((m) => !whole.has(m.month)).map((m) => m.month);
  if (partial.length) {
    const mids = [...new Set([...(scope.mids ?? []), ...(await explainedMids(store, partial[0]))])];
    if (mids.length) await writeMids(store, partial, mids, insert);
  }
  await store.transaction((s) => s.run('UPDATE ratio_mart_state SET complete = TRUE, written_at = now()::TIMESTAMP'));
  return { rows };
}

/** The mart rows of some MIDs in some months, from a temp table of their kept inputs (the mart's SQL reads it as kept). */
async function writeMids(store: Store, months: string[], mids: string[], insert: (s: Pick<Store, 'all'>, first: string, last: string, kept: string) => Promise<void>) {
  await store.exclusive(async () => {
    await store.run('CREATE OR REPLACE TEMP TABLE ratio_mart_mids (mid VARCHAR)');
    await store.run('CREATE OR REPLACE TEMP TABLE ratio_mart_months (month VARCHAR)');
    try {
      await insertChunked(store, 'INSERT INTO ratio_mart_mids', ['mid'], mids.map((m) => [m]), '');
      await insertChunked(store, 'INSERT INTO ratio_mart_months', ['month'], months.map((m) => [m]), '');
      await store.run(`CREATE OR REPLACE TEMP TABLE ratio_mart_kept AS SELECT * FROM ratio_month_inputs
                        WHERE month IN (SELECT month FROM ratio_mart_months) AND mid IN (SELECT mid FROM ratio_mart_mids)`);
      await store.transaction(async (s) => {
        await s.run(`DELETE FROM ratio_mart WHERE month IN (SELECT month FROM ratio_mart_months) AND mid IN (SELECT mid FROM ratio_mart_mids)`);
        await insert(s, months[0], months[months.length - 1], 'ratio_mart_kept');
      });
    } finally {
      await store.run('DROP TABLE IF EXISTS ratio_mart_kept; DROP TABLE IF EXISTS ratio_mart_mids; DROP TABLE IF EXISTS ratio_mart_months');
    }
  });
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
