// The evaluation's batch writer (issue #26 split it out of store/alerts.ts): explanations, states and notices of a
// batch staged through DuckDB appenders and upserted in one transaction. store/alerts.ts re-exports it.
import type { DuckDBAppender } from '@duckdb/node-api';
import type { Store } from './db.ts';
import type { RatioExplanation, RatioRow } from '../contract/ratios.ts';
import { upsertSql } from './upsert.ts';
import { valuesDigest } from '../lib/digest.ts';
import type { AlertStateRow, Notice } from './alerts.ts';

/** The columns of ratio_explanations but explained_at and digest (sql/migrations/012, 020), and their types. */
const EXPLANATION_COLS = [
  'mid', 'network', 'program', 'metric', 'month', 'is_projection', 'level', 'state', 'next_level', 'next_threshold', 'closeness',
  'reason', 'region', 'region_source', 'monitored_as', 'superseded_by', 'certainty', 'certainty_note',
  'headroom_count', 'over_by_count', 'headroom_basis', 'fee_estimate', 'fee_currency', 'fee_basis',
] as const;
const DOUBLES = new Set(['next_threshold', 'closeness', 'headroom_count', 'over_by_count', 'fee_estimate']);
const EXPLANATION_TYPES: StageType[] = EXPLANATION_COLS.map((c): StageType => (c === 'is_projection' ? 'boolean' : DOUBLES.has(c) ? 'double' : 'text'));
/** The columns of _cbp_explanation_rows_stage: EXPLANATION_COLS', then digest. */
const EXPLANATION_STAGE_TYPES: StageType[] = [...EXPLANATION_TYPES, 'text'];

export const NOTICE_COLS = [
  'notice_id', 'kind', 'mid', 'network', 'program', 'level', 'previous_level', 'month', 'metric', 'rule_id', 'comparison',
  'ratio_threshold', 'numerator', 'denominator', 'denominator_month', 'ratio', 'ratio_pct', 'ratio_bps', 'is_projection',
  'is_partial', 'notify', 'message', 'created_at',
] as const;

/** The columns of alert_states staged, in _cbp_alert_states_stage's order. */
const STATE_COLS = ['mid', 'network', 'program', 'level', 'month', 'status', 'rank', 'ratio', 'numerator', 'denominator', 'is_partial', 'seen'] as const;

/** NOTICE_COLS' types as staged (created_at as ISO text, cast on insert). */
const NOTICE_TYPES: StageType[] = NOTICE_COLS.map((c): StageType =>
  ['ratio_threshold', 'numerator', 'denominator', 'ratio', 'ratio_pct', 'ratio_bps'].includes(c) ? 'double'
    : ['is_projection', 'is_partial', 'notify'].includes(c) ? 'boolean' : 'text');

/** A staged column's type (appendRow). */
type StageType = 'text' | 'double' | 'integer' | 'boolean';

/**
 * Appends one row of staged columns of these types; value(row, i) is the row's value of column i (no array per row).
 * NULL, undefined and non-finite doubles go in as NULL.
 */
function appendRow<T>(app: DuckDBAppender, types: readonly StageType[], row: T, value: (row: T, column: number) => unknown): void {
  for (let i = 0; i < types.length; i++) {
    const v = value(row, i);
    if (v === null || v === undefined) { app.appendNull(); continue; }
    switch (types[i]) {
      case 'text': app.appendVarchar(String(v)); break;
      case 'double': if (Number.isFinite(v)) app.appendDouble(v as number); else app.appendNull(); break;
      case 'integer': app.appendInteger(v as number); break;
      case 'boolean': app.appendBoolean(v === true); break;
    }
  }
  app.endRow();
}

/**
 * Adds rows to a temp staging table through DuckDB's appender (thousands of rows in one go, where parameter lists
 * would be slow), inside the caller's transaction.
 */
async function stageRows<T>(s: Store, table: string, types: readonly StageType[], rows: Iterable<T>, value: (row: T, column: number) => unknown): Promise<void> {
  const app = await s.conn.createAppender(table, 'main', 'temp');
  try {
    for (const r of rows) appendRow(app, types, r, value);
    app.flushSync();
  } finally {
    app.closeSync();
  }
}


/** The columns of _cbp_alert_states_stage and their types. */
const STATE_TYPES: StageType[] = ['text', 'text', 'text', 'text', 'text', 'text', 'integer', 'double', 'double', 'double', 'boolean', 'text'];

/**
 * The explanations a batch replaces: those of its MIDs (every MID of lo..hi when range is given, else these mids) in
 * months fromMonth .. asOfMonth; at is this evaluation's time (their explained_at).
 */
export interface ExplanationScope {
  range?: [string, string];
  mids?: string[];
  asOfMonth: string;
  fromMonth?: string | null;
  at: string;
}

/**
 * What an evaluation writes of one batch of MIDs, staged as it is judged: states and the explanations that changed go
 * through DuckDB's appender into temp tables row by row, so that no list of them is kept in JS (a full evaluation
 * judges a batch in groups of MIDs, and each group's levels and explanations are garbage as soon as they are staged).
 * commit records them in one transaction; close drops the staging tables and what they still hold.
 */
export interface BatchWriter {
  /** stages states to record (those that changed: alerts/notices.ts changedStates) */
  states(rows: readonly AlertStateRow[]): void;
  /**
   * The explanation of a ratio row of the batch's scope, as mart_ratios shows it as of this evaluation: staged when it
   * differs from the one stored (by their digests), else left as it is.
   */
  explain(r: RatioRow, e: RatioExplanation): void;
  /**
   * Records in one transaction, together or not at all: the states staged (inserted, or updated in place when they
   * changed: first_seen_at stays, updated_at says when it last changed), the new notices (a notice already recorded
   * is left as it is), the notices promoted from history to delivery (notify set), and the explanations of the scope:
   * those explained are the ones it keeps (the changed ones written, the others stamped with this evaluation's time),
   * the others are removed.
   */
  commit(q: { fresh: Notice[]; promoted: string[] }): Promise<void>;
  close(): Promise<void>;
}

/**
 * A ratio row's key in ratio_explanations as one string: its six key columns, each with any NUL followed by \u0001,
 * joined by a NUL and "|" (which no column then holds: no two keys make one string). EXPLANATION_KEY_SQL makes the same
 * of a row of ratio_explanations e.
 */
function explanationKey(mid: string, network: string, program: string, metric: string, month: string, isProjection: boolean): string {
  if ((mid + network + program + metric + month).includes('\u0000')) {
    return [mid, network, program, metric, month].map((v) => v.replaceAll('\u0000', '\u0000\u0001')).join('\u0000|') + (isProjection ? '\u0000|1' : '\u0000|0');
  }
  return `${mid}\u0000|${network}\u0000|${program}\u0000|${metric}\u0000|${month}\u0000|${isProjection ? 1 : 0}`;
}

const EXPLANATION_KEY_SQL = `concat_ws(chr(0) || '|', ${EXPLANATION_COLS.slice(0, 5).map((c) => `replace(e.${c}, chr(0), chr(0) || chr(1))`).join(', ')}, e.is_projection::INTEGER::VARCHAR)`;

/** A double as stored (appendRow: non-finite as NULL). */
const storedDouble = (v: number | null) => (v !== null && Number.isFinite(v) ? v : null);

/** The digest of an explanation's columns as stored (sql/migrations/016_explanation_digest.sql). */
export function explanationDigest(e: RatioExplanation): string {
  return valuesDigest([
    e.level, e.state, e.next_level, storedDouble(e.next_threshold), storedDouble(e.closeness), e.reason, e.region, e.region_source,
    e.monitored_as, e.superseded_by, e.certainty, e.certainty_note,
    storedDouble(e.headroom_count), storedDouble(e.over_by_count), e.headroom_basis, storedDouble(e.fee_estimate), e.fee_currency, e.fee_basis,
  ]);
}

/**
 * Opens the writer of one batch whose explanations replace those of `scope`; the caller keeps other work off the
 * connection until close (store.exclusive), so that the digests read here are those the commit replaces.
 */
export async function openBatchWriter(store: Store, scope: ExplanationScope): Promise<BatchWriter> {
  const params: Record<string, string> = { asof: scope.asOfMonth };
  let where = 'e.month <= $asof';
  if (scope.fromMonth) { where += ' AND e.month >= $from'; params.from = scope.fromMonth; }
  if (scope.range) { where += ' AND e.mid >= $lo AND e.mid <= $hi'; params.lo = scope.range[0]; params.hi = scope.range[1]; }
  if (scope.mids) where += ` AND e.mid IN (${scope.mids.map((m, i) => { params[`m${i}`] = m; return `$m${i}`; }).join(', ') || 'NULL'})`;
  // The stored explanations of the scope: key → digest (null: none, or the key held twice, which is then rewritten).
  // Read as one text of every row's key and digest (as "key NUL = digest", NUL # between rows, which no key holds):
  // DuckDB's reader copies and decodes each string of a result on its own, which for 28,800 keys and digests took
  // 65 ms, against 2 for one text.
  const stored = new Map<string, string | null>();
  const [{ t: text }] = await store.all<{ t: string | null }>(
    `SELECT string_agg(${EXPLANATION_KEY_SQL} || chr(0) || '=' || coalesce(e.digest, ''), chr(0) || '#') AS t FROM ratio_explanations e WHERE ${where}`, params);
  for (const row of text === null ? [] : text.split('\u0000#')) {
    const at = row.lastIndexOf('\u0000=');
    const k = row.slice(0, at);
    stored.set(k, stored.has(k) ? null : row.slice(at + 2) || null);
  }
  // New tables each batch (CREATE OR REPLACE), dropped at close: DuckDB does not give back the memory of rows deleted
  // from a temp table, which grew by tens of megabytes with every full evaluation.
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_alert_states_stage (
    mid VARCHAR, network VARCHAR, program VARCHAR, level VARCHAR, month VARCHAR, status VARCHAR, rank INTEGER,
    ratio DOUBLE, numerator DOUBLE, denominator DOUBLE, is_partial BOOLEAN, seen VARCHAR)`);
  // explained_at is the same for every row: a parameter of the insert, not a staged column. The gone stage: the keys
  // (EXPLANATION_KEY_SQL) of the stored rows this batch did not explain, removed.
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_explanation_rows_stage AS SELECT ${EXPLANATION_COLS.join(', ')}, digest FROM ratio_explanations LIMIT 0`);
  await store.run('CREATE OR REPLACE TEMP TABLE _cbp_explanation_gone_stage (k VARCHAR)');
  await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_alerts_stage AS SELECT * EXCLUDE (created_at), ''::VARCHAR AS created_at FROM alerts LIMIT 0`);
  let stateApp: DuckDBAppender | null = null;
  let explainApp: DuckDBAppender | null = null;
  const dropTables = () => store.run(`${['_cbp_alert_states_stage', '_cbp_explanation_rows_stage', '_cbp_explanation_gone_stage', '_cbp_alerts_stage'].map((t) => `DROP TABLE IF EXISTS ${t}`).join('; ')}`);
  try {
    stateApp = await store.conn.createAppender('_cbp_alert_states_stage', 'main', 'temp');
    explainApp = await store.conn.createAppender('_cbp_explanation_rows_stage', 'main', 'temp');
  } catch (e) {
    // Nothing opened is left behind: the caller gets no writer to close.
    stateApp?.closeSync();
    await dropTables().catch(() => undefined);
    throw e;
  }
  let states = 0;
  let staged = 0;
  // The staged states' MIDs and first month: constant bounds of the recorded states the upsert compares with.
  let lo = '', hi = '', from = '';
  const closeAppenders = () => {
    try { stateApp?.closeSync(); } finally {
      stateApp = null;
      try { explainApp?.closeSync(); } finally { explainApp = null; }
    }
  };
  const open = <T>(app: T | null): T => {
    if (app === null) throw new Error('the batch writer was committed or closed');
    return app;
  };
  return {
    states(rows) {
      const app = open(stateApp);
      for (const r of rows) {
        appendRow(app, STATE_TYPES, r, (x, i) => x[STATE_COLS[i]]);
        if (states++ === 0) { lo = r.mid; hi = r.mid; from = r.month; continue; }
        if (r.mid < lo) lo = r.mid;
        if (r.mid > hi) hi = r.mid;
        if (r.month < from) from = r.month;
      }
    },
    explain(r, e) {
      const app = open(explainApp);
      const k = explanationKey(r.mid, r.network, r.program, r.metric, r.month, r.is_projection);
      const digest = explanationDigest(e);
      const was = stored.get(k);
      // Kept as stored (its explained_at stamped at commit), or written anew (the stored row of its key removed first).
      if (was !== undefined) { stored.delete(k); if (was === digest) return; }
      // The first six columns are the row's key, the others its explanation's; then its digest.
      appendRow(app, EXPLANATION_STAGE_TYPES, r, (x, i) =>
        (i < 6 ? x[EXPLANATION_COLS[i] as keyof RatioRow] : i < EXPLANATION_COLS.length ? e[EXPLANATION_COLS[i] as keyof RatioExplanation] : digest));
      staged++;
    },
    async commit({ fresh, promoted }) {
      open(explainApp); // (throws when already committed or closed)
      closeAppenders();
      // The stored rows no group explained.
      const gone = [...stored.keys()];
      await store.transaction(async (s) => {
        if (states) {
          // A state recorded as it is now is left alone: rewriting thousands of unchanged rows every evaluation made
          // each upsert slower than the last until the next checkpoint (0.05 s, then 0.6 s, for 24,000 states). The
          // recorded states compared are those of the batch's MIDs and months (constant bounds the scan prunes by),
          // so a nightly reads recent months, not the whole history.
          await s.run(
            upsertSql(s, {
              into: 'alert_states',
              columns: ['mid', 'network', 'program', 'level', 'month', 'status', 'rank', 'ratio', 'numerator', 'denominator', 'is_partial', 'first_seen_at', 'updated_at'],
              rows: `SELECT st.mid, st.network, st.program, st.level, st.month, st.status, st.rank, st.ratio, st.numerator, st.denominator, st.is_partial,
                            st.seen::TIMESTAMP, st.seen::TIMESTAMP
                       FROM _cbp_alert_states_stage st
                      WHERE NOT EXISTS (SELECT 1 FROM alert_states a
                                         WHERE a.mid >= $lo AND a.mid <= $hi AND a.month >= $from
                                           AND a.mid = st.mid AND a.network = st.network AND a.program = st.program AND a.level = st.level AND a.month = st.month
                                           AND a.status = st.status AND a.rank = st.rank AND a.is_partial = st.is_partial
                                           AND a.ratio IS NOT DISTINCT FROM st.ratio AND a.numerator IS NOT DISTINCT FROM st.numerator
                                           AND a.denominator IS NOT DISTINCT FROM st.denominator)`,
              key: ['mid', 'network', 'program', 'level', 'month'],
              set: Object.fromEntries(['status', 'rank', 'ratio', 'numerator', 'denominator', 'is_partial', 'updated_at'].map((c) => [c, `excluded.${c}`])),
            }),
            { lo, hi, from },
          );
        }
        if (fresh.length) {
          await stageRows(s, '_cbp_alerts_stage', NOTICE_TYPES, fresh, (n, i) => n[NOTICE_COLS[i]]);
          await s.run(upsertSql(s, { into: 'alerts', columns: NOTICE_COLS, rows: 'SELECT * EXCLUDE (created_at), created_at::TIMESTAMP FROM _cbp_alerts_stage', key: ['notice_id'] }));
        }
        if (promoted.length) {
          await s.run(`UPDATE alerts SET notify = true WHERE notice_id IN (${promoted.map((_, i) => `$${i + 1}`).join(', ')})`, promoted);
        }
        // The explanations of the scope become those explained. Only those that changed are written: a re-judge
        // restates nearly all of them as they were, and deleting and inserting tens of thousands of rows each time
        // filled the write-ahead log, checkpointed every other evaluation (0.2 s); staging them all to compare in SQL
        // took as long as judging them. The others are stamped with this evaluation's time, which is what explained_at
        // says.
        if (gone.length) {
          await stageRows(s, '_cbp_explanation_gone_stage', ['text'], gone, (k) => k);
          await s.run(`DELETE FROM ratio_explanations e WHERE ${where} AND ${EXPLANATION_KEY_SQL} IN (SELECT k FROM _cbp_explanation_gone_stage)`, params);
        }
        if (staged) {
          // (the stored row of a key explained anew first)
          const key = EXPLANATION_COLS.slice(0, 6).map((c) => `e.${c} = st.${c}`).join(' AND ');
          await s.run(`DELETE FROM ratio_explanations WHERE rowid IN (
                         SELECT e.rowid FROM ratio_explanations e SEMI JOIN _cbp_explanation_rows_stage st ON ${key} WHERE ${where})`, params);
          await s.run(`INSERT INTO ratio_explanations (${EXPLANATION_COLS.join(', ')}, digest, explained_at)
                       SELECT ${EXPLANATION_COLS.join(', ')}, digest, $at::TIMESTAMP FROM _cbp_explanation_rows_stage`, { at: scope.at });
        }
        await s.run(`UPDATE ratio_explanations e SET explained_at = $at::TIMESTAMP WHERE ${where} AND e.explained_at <> $at::TIMESTAMP`, { ...params, at: scope.at });
      });
    },
    async close() {
      closeAppenders();
      await dropTables();
    },
  };
}

