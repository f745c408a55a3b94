// The ratio inputs kept per mid × network × month (sql/migrations/015_ratio_month_inputs.sql) for the alert
// evaluation: refreshed from the sources' fingerprints (store/source-marks.ts sourceMarksOf), so that a nightly computes
// again only the months its loads touched, and a full evaluation (other rules) computes none.
import type { Store } from './db.ts';
import { insertMarks, readMarks, sourceMarksOf, type SourceMark } from './source-marks.ts';
import { addMonths } from '../lib/utc.ts';
import { sizeBytes } from '../lib/size.ts';
import { dropTemp } from './sql-text.ts';

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

/** Marks of what a month's rows are missing (store/source-marks.ts sourceMarksOf), not of the inputs kept here. */
const NOT_INPUTS = new Set(['chargeback_coverage', 'tc40_capture']);

/** The SQL objects ratio_month_inputs_between computes from (40_ratios.sql, 10_stg_events.sql): one changed, every month is computed again. */
const LOGIC_MACROS = ['ratio_month_inputs_between', 'ratio_stats_between', 'ratio_chargebacks_between', 'ratio_tc40_between', 'stg_utc_timestamp'];
const LOGIC_VIEWS = ['int_rdr__accepted_arns', 'int_chargebacks__counted', 'int_tc40__events', 'int_tc40__reports'];

async function logicHash(s: Pick<Store, 'all'>): Promise<string> {
  const list = (xs: string[]) => xs.map((x) => `'${x}'`).join(', ');
  // Without spaces and double quotes: DuckDB writes a definition it has just made otherwise than one it read back
  // ("DATE" against DATE, DECIMAL(18, 4) against DECIMAL(18,4)), and every month would be computed again once.
  const [r] = await s.all<{ h: string | null }>(`
    SELECT md5(regexp_replace(coalesce((SELECT string_agg(function_name || ':' || coalesce(macro_definition, ''), chr(10) ORDER BY function_name, macro_definition)
                           FROM duckdb_functions() WHERE function_name IN (${list(LOGIC_MACROS)}) AND function_type IN ('macro', 'table_macro')
                            AND database_name = current_database() AND schema_name = 'main'), '')
               || chr(10) || coalesce((SELECT string_agg(view_name || ':' || sql, chr(10) ORDER BY view_name)
                           FROM duckdb_views() WHERE view_name IN (${list(LOGIC_VIEWS)})
                            AND database_name = current_database() AND schema_name = 'main'), ''), '[\\s"]', '', 'g')) AS h`);
  return String(r.h);
}

/**
 * At most this many MID report rows are computed in one statement (a run of consecutive months), for a store of this
 * memory limit: the memory a statement takes stays within it however long the history. Fewer rows a statement cost
 * time, so this is the most that fit the limit with room to spare (on bench/ratio-engine.bench.ts's data).
 */
export function rowsPerStatement(memoryLimit: string): number {
  const mb = sizeBytes(memoryLimit) / 1e6;
  if (!Number.isFinite(mb)) return 300_000;
  return Math.max(25_000, Math.min(300_000, Math.round((mb - 96) * 2_000)));
}

export interface RatioInputsRefresh {
  /** the sources' fingerprints the kept inputs now reflect (what the evaluation compares with its last) */
  marks: SourceMark[];
  /** months computed again (sorted); every month with figures when all were */
  months: string[];
  /** every month was computed again: none were kept, or the SQL computing them changed */
  full: boolean;
}

/**
 * Brings ratio_month_inputs up to date: the months whose sources' fingerprints changed (and each one's next, whose
 * denominator it is), or every month when none were kept, their SQL changed or `all` asks. A run of months a transaction
 * (a transaction holds its rows in memory); the fingerprints, read first, are recorded last, so a cut-short refresh is redone.
 */
export async function refreshRatioInputs(store: Store, opts: { all?: boolean } = {}): Promise<RatioInputsRefresh> {
  // Alone on the connection (store.exclusive): the TC40 temp table is this refresh's between its transactions.
  return store.exclusive(async () => {
    const { marks, tc40Events } = await sourceMarksOf(store); // (before the transaction: there no scan's memory is capped)
    const plan = await store.transaction(async (s) => {
      const logic = await logicHash(s);
      const [kept] = await s.all<{ logic_hash: string; tc40_events: string | null }>('SELECT logic_hash, tc40_events FROM ratio_input_logic LIMIT 1');
      const full = opts.all === true || !kept || kept.logic_hash !== logic;
      const stats = [...new Set(marks.filter((m) => m.source === 'mid_stats').map((m) => m.month))].sort();
      const held = new Set((await s.all<{ month: string }>('SELECT DISTINCT month FROM ratio_month_inputs')).map((r) => String(r.month)));
      let months: string[];
      if (full) months = stats;
      else {
        // Coverage and capture marks say what a row is missing, not what its inputs are (ratio_rows_covered_between).
        const inputs = (l: SourceMark[]) => l.filter((m) => !NOT_INPUTS.has(m.source));
        const touched = touchedMonths(inputs(await readMarks(s, 'ratio_input_marks')), inputs(marks));
        const lost = stats.filter((m) => !held.has(m));
        months = [...new Set([...touched.flatMap((m) => [m, addMonths(m, 1)]), ...lost])].sort();
      }
      // Months kept that have no MID report figures now (all of them gone, or touched and gone) are dropped here; the
      // others are replaced run by run below.
      const withStats = new Set(stats);
      const dropped = [...held].filter((m) => !withStats.has(m) && (full || months.includes(m)));
      if (dropped.length) await s.run(`DELETE FROM ratio_month_inputs WHERE month IN (${dropped.map((_, i) => `$${i + 1}`).join(', ')})`, dropped);
      return { marks, tc40Events, keptEvents: kept?.tc40_events ?? null, logic, full, months };
    }, { generation: false });
    const statRows = new Map(plan.marks.filter((m) => m.source === 'mid_stats').map((m) => [m.month, m.row_count]));
    const runs = monthRuns(plan.months.filter((m) => statRows.has(m)), statRows, rowsPerStatement(store.memoryLimit));
    if (runs.length) {
      // The TC40 counts of the months computed, once (each statement would parse every TC40 event again).
      const day = (m: string) => `${m}-01`;
      await store.run('CREATE OR REPLACE TEMP TABLE _cbp_tc40_monthly AS SELECT * FROM ratio_tc40_between($first::DATE, $last::DATE)',
        { first: day(runs[0][0]), last: day(runs[runs.length - 1][1]) });
      try {
        for (const [first, last] of runs) {
          await store.transaction(async (s) => {
            await s.run('DELETE FROM ratio_month_inputs WHERE month >= $first AND month <= $last', { first, last });
            // (in month order, so that a month's rows share row groups; a month alone needs no sort, which would hold all its rows)
            await s.run(`INSERT INTO ratio_month_inputs BY NAME SELECT * FROM ratio_month_inputs_between($first::DATE, $last::DATE, tc40 := '_cbp_tc40_monthly')${first === last ? '' : ' ORDER BY month'}`,
              { first: day(first), last: day(last) });
          }, { generation: false });
        }
      } finally {
        await store.run(dropTemp('TABLE', '_cbp_tc40_monthly'));
      }
    }
    // Nothing touched: the fingerprints kept are these already, and so is the SQL's hash; the events' digest is
    // recorded when it was not (the TC40 fingerprints were computed: those kept are of these events).
    if (!plan.full && plan.months.length === 0) {
      if (plan.keptEvents !== plan.tc40Events) await store.transaction((s) => s.run('UPDATE ratio_input_logic SET tc40_events = $d', { d: plan.tc40Events }), { generation: false });
      return { marks: plan.marks, months: plan.months, full: false };
    }
    await store.transaction(async (s) => {
      await s.run('DELETE FROM ratio_input_marks');
      await s.run('DELETE FROM ratio_input_logic');
      await insertMarks(s, 'ratio_input_marks', plan.marks);
      await s.run('INSERT INTO ratio_input_logic (logic_hash, refreshed_at, tc40_events) VALUES ($h, now()::TIMESTAMP, $d)', { h: plan.logic, d: plan.tc40Events });
    }, { generation: false });
    return { marks: plan.marks, months: plan.months, full: plan.full };
  });
}

/** Sorted months as runs of consecutive months, each of at most `most` MID report rows (a month with more: its own run). */
export function monthRuns(months: string[], rows: Map<string, number>, most: number): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let run: [string, string] | null = null;
  let n = 0;
  for (const m of months) {
    const k = rows.get(m) ?? 0;
    if (run && addMonths(run[1], 1) === m && n + k <= most) {
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
