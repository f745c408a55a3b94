// What `cbp report` reads of the kept ratio table (mart_ratios over ratio_mart) when it holds what the rules configured
// now say: counts over every row of the report's months, which rows its sections show (the at-risk rows, the trends'
// series, the heat map's MIDs), and only those rows, with the rules kept beside them (ratio_rules); cli/report-source.ts
// runs the steps. Temp tables only: a read-only snapshot allows them.
import { EXPLAINED_RATIO_FIELDS, type ExplainedRatioRow } from '../contract/ratios.ts';
import { insertRows } from './insert-rows.ts';
import type { Store } from './db.ts';
import { fastColumn } from './db-chunks.ts';
import { ratioRowMaker } from './ratios.ts';
import { dropTemp } from './sql-text.ts';

type ReadStore = Pick<Store, 'all' | 'run' | 'mapRows'>;
type StreamStore = ReadStore & Pick<Store, 'conn'>;

/** Rows some rule in force reads (ratio_rules: the rules the SQL judge reads). */
const RULE_READ = '(m.network, m.program, m.metric) IN (SELECT (network, program, metric) FROM ratio_rules)';

/** Months first .. month (YYYY-MM) of mart_ratios m, the rows a rule reads, of the MIDs picked (none: every MID). */
function rowsWhere(q: { first: string; month: string; mids?: string[] }): { where: string; params: Record<string, string> } {
  const params: Record<string, string> = { first: q.first, month: q.month };
  const mids = (q.mids ?? []).map((m, i) => { params[`mid${i}`] = m; return `$mid${i}`; });
  return { where: `m.month >= $first AND m.month <= $month AND ${RULE_READ}${mids.length ? ` AND m.mid IN (${mids.join(', ')})` : ''}`, params };
}

/** The MIDs with a rule-read row in the months, and the months to date among them (their most days covered). */
export async function keptTotals(store: ReadStore, q: { first: string; month: string }): Promise<{ mids: number; partial: Array<{ month: string; days_covered: number | null; days_in_month: number | null }> }> {
  const { where, params } = rowsWhere(q);
  const [{ mids }] = await store.all<{ mids: number }>(`SELECT count(DISTINCT m.mid)::INTEGER AS mids FROM mart_ratios m WHERE ${where}`, params);
  const partial = await store.all<{ month: string; days_covered: number | null; days_in_month: number | null }>(
    `SELECT m.month, max(m.days_covered)::INTEGER AS days_covered, max(m.days_in_month)::INTEGER AS days_in_month
       FROM mart_ratios m WHERE ${where} AND m.is_partial AND NOT m.is_projection GROUP BY m.month ORDER BY m.month`, params);
  return { mids: Number(mids), partial: partial.map((p) => ({ month: String(p.month), days_covered: p.days_covered, days_in_month: p.days_in_month })) };
}

/** A series' key with how it ranks: r the state's order (level 3, watch 2, unknown 1, clear 0), c its closeness (-1 for none). */
export interface SeriesKey {
  mid: string;
  network: string;
  program: string;
  /** the month of a clear row; null for a trend (its best month shown) */
  month: string | null;
  r: number;
  c: number;
}

/**
 * The at-risk rows of the months shown (per series × month, its most severe state, closest first: report/model.ts): how many;
 * the series not clear, picked; the clear ones and the trends' series that may make their caps (ties at the cap included).
 */
export async function keptAtRisk(
  store: ReadStore, q: { shown: string[]; clearCap: number; trendCap: number },
): Promise<{ total: number; clear: SeriesKey[]; trends: number; trendTop: SeriesKey[] }> {
  const params: Record<string, string> = {};
  const months = q.shown.map((m, i) => { params[`s${i}`] = m; return `$s${i}`; }).join(', ');
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_report_risk AS
    SELECT mid, network, program, month, b.r AS r, b.c AS c FROM (
      SELECT m.mid, m.network, m.program, m.month,
             max({'r': CASE m.state WHEN 'level' THEN 3 WHEN 'watch' THEN 2 WHEN 'unknown' THEN 1 ELSE 0 END, 'c': coalesce(m.closeness, -1)::DOUBLE}) AS b
        FROM mart_ratios m
       WHERE m.month IN (${months}) AND NOT m.is_projection AND m.state IS NOT NULL AND ${RULE_READ}
       GROUP BY ALL)`, params);
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_report_pick (mid VARCHAR, network VARCHAR, program VARCHAR, from_month VARCHAR)`);
  await store.run(`INSERT INTO _cbp_report_pick SELECT DISTINCT mid, network, program, $from FROM _cbp_report_risk WHERE r > 0`, { from: q.shown[0] });
  const [{ total, trends }] = await store.all<{ total: number; trends: number }>(
    `SELECT count(*)::INTEGER AS total, count(DISTINCT (mid, network, program)) FILTER (WHERE r >= 2)::INTEGER AS trends FROM _cbp_report_risk`);
  const clear = await store.all<SeriesKey>(
    'SELECT mid, network, program, month, r, c FROM _cbp_report_risk WHERE r = 0 QUALIFY rank() OVER (PARTITION BY month ORDER BY c DESC) <= $cap',
    { cap: q.clearCap });
  const trendTop = await store.all<SeriesKey>(
    `SELECT mid, network, program, NULL AS month, b.r AS r, b.c AS c
       FROM (SELECT mid, network, program, max({'r': r, 'c': c}) AS b FROM _cbp_report_risk WHERE r >= 2 GROUP BY ALL)
     QUALIFY rank() OVER (ORDER BY b.r DESC, b.c DESC) <= $cap`,
    { cap: q.trendCap });
  return { total: Number(total), clear, trends: Number(trends), trendTop };
}

/** Adds series to the picks: their rows from from_month (YYYY-MM) on are read. */
export async function pickSeries(store: Pick<Store, 'run'>, series: Array<{ mid: string; network: string; program: string }>, fromMonth: string): Promise<void> {
  await insertRows(store, '_cbp_report_pick', series.map((s) => [s.mid, s.network, s.program, fromMonth]));
}

/** A heat-map threshold: the entry (lowest-ranked level's) ratio threshold of a rules class × network × program × metric × month. */
export interface EntryThreshold {
  class: string;
  network: string;
  program: string;
  metric: string;
  month: string;
  entry: number;
}

/** A MID's heat-map order: its last month's cell and its highest (-1: none), as report/model.ts sorts the rows. */
export interface HeatKey {
  mid: string;
  last: number;
  peak: number;
}

/**
 * The heat map's cells as report/model.ts heatCell draws them, the most severe of each MID × month: how many MIDs have
 * one, and those that may make the cap (ties included).
 */
export async function keptHeat(
  store: ReadStore, q: { first: string; month: string; watchFraction: number; cap: number; entries: EntryThreshold[] },
): Promise<{ total: number; top: HeatKey[] }> {
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_report_entry (class VARCHAR, network VARCHAR, program VARCHAR, metric VARCHAR, month VARCHAR, entry DOUBLE)');
  await insertRows(store, '_cbp_report_entry', q.entries.map((e) => [e.class, e.network, e.program, e.metric, e.month, e.entry]));
  const { where, params } = rowsWhere(q);
  // Of the kept table itself (no forecast is read here). met: its own scan (small result), so that the cells stream through one scan.
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_report_heat_rows AS
    WITH met AS (
      SELECT DISTINCT m.mid, m.network, m.program, m.metric, m.month
        FROM ratio_mart m LEFT JOIN ratio_rule_classes c ON c.id = m.mid
        JOIN int_ratio_rules k ON k.class = coalesce(c.class, '') AND k.network = m.network AND k.program = m.program AND k.metric = m.metric
         AND k.from_month <= m.month AND k.to_month >= m.month
       WHERE ${where} AND NOT m.is_projection AND m.state IS NOT NULL AND m.state <> 'unknown' AND ratio_meets(k, m, 1.0)
    ), w AS (
      SELECT m.mid, m.network, m.program, m.metric, m.month, m.state, CASE WHEN m.ratio IS NOT NULL AND e.entry > 0 THEN m.ratio / e.entry END AS v
        FROM ratio_mart m LEFT JOIN ratio_rule_classes c ON c.id = m.mid
        LEFT JOIN _cbp_report_entry e ON e.class = coalesce(c.class, '') AND e.network = m.network AND e.program = m.program AND e.metric = m.metric AND e.month = m.month
       WHERE ${where} AND NOT m.is_projection AND m.state IS NOT NULL
    ), cell AS (
      SELECT w.mid, w.month, w.v,
             CASE WHEN w.state = 'unknown' THEN 1 WHEN w.v IS NULL THEN NULL WHEN w.v < $wf THEN 0 WHEN w.v < 1 THEN 2
                  WHEN met.mid IS NOT NULL THEN 4 ELSE 3 END AS kind
        FROM w LEFT JOIN met USING (mid, network, program, metric, month)
    )
    SELECT mid, month, max({'kind': kind, 'v': coalesce(v, -1)::DOUBLE}).v AS v FROM cell WHERE kind IS NOT NULL GROUP BY mid, month`,
  { ...params, wf: q.watchFraction } as never);
  const [{ total }] = await store.all<{ total: number }>('SELECT count(DISTINCT mid)::INTEGER AS total FROM _cbp_report_heat_rows');
  const top = await store.all<{ mid: string; last_v: number; peak_v: number }>(
    `SELECT mid, coalesce(max(v) FILTER (WHERE month = $month), -1)::DOUBLE AS last_v, greatest(-1, max(v))::DOUBLE AS peak_v
       FROM _cbp_report_heat_rows GROUP BY mid QUALIFY rank() OVER (ORDER BY last_v DESC, peak_v DESC) <= $cap`,
    { month: q.month, cap: q.cap });
  await store.run(dropTemp('TABLE', '_cbp_report_heat_rows'));
  return { total: Number(total), top: top.map((h) => ({ mid: String(h.mid), last: h.last_v, peak: h.peak_v })) };
}

/** The explained row of a mart_ratios row read with mapRows (cli/commands/ratios.ts storedRow's fields). */
function explainedRowMaker(column: (name: string) => readonly unknown[]): (i: number) => ExplainedRatioRow {
  const base = ratioRowMaker(column);
  const text = (name: string) => { const c = column(name); return (i: number) => (c[i] === null || c[i] === undefined ? null : String(c[i])); };
  const num = (name: string) => { const c = column(name); return (i: number) => (c[i] === null || c[i] === undefined ? null : Number(c[i])); };
  const [level, state, nextLevel, reason, region, regionSource, monitoredAs, supersededBy, certainty, certaintyNote] =
    ['level', 'state', 'next_level', 'reason', 'region', 'region_source', 'monitored_as', 'superseded_by', 'certainty', 'certainty_note'].map(text);
  const [nextThreshold, closeness, headroom, overBy, fee] = ['next_threshold', 'closeness', 'headroom_count', 'over_by_count', 'fee_estimate'].map(num);
  const [basis, currency, feeBasis, chanceLevel] = ['headroom_basis', 'fee_currency', 'fee_basis', 'chance_level'].map(text);
  const [chance, expected, low, high, paceDay] = ['chance', 'expected_count', 'expected_low80', 'expected_high80', 'pace_day'].map(num);
  // Added to the ratio row in place (a spread into a new object of 38 fields is much slower).
  return (i) => Object.assign(base(i), {
    level: level(i), state: state(i) as ExplainedRatioRow['state'], next_level: nextLevel(i), next_threshold: nextThreshold(i), closeness: closeness(i),
    reason: reason(i), region: region(i), region_source: regionSource(i) as ExplainedRatioRow['region_source'], monitored_as: monitoredAs(i),
    superseded_by: supersededBy(i), certainty: certainty(i) as ExplainedRatioRow['certainty'], certainty_note: certaintyNote(i),
    headroom_count: headroom(i), over_by_count: overBy(i), headroom_basis: basis(i) as ExplainedRatioRow['headroom_basis'], fee_estimate: fee(i),
    fee_currency: currency(i), fee_basis: feeBasis(i) as ExplainedRatioRow['fee_basis'],
    chance: chance(i), chance_level: chanceLevel(i), expected_count: expected(i), expected_low80: low(i), expected_high80: high(i), pace_day: paceDay(i),
  });
}

const ORDER = 'ORDER BY m.mid, m.network, m.program, m.metric, m.month, m.is_projection';

/** The columns of an explained row (mart_ratios' explained_at is neither needed nor computed). */
const COLUMNS = EXPLAINED_RATIO_FIELDS.map((c) => `m.${c}`).join(', ');

/** Texts only at-risk rows read: NULL in the months before those shown, which trends and the heat map alone read. */
const SHOWN_ONLY: Record<string, string> = {
  denominator_month: 'VARCHAR', no_ratio_reason: 'VARCHAR', tc40_observed_from: 'DATE', missing_sources: 'VARCHAR', reason: 'VARCHAR', region: 'VARCHAR',
  region_source: 'VARCHAR', monitored_as: 'VARCHAR', superseded_by: 'VARCHAR', certainty: 'VARCHAR', certainty_note: 'VARCHAR',
  headroom_basis: 'VARCHAR', fee_currency: 'VARCHAR', fee_basis: 'VARCHAR',
};
const EARLIER = COLUMNS.split(', ').map((c) => { const name = c.slice(2); return SHOWN_ONLY[name] ? `NULL::${SHOWN_ONLY[name]} AS ${name}` : c; }).join(', ');

/** Every rule-read row of these MIDs in months first .. month, sorted by series, month and projection. */
export async function keptRowsOfMids(store: ReadStore, q: { first: string; month: string; mids: string[] }): Promise<ExplainedRatioRow[]> {
  if (q.mids.length === 0) return [];
  const { where, params } = rowsWhere(q);
  return store.mapRows(`SELECT ${COLUMNS} FROM mart_ratios m WHERE ${where} ${ORDER}`, params, explainedRowMaker);
}

/**
 * The picked rows: the MIDs of `whole` (heat: true) and the series picked from the first month, every month, in one read;
 * then the series picked for the months shown, streamed in batches of about batchRows rows. One scan each (no MID order).
 */
export async function forEachPickedBatch(
  store: StreamStore, q: { first: string; month: string; shownFrom: string; whole: string[]; batchRows: number },
  fn: (rows: ExplainedRatioRow[], parts: { heat: boolean }) => void | Promise<void>,
): Promise<void> {
  const { where, params } = rowsWhere(q);
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_report_whole (mid VARCHAR)');
  await insertRows(store, '_cbp_report_whole', q.whole.map((m) => [m]));
  // Each series once, from its earliest month; the whole MIDs' series are read with them.
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_report_series AS
    SELECT mid, network, program, min(from_month) AS from_month FROM _cbp_report_pick WHERE mid NOT IN (SELECT mid FROM _cbp_report_whole) GROUP BY ALL`);
  // Months before those shown without their texts: less time, and fewer blocks held in memory.
  const picked = `(m.mid IN (SELECT mid FROM _cbp_report_whole) OR (m.mid, m.network, m.program) IN (SELECT (mid, network, program) FROM _cbp_report_series WHERE from_month <= $first))`;
  const full = await store.mapRows(
    `SELECT ${COLUMNS} FROM mart_ratios m WHERE ${where} AND m.month >= $shown AND ${picked}
     UNION ALL
     SELECT ${EARLIER} FROM mart_ratios m WHERE ${where} AND m.month < $shown AND ${picked}
     ORDER BY mid, network, program, metric, month, is_projection`,
    { ...params, shown: q.shownFrom }, explainedRowMaker);
  const whole = new Set(q.whole);
  await fn(full.filter((r) => whole.has(r.mid)), { heat: true });
  await fn(full.filter((r) => !whole.has(r.mid)), { heat: false });
  // The others in one streamed read (one scan), passed on in batches of whole MIDs.
  await streamRows(store,
    `SELECT ${COLUMNS} FROM mart_ratios m JOIN _cbp_report_series p ON p.mid = m.mid AND p.network = m.network AND p.program = m.program
      WHERE ${where} AND m.month >= $shown AND m.month >= p.from_month AND p.from_month > $first ${ORDER}`,
    { ...params, shown: q.shownFrom }, q.batchRows, (rows) => fn(rows, { heat: false }));
  await store.run(dropTemp('TABLE', '_cbp_report_series'));
}

/** A query's explained rows streamed chunk by chunk, passed on in batches of at least `size` rows ending at a change of MID. */
async function streamRows(store: Pick<Store, 'conn'>, sql: string, params: Record<string, string>, size: number, fn: (rows: ExplainedRatioRow[]) => void | Promise<void>): Promise<void> {
  const result = await store.conn.stream(sql, params);
  const index = new Map(result.columnNames().map((name, i) => [name, i]));
  const types = result.columnTypes();
  let batch: ExplainedRatioRow[] = [];
  for (;;) {
    const chunk = await result.fetchChunk();
    if (!chunk || chunk.rowCount === 0) break;
    const n = chunk.rowCount;
    const make = explainedRowMaker((name) => {
      const i = index.get(name);
      if (i === undefined) return [];
      const fast = fastColumn(chunk, i, types[i], n);
      if (fast) return fast;
      const vector = chunk.getColumnVector(i);
      return Array.from({ length: n }, (_, r) => vector.getItem(r));
    });
    for (let r = 0; r < n; r++) {
      const row = make(r);
      if (batch.length >= size && batch[batch.length - 1].mid !== row.mid) { await fn(batch); batch = []; }
      batch.push(row);
    }
  }
  if (batch.length) await fn(batch);
}
