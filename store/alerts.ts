// The alert tables (sql/migrations/005_alerts.sql): alert_states (each level's status per month), alerts (the
// notice history) and alert_outbox (one delivery per notice × notifier). Every statement on them lives here, the notice
// history's and the deliveries' in store/alert-history.ts.
// What to write is decided elsewhere: alerts/notices.ts derives notices and states (pure), alerts/engine.ts
// and alerts/outbox.ts run evaluation and delivery through these functions. Every write goes through
// Store.transaction, which raises the store's generation: the snapshot's publish step then knows the alert
// history or a delivery state changed (what `cbp alerts` shows analysts).
import type { Store } from './db.ts';
import { addMonths, sqlTimestamp } from '../lib/utc.ts';
import { readRatioRows } from './ratios.ts';
import type { RatioRow } from '../contract/ratios.ts';
import { insertChunked, sqlLiteral } from './insert.ts';
import { insertMarks, type SourceMark } from './source-marks.ts';

// The sources' fingerprints, where their callers have always found them.
export { CAPTURE_MONTH, insertMarks, lastEvaluation, readMarks, sourceMarks, sourceMarksOf, type MarksTable, type SourceMark } from './source-marks.ts';
// The notice history and its deliveries, likewise.
export * from './alert-history.ts';
export * from './alert-batch.ts';
export * from './alert-states.ts';

/** A store that can only be read (a snapshot opened read-only fits too). */
type ReadStore = Pick<Store, 'all'>;

/** unknown: a series at a level or in a watch band whose month cannot be judged (a source not loaded): the level is held.
 * due: a representment deadline near or passed (alerts/due.ts).
 * pipeline_failed / pipeline_recovered: a workflow failed for good, and its next success (alerts/pipeline-notices.ts). */
export const NOTICE_KINDS = ['reached', 'escalated', 'resolved', 'projected', 'watch', 'unknown', 'due', 'pipeline_failed', 'pipeline_recovered'] as const;
export type NoticeKind = (typeof NOTICE_KINDS)[number];

/** A notice: one row of the alerts table, and what notifiers are sent. */
export interface Notice {
  notice_id: string;
  kind: NoticeKind;
  mid: string;
  network: string;
  program: string;
  level: string;
  previous_level: string | null;
  month: string;
  metric: string | null;
  rule_id: string | null;
  comparison: string | null;
  ratio_threshold: number | null;
  numerator: number | null;
  denominator: number | null;
  denominator_month: string | null;
  ratio: number | null;
  ratio_pct: number | null;
  ratio_bps: number | null;
  is_projection: boolean;
  is_partial: boolean;
  notify: boolean;
  message: string;
  created_at: string;
  /** A `due` notice's case and its due date (YYYY-MM-DD), from due_notices (alerts/due.ts). */
  case_number?: string;
  due_date?: string;
}

/** One row of alert_states: a level's status (projected | reached | resolved) for a month. */
export interface AlertStateRow {
  mid: string;
  network: string;
  program: string;
  level: string;
  month: string;
  status: 'projected' | 'reached' | 'resolved';
  rank: number;
  ratio: number | null;
  numerator: number | null;
  denominator: number | null;
  is_partial: boolean;
  /**
   * first_seen_at of a new state, updated_at of one whose status, rank, figures or is_partial changed (UTC ISO); one
   * recorded as it is now is not rewritten
   */
  seen: string;
}

/**
 * A month an earlier evaluation recorded for a level, with its status then and, when read from the store, the figures
 * it was recorded with (what a state must differ in to be written again: store/alerts.ts recordEvaluation).
 */
export interface RecordedState {
  mid: string;
  network: string;
  program: string;
  level: string;
  month: string;
  status: string;
  rank?: number;
  ratio?: number | null;
  numerator?: number | null;
  denominator?: number | null;
  is_partial?: boolean;
}

/** One notifier's delivery of a notice (an alert_outbox row). */
export interface Delivery {
  notifier: string;
  /** pending | sent | failed (given up; `cbp alerts requeue` puts it back) */
  status: string;
  attempts: number;
  /** The last failure, secrets redacted; null once sent. */
  last_error: string | null;
  next_attempt_at: string | null;
  sent_at: string | null;
}

export interface OutboxRow {
  notice_id: string;
  notifier: string;
  status: string;
  attempts: number;
  last_error: string | null;
}

/** The lowest ratio threshold (watch band included) of a network × program × metric some enabled rule reads, in its months. */
export interface RuleFloor {
  network: string;
  program: string;
  metric: string;
  min: number;
  /** YYYY-MM: the months rules with this floor are in force (default: every month) */
  from_month?: string;
  to_month?: string;
}

/** A TIMESTAMP parameter: UTC wall time, as the columns hold it. */
const ts = sqlTimestamp;

/** A text literal (the rule set's enums need no quoting; a quote in one would still not end the literal). */
const lit = sqlLiteral;

/**
 * The SQL of a series' being hot, over the rows of `rows` (default w; alias w): a row meeting a level's watch band (ratio and
 * every condition × the watch fraction, or the level itself when the fraction is above 1) under a rule of its
 * MID's class in force that month (stageRules' temp tables k and c). No other series can be at a level, in the
 * watch band, or owe a notice (bar a level recorded before): its explanation is the same from any of its months.
 */
function hotRowsSql(watchFraction: number, conditions: number, rows = 'w'): string {
  const f = Math.min(1, watchFraction);
  if (!Number.isFinite(f) || f <= 0) throw new RangeError(`not a watch fraction: ${watchFraction}`);
  const scaled = (v: string) => (f === 1 ? v : `${v} * ${f.toString()}::DOUBLE`);
  const conds = Array.from({ length: conditions }, (_, i) => {
    const k = `k.c${i + 1}`;
    const v = `cbp_condition_value(${k}_field, w.numerator_count, w.numerator_amount, w.denominator_count, w.denominator_amount, w.month_transaction_count, w.month_transaction_amount)`;
    return ` AND (${k}_field IS NULL OR CASE ${k}_cmp WHEN '>=' THEN ${v} >= ${scaled(`${k}_value`)} ELSE ${v} > ${scaled(`${k}_value`)} END)`;
  }).join('');
  return `SELECT w.mid, w.network, w.program
         FROM ${rows} w LEFT JOIN _cbp_mid_class c USING (mid)
         JOIN _cbp_rules k ON k.class = coalesce(c.class, '') AND k.network = w.network AND k.program = w.program AND k.metric = w.metric
          AND k.from_month <= w.month AND k.to_month >= w.month
        WHERE isfinite(w.ratio)
          AND CASE k.comparison WHEN '>=' THEN w.ratio >= ${scaled('k.threshold')} ELSE w.ratio > ${scaled('k.threshold')} END${conds}`;
}

/** The staged rules a hot-series query reads (stageRules' result and the rule set's watch fraction). */
export interface StagedRules {
  watchFraction: number;
  /** condition columns staged (stageRules' result) */
  conditions: number;
}

/** The rule-read network × program × metric of some floors as SQL: a VALUES list, and the programs as an IN list. */
function targetsSql(floors: RuleFloor[]): { pairs: string; programs: string } {
  return {
    pairs: [...new Set(floors.map((f) => `(${lit(f.network)}, ${lit(f.program)}, ${lit(f.metric)})`))].join(', '),
    programs: [...new Set(floors.map((f) => lit(f.program)))].join(', '),
  };
}

/** The lowest watch band of each network × program × metric some rule reads (floors, whatever the class and the months). */
function lowestFloors(floors: RuleFloor[]): Array<{ network: string; program: string; metric: string; min: number }> {
  const low = new Map<string, RuleFloor & { min: number }>();
  for (const f of floors) {
    const k = `${f.network}\u0000${f.program}\u0000${f.metric}`;
    const was = low.get(k);
    if (!was || f.min < was.min) low.set(k, f);
  }
  return [...low.values()].map((f) => ({ network: f.network, program: f.program, metric: f.metric, min: f.min }));
}

/**
 * A condition no hot row fails (rows of w): its ratio at or above the lowest watch band of any rule of its network ×
 * program × metric (floors, whatever the class and the months). Cheap, so that the join with the rules
 * (hotRowsSql) sees the few rows near a level rather than every row.
 */
function nearFloorSql(floors: RuleFloor[]): string {
  const arms = lowestFloors(floors).map(({ network, program, metric, min }) =>
    `WHEN w.network = ${lit(network)} AND w.program = ${lit(program)} AND w.metric = ${lit(metric)} THEN w.ratio >= ${Number.isFinite(min) ? `${min.toString()}::DOUBLE` : 'NULL'}`);
  return arms.length ? `coalesce(CASE ${arms.join(' ')} END, FALSE)` : 'FALSE';
}

/** The columns of a month's inputs ratio_observed reads after program and metric (sql/views/40_ratios.sql), of alias i. */
const OBSERVED_ARGS = [
  'network', 'chargeback_count', 'chargeback_amount', 'fraud_count', 'fraud_amount', 'tc40_count', 'tc40_amount', 'vamp_dispute_count',
  'vamp_dispute_amount', 'transaction_count', 'transaction_amount', 'previous_month_transaction_count', 'previous_month_transaction_amount',
  'prev_transaction_count', 'prev_transaction_amount',
].map((c) => `i.${c}`).join(', ');

/**
 * The same condition on a row of month inputs (alias i), before any long row is made: some network × program × metric
 * of its network has an observed ratio at or above its lowest watch band (ratio_observed: the observed row's ratio to
 * the last bit), or the month is month-to-date (its projection scales the ratio: every such month goes on to the long
 * rows). A month it leaves out has no row nearFloorSql keeps.
 */
function nearInputsSql(floors: RuleFloor[]): string {
  const byNetwork = new Map<string, string[]>();
  for (const { network, program, metric, min } of lowestFloors(floors)) {
    if (!Number.isFinite(min)) continue;
    const arm = `ratio_observed(${lit(program)}, ${lit(metric)}, ${OBSERVED_ARGS}) >= ${min.toString()}::DOUBLE`;
    byNetwork.set(network, [...(byNetwork.get(network) ?? []), arm]);
  }
  const arms = [...byNetwork].map(([network, list]) => `WHEN ${lit(network)} THEN coalesce(${list.join(' OR ')}, FALSE)`);
  return arms.length ? `i.is_partial OR CASE i.network ${arms.join(' ')} ELSE FALSE END` : 'i.is_partial';
}

/**
 * Finds the series (mid × network × program) the evaluation judges, into the temp table _cbp_hot, from the ratio
 * inputs kept per month (store/ratio-inputs.ts, refreshed first): those with a month (fromMonth .. asOfMonth) in the
 * watch band of a level of their MID's rules (stageRules must have staged them), and those with a level recorded as
 * reached since recordedFrom (which later figures may take back). No other series can be at a level, in a watch
 * band or owe a notice: the kept ratio table explains their rows (sql/views/42_ratio_mart.sql ratio_mart_rows_between).
 * floors name the network × program × metric some rule reads (targetFloors): only those rows are computed. Returns
 * the MIDs an evaluation's batches cover (those of a hot series, to judge, and those with explanations stored, which
 * their batch replaces), in SQL's order, each with whether it has a hot series.
 */
export async function stageHotSeries(
  store: Store,
  q: StagedRules & { floors: RuleFloor[]; asOfMonth: string; fromMonth?: string | null; recordedFrom?: string | null },
): Promise<Array<{ mid: string; hot: boolean }>> {
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_hot (mid VARCHAR, network VARCHAR, program VARCHAR)');
  const { pairs, programs } = targetsSql(q.floors);
  const params = { asof: q.asOfMonth, from: q.fromMonth ?? '0001-01', recfrom: q.recordedFrom ?? '0000-00' };
  const recorded = `SELECT mid, network, program FROM alert_states WHERE status = 'reached' AND month >= $recfrom`;
  if (q.floors.length === 0) await store.run(`INSERT INTO _cbp_hot ${recorded}`, { recfrom: params.recfrom });
  else {
    // The months of the kept inputs where some series could be near a level, first (a few percent of them); the long
    // rows of those months alone are then made and judged against the rules.
    // (the months as literals: a view takes no parameters; bounding them here keeps a nightly's prefilter to its months)
    await store.run(`CREATE OR REPLACE TEMP VIEW _cbp_near_inputs AS
       SELECT i.* FROM ratio_month_inputs i
        WHERE i.month >= ${lit(params.from)} AND i.month <= ${lit(params.asof)} AND (${nearInputsSql(q.floors)})`);
    try {
      await store.run(`INSERT INTO _cbp_hot WITH t(network, program, metric) AS (VALUES ${pairs}),
         w AS (
           SELECT m.* FROM ratio_rows_between(strptime($from || '-01', '%Y-%m-%d')::DATE, strptime($asof || '-01', '%Y-%m-%d')::DATE,
                                              cached := TRUE, kept := '_cbp_near_inputs') m
            SEMI JOIN t USING (network, program, metric)
            WHERE m.program IN (${programs})
         ), near AS (SELECT * FROM w WHERE isfinite(w.ratio) AND ${nearFloorSql(q.floors)})
         ${hotRowsSql(q.watchFraction, q.conditions, 'near')} UNION ${recorded}`, params);
    } finally {
      await store.run('DROP VIEW IF EXISTS _cbp_near_inputs');
    }
  }
  // (the MIDs with explanations stored, not every MID with figures: the others' batches would replace nothing, and
  // listing them read every row of mid_stats)
  const mids = await store.all<{ mid: string; hot: boolean }>(`SELECT mid, bool_or(hot) AS hot
     FROM (SELECT DISTINCT mid, FALSE AS hot FROM ratio_explanations UNION ALL SELECT DISTINCT mid, TRUE FROM _cbp_hot) GROUP BY mid ORDER BY mid`);
  return mids.map((r) => ({ mid: String(r.mid), hot: r.hot === true }));
}

/**
 * The ratio rows of the hot series (stageHotSeries) of these MIDs, months fromMonth .. asOfMonth, from the kept ratio
 * inputs, sorted by mid, network, program, metric, month, is_projection: what evaluation judges. months: every month
 * the kept inputs may hold (those of the MID report: the refresh keeps no other), or none to read the months as text.
 */
export async function hotSeriesRows(
  store: Pick<Store, 'mapRows'>,
  q: { floors: RuleFloor[]; asOfMonth: string; mids: string[]; fromMonth?: string | null; months?: string[] },
): Promise<RatioRow[]> {
  if (q.floors.length === 0 || q.mids.length === 0) return [];
  const { pairs, programs } = targetsSql(q.floors);
  // The MIDs as a list of literals reach the scan of the kept inputs (a join with _cbp_hot alone would compute
  // every MID's rows first); plain IN lists on program likewise.
  // Network, program and metric are one of the rules' pairs (t): read as ENUMs of those, each value is one string made
  // once, not once per row (tens of thousands of rows).
  // (values sorted: the ENUM's order is then the text's, and the ORDER BY below sorts as it would the text)
  // The MIDs likewise (in SQL's order, as stageHotSeries returned them: hotRanges keeps it), and the month and the
  // denominator's month when the months of the kept inputs are given (a text of DuckDB's is copied and decoded on its own
  // for every row: 1 µs each). The TC40 coverage date as days since 1970-01-01: a DATE is read as an object per row.
  const enumOf = (c: 'network' | 'program' | 'metric') => `m.${c}::ENUM(${[...new Set(q.floors.map((f) => f[c]))].sort().map(lit).join(', ')}) AS ${c}`;
  const months = q.months ? [...new Set(q.months.flatMap((m) => [m, addMonths(m, -1)]))].sort().map(lit).join(', ') : null;
  const sql = `WITH t(network, program, metric) AS (VALUES ${pairs})
     SELECT m.* REPLACE (m.mid::ENUM(${q.mids.map(lit).join(', ')}) AS mid, ${enumOf('network')}, ${enumOf('program')}, ${enumOf('metric')},
                         ${months ? `m.month::ENUM(${months}) AS month, m.denominator_month::ENUM(${months}) AS denominator_month,` : ''}
                         (m.tc40_observed_from - DATE '1970-01-01')::INTEGER AS tc40_observed_from)
       FROM ratio_rows_covered_between(strptime($from || '-01', '%Y-%m-%d')::DATE, strptime($asof || '-01', '%Y-%m-%d')::DATE, cached := TRUE) m
       SEMI JOIN t USING (network, program, metric)
       SEMI JOIN _cbp_hot h USING (mid, network, program)
      WHERE m.mid IN (${q.mids.map(lit).join(', ')}) AND m.program IN (${programs})
      ORDER BY mid, network, program, metric, month, is_projection`;
  return readRatioRows(store, sql, { asof: q.asOfMonth, from: q.fromMonth ?? '0001-01' }, { observedFromDays: true });
}

/**
 * The ratio rows of MIDs lo..hi (or one MID) to be explained for months shownFrom on (up to asOf's month when
 * given), sorted like forEachRatioBatch's: every month of the hot series (their levels need their history, as
 * stageHotSeries finds them), the shown months alone of every other series (nothing in them is ever met, so
 * their explanation is the same from those months alone). What `cbp ratios` and `cbp report` judge, instead of
 * every month of every MID. ruleReadOnly: only the network × program × metric some staged rule reads.
 */
export async function ratioRowsToExplain(
  store: Pick<Store, 'mapRows'>,
  q: StagedRules & { lo: string; hi: string; mid?: string; shownFrom: string; asOfMonth?: string; actualOnly?: boolean; ruleReadOnly?: boolean },
): Promise<RatioRow[]> {
  const where = ['m.mid >= $lo', 'm.mid <= $hi'];
  // Rows no staged rule reads have no explanation: left out when the caller shows none of them.
  if (q.ruleReadOnly) where.push('(m.network, m.program, m.metric) IN (SELECT (network, program, metric) FROM _cbp_rules)');
  const params: Record<string, string> = { lo: q.lo, hi: q.hi, shown: q.shownFrom, asof: q.asOfMonth ?? '9999-12' };
  if (q.mid !== undefined) { where.push('m.mid = $mid'); params.mid = q.mid; }
  if (q.actualOnly) where.push('NOT m.is_projection');
  const sql = `WITH w AS MATERIALIZED (
       SELECT m.* FROM ratio_rows_covered_between(DATE '0001-01-01', strptime($asof || '-01', '%Y-%m-%d')::DATE) m WHERE ${where.join(' AND ')}
     ), hot AS (${hotRowsSql(q.watchFraction, q.conditions)})
     SELECT w.* FROM w LEFT JOIN (SELECT DISTINCT mid, network, program, TRUE AS is_hot FROM hot) h
         ON h.mid = w.mid AND h.network = w.network AND h.program = w.program
      WHERE h.is_hot OR w.month >= $shown
      ORDER BY w.mid, w.network, w.program, w.metric, w.month, w.is_projection`;
  return readRatioRows(store, sql, params);
}

/** One rule of a rules class, as the SQL of cold rows reads it (alerts/engine.ts ruleTables builds them). */
export interface RuleTableRow {
  /** '' for MIDs without their own entry in the thresholds file, else 'mid:<mid>' */
  class: string;
  /** position in the class's rule list; level_ord: the first position of the rule's level in it */
  ord: number;
  level_ord: number;
  level: string;
  rank: number;
  network: string;
  program: string;
  metric: string;
  comparison: string;
  threshold: number;
  /** the threshold as reasons write it (rules/explain.ts percent) */
  threshold_text: string;
  /** YYYY-MM: first and last month the rule is in force */
  from_month: string;
  to_month: string;
  certainty: string;
  certainty_note: string | null;
  /** value_text: the value as reasons write it (rules/explain.ts figure) */
  conditions: Array<{ field: string; comparison: string; value: number; label: string; value_text: string }>;
}

/** A MID with its own rules class, region and where the region came from. */
export interface MidClassRow {
  mid: string;
  class: string;
  region: string;
  region_source: string;
}

/**
 * Stages the rules for stageHotSeries and ratioRowsToExplain: the rules of each class with their conditions as columns (c1_*, c2_*,
 * ...), the MIDs with a class of their own, and the (mid, program) pairs judged in a group (left to the group's
 * pass). Temp tables, once per evaluation. Returns how many condition columns there are (StagedRules'
 * `conditions`).
 */
export async function stageRules(store: Pick<Store, 'run'>, q: { rules: RuleTableRow[]; classes: MidClassRow[]; grouped: Array<{ mid: string; program: string }> }): Promise<number> {
  const n = Math.max(0, ...q.rules.map((r) => r.conditions.length));
  const condCols = Array.from({ length: n }, (_, i) => [`c${i + 1}_field`, `c${i + 1}_cmp`, `c${i + 1}_value`, `c${i + 1}_label`, `c${i + 1}_text`]).flat();
  const condTypes = Array.from({ length: n }, (_, i) => `, c${i + 1}_field VARCHAR, c${i + 1}_cmp VARCHAR, c${i + 1}_value DOUBLE, c${i + 1}_label VARCHAR, c${i + 1}_text VARCHAR`).join('');
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_rules (class VARCHAR, ord INTEGER, level_ord INTEGER, level VARCHAR, rank INTEGER, network VARCHAR,
    program VARCHAR, metric VARCHAR, comparison VARCHAR, threshold DOUBLE, threshold_text VARCHAR, from_month VARCHAR, to_month VARCHAR,
    certainty VARCHAR, certainty_note VARCHAR${condTypes})`);
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_mid_class (mid VARCHAR, class VARCHAR, region VARCHAR, region_source VARCHAR)');
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_grouped (mid VARCHAR, program VARCHAR)');
  if (q.rules.length) {
    await insertChunked(store, 'INSERT INTO _cbp_rules',
      ['class', 'ord', 'level_ord', 'level', 'rank', 'network', 'program', 'metric', 'comparison', 'threshold', 'threshold_text', 'from_month', 'to_month', 'certainty', 'certainty_note', ...condCols],
      q.rules.map((x) => [
        x.class, x.ord, x.level_ord, x.level, x.rank, x.network, x.program, x.metric, x.comparison, x.threshold, x.threshold_text, x.from_month, x.to_month,
        x.certainty, x.certainty_note,
        ...Array.from({ length: n }, (_, i) => { const c = x.conditions[i]; return c ? [c.field, c.comparison, c.value, c.label, c.value_text] : [null, null, null, null, null]; }).flat(),
      ]), '');
  }
  if (q.classes.length) await insertChunked(store, 'INSERT INTO _cbp_mid_class', ['mid', 'class', 'region', 'region_source'], q.classes.map((c) => [c.mid, c.class, c.region, c.region_source]), '');
  if (q.grouped.length) await insertChunked(store, 'INSERT INTO _cbp_grouped', ['mid', 'program'], q.grouped.map((g) => [g.mid, g.program]), '');
  return n;
}


/** The rule a row of a rules class × network × program × metric is measured against over a range of months (ratio_rule_picks). */
export interface RulePickRow {
  class: string;
  network: string;
  program: string;
  metric: string;
  from_month: string;
  to_month: string;
  /** null: no rule of the metric is in force in these months */
  level: string | null;
  comparison: string | null;
  threshold: number | null;
  threshold_text: string | null;
  certainty: string | null;
  certainty_note: string | null;
  conditions: RuleTableRow['conditions'];
  /** every rule of the metric in force in these months: their watch bands */
  bands: Array<{ comparison: string; threshold: number; conditions: Array<{ field: string; cmp: string; value: number }> }>;
}

/** The rule set an evaluation ran under, as mart_ratios reads it to explain the rows it did not store. */
export interface EvaluatedRules {
  picks: RulePickRow[];
  /** network|program|metric some enabled rule reads, whatever its region (alerts/notices.ts ruleTargets) */
  targets: string[];
  classes: MidClassRow[];
  grouped: Array<{ mid: string; program: string }>;
  defaultRegion: string;
  watchFraction: number;
}

/**
 * Records an evaluation up to asOfMonth, in one transaction: the fingerprints of the months up to it replace the
 * kept ones (later months keep theirs: they were not evaluated), the evaluation itself, and the rule set it ran
 * under (sql/migrations/014_ratio_rules.sql), from which mart_ratios explains the rows no rule could move.
 */
export async function saveEvaluation(
  store: Store,
  e: { marks: SourceMark[]; asOfMonth: string; rulesHash: string; firstMonth: string | null; at: string; rules: EvaluatedRules },
): Promise<void> {
  await store.transaction(async (s) => {
    await s.run('DELETE FROM ratio_source_marks WHERE month <= $asof', { asof: e.asOfMonth });
    await insertMarks(s, 'ratio_source_marks', e.marks.filter((m) => m.month <= e.asOfMonth));
    await s.run('DELETE FROM ratio_evaluations');
    await s.run(`INSERT INTO ratio_evaluations (evaluated_at, as_of_month, rules_hash, first_month, default_region, watch_fraction)
      VALUES ($at::TIMESTAMP, $asof, $hash, $first, $region, $wf)`,
    { at: e.at, asof: e.asOfMonth, hash: e.rulesHash, first: e.firstMonth, region: e.rules.defaultRegion, wf: e.rules.watchFraction });
    for (const t of ['ratio_rule_picks', 'ratio_rule_targets', 'ratio_rule_mids', 'ratio_rule_grouped']) await s.run(`DELETE FROM ${t}`);
    if (e.rules.targets.length) {
      await insertChunked(s, 'INSERT INTO ratio_rule_targets', ['network', 'program', 'metric'], e.rules.targets.map((t) => t.split('|')), '');
    }
    // Conditions go in as JSON text (a list of structs has no parameter type here), cast by DuckDB.
    if (e.rules.picks.length) {
      await insertChunked(s, 'INSERT INTO ratio_rule_picks',
        ['class', 'network', 'program', 'metric', 'from_month', 'to_month', 'level', 'comparison', 'threshold', 'threshold_text', 'certainty', 'certainty_note', 'conditions', 'bands'],
        e.rules.picks.map((p) => [p.class, p.network, p.program, p.metric, p.from_month, p.to_month, p.level, p.comparison, p.threshold, p.threshold_text,
          p.certainty, p.certainty_note, JSON.stringify(p.conditions.map((c) => ({ field: c.field, cmp: c.comparison, value: c.value, label: c.label, value_text: c.value_text }))),
          JSON.stringify(p.bands)]),
        '', {
          conditions: '::JSON::STRUCT(field VARCHAR, cmp VARCHAR, value DOUBLE, label VARCHAR, value_text VARCHAR)[]',
          bands: '::JSON::STRUCT(comparison VARCHAR, threshold DOUBLE, conditions STRUCT(field VARCHAR, cmp VARCHAR, value DOUBLE)[])[]',
        });
    }
    if (e.rules.classes.length) {
      await insertChunked(s, 'INSERT INTO ratio_rule_mids', ['mid', 'class', 'region', 'region_source'], e.rules.classes.map((c) => [c.mid, c.class, c.region, c.region_source]), '');
    }
    if (e.rules.grouped.length) await insertChunked(s, 'INSERT INTO ratio_rule_grouped', ['mid', 'program'], e.rules.grouped.map((g) => [g.mid, g.program]), '');
  });
}


/** Removes the record of the last evaluation (an evaluation starting: until it is saved, there is none). */
export async function forgetEvaluation(store: Store): Promise<void> {
  await store.transaction((s) => s.run('DELETE FROM ratio_evaluations'));
}

/** Removes every stored explanation (an evaluation under rules that read no ratio). */
export async function clearExplanations(store: Store): Promise<void> {
  await store.transaction((s) => s.run('DELETE FROM ratio_explanations'));
}

/** Every notice recorded so far: notice_id → notify (false: recorded as history only). */
export async function noticeFlags(store: ReadStore): Promise<Map<string, boolean>> {
  const rows = await store.all<{ notice_id: string; notify: boolean }>('SELECT notice_id, notify FROM alerts');
  return new Map(rows.map((r) => [r.notice_id, r.notify === true]));
}
