// The ratio inputs kept per mid × network × month (sql/migrations/015_ratio_month_inputs.sql) for the alert
// evaluation: refreshed from the sources' fingerprints (store/alerts.ts sourceMarks), so that a nightly computes
// again only the months its loads touched, and a full evaluation (other rules) computes none.
import type { Store } from './db.ts';
import { insertMarks, readMarks, sourceMarks, type SourceMark } from './alerts.ts';
import { addMonths } from '../lib/utc.ts';

/** The months whose fingerprints differ between two sets of marks (added, changed or gone), sorted. */
export function touchedMonths(before: SourceMark[], now: SourceMark[]): string[] {
  const key = (m: SourceMark) => `${m.source}\u0000${m.month}`;
  const was = new Map(before.map((m) => [key(m), m]));
  const out = new Set<string>();
  for (const m of now) {
    const b = was.get(key(m));
    if (!b || b.fingerprint !== m.fingerprint || b.row_count !== m.row_count) out.add(m.month);
    was.delete(key(m));
  }
  for (const b of was.values()) out.add(b.month);
  return [...out].sort();
}

/** The month after a YYYY-MM. */
const nextMonth = (m: string) => addMonths(m, 1);

/**
 * The SQL objects ratio_month_inputs_between computes from (sql/views/40_ratios.sql, 10_stg_events.sql): another
 * definition of any of them (a cbp whose ratio SQL changed) means every month is computed again.
 */
const LOGIC_MACROS = ['ratio_month_inputs_between', 'ratio_stats_between', 'ratio_chargebacks_between', 'ratio_tc40_between', 'stg_utc_timestamp'];
const LOGIC_VIEWS = ['int_rdr__accepted_arns', 'int_tc40__reports'];

async function logicHash(s: Pick<Store, 'all'>): Promise<string> {
  const list = (xs: string[]) => xs.map((x) => `'${x}'`).join(', ');
  const [r] = await s.all<{ h: string | null }>(`
    SELECT md5(coalesce((SELECT string_agg(function_name || ':' || coalesce(macro_definition, ''), chr(10) ORDER BY function_name, macro_definition)
                           FROM duckdb_functions() WHERE function_name IN (${list(LOGIC_MACROS)}) AND function_type IN ('macro', 'table_macro')
                            AND database_name = current_database() AND schema_name = 'main'), '')
               || chr(10) || coalesce((SELECT string_agg(view_name || ':' || sql, chr(10) ORDER BY view_name)
                           FROM duckdb_views() WHERE view_name IN (${list(LOGIC_VIEWS)})
                            AND database_name = current_database() AND schema_name = 'main'), '')) AS h`);
  return String(r.h);
}

/**
 * At most this many MID report rows are computed in one statement (a run of consecutive months): the memory a
 * statement takes stays within the store's limit however long the history.
 */
const ROWS_PER_STATEMENT = 300_000;

export interface RatioInputsRefresh {
  /** the sources' fingerprints the kept inputs now reflect (what the evaluation compares with its last) */
  marks: SourceMark[];
  /** months computed again (sorted); every month with figures when all were */
  months: string[];
  /** every month was computed again: none were kept, or the SQL computing them changed */
  full: boolean;
}

/**
 * Brings ratio_month_inputs up to date with the sources, in one transaction: the months whose sources' fingerprints
 * changed since the last refresh, and the month after each (its denominator is that month's transactions), are
 * computed again, as is a month of MID report figures of which nothing is kept (rows deleted by hand); every month
 * is when nothing was kept, the SQL that computes them changed, or `all` asks for it. Returns the fingerprints it
 * reflects: read in the same transaction, so no load committed meanwhile goes unnoticed (it is touched for the next
 * refresh).
 */
export async function refreshRatioInputs(store: Store, opts: { all?: boolean } = {}): Promise<RatioInputsRefresh> {
  return store.transaction(async (s) => {
    const marks = await sourceMarks(s);
    const logic = await logicHash(s);
    const [kept] = await s.all<{ logic_hash: string }>('SELECT logic_hash FROM ratio_input_logic LIMIT 1');
    const full = opts.all === true || !kept || kept.logic_hash !== logic;
    let months: string[];
    if (full) {
      await s.run('DELETE FROM ratio_month_inputs');
      months = [...new Set(marks.filter((m) => m.source === 'mid_stats').map((m) => m.month))].sort();
    } else {
      const touched = touchedMonths(await readMarks(s, 'ratio_input_marks'), marks);
      const held = new Set((await s.all<{ month: string }>('SELECT DISTINCT month FROM ratio_month_inputs')).map((r) => String(r.month)));
      const lost = marks.filter((m) => m.source === 'mid_stats' && !held.has(m.month)).map((m) => m.month);
      months = [...new Set([...touched.flatMap((m) => [m, nextMonth(m)]), ...lost])].sort();
      if (months.length) await s.run(`DELETE FROM ratio_month_inputs WHERE month IN (${months.map((_, i) => `$${i + 1}`).join(', ')})`, months);
    }
    const statRows = new Map(marks.filter((m) => m.source === 'mid_stats').map((m) => [m.month, m.row_count]));
    const runs = monthRuns(months.filter((m) => statRows.has(m)), statRows);
    if (runs.length) {
      // The TC40 counts of the months computed, once (each statement would parse every TC40 event again).
      const day = (m: string) => `${m}-01`;
      await s.run('CREATE OR REPLACE TEMP TABLE _cbp_tc40_monthly AS SELECT * FROM ratio_tc40_between($first::DATE, $last::DATE)',
        { first: day(runs[0][0]), last: day(runs[runs.length - 1][1]) });
      for (const [first, last] of runs) {
        await s.run(`INSERT INTO ratio_month_inputs BY NAME SELECT * FROM ratio_month_inputs_between($first::DATE, $last::DATE, tc40 := '_cbp_tc40_monthly')`,
          { first: day(first), last: day(last) });
      }
      // (on an error, the rollback takes the table away with everything else)
      await s.run('DROP TABLE _cbp_tc40_monthly');
    }
    await s.run('DELETE FROM ratio_input_marks');
    await s.run('DELETE FROM ratio_input_logic');
    await insertMarks(s, 'ratio_input_marks', marks);
    await s.run('INSERT INTO ratio_input_logic VALUES ($h, now()::TIMESTAMP)', { h: logic });
    return { marks, months, full };
  }, { generation: false });
}

/**
 * Sorted months as runs of consecutive months, each of at most ROWS_PER_STATEMENT MID report rows (a month with
 * more is a run of its own).
 */
function monthRuns(months: string[], rows: Map<string, number>): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let run: [string, string] | null = null;
  let n = 0;
  for (const m of months) {
    const k = rows.get(m) ?? 0;
    if (run && nextMonth(run[1]) === m && n + k <= ROWS_PER_STATEMENT) {
      run[1] = m;
      n += k;
    } else {
      if (run) out.push(run);
      run = [m, m];
      n = k;
    }
  }
  if (run) out.push(run);
  return out;
}
