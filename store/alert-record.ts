// What an evaluation records of a batch of MIDs: the states that changed and the new or promoted notices, staged through
// DuckDB's appender and upserted in one transaction.
import type { Store } from './db.ts';
import { upsertSql } from './upsert.ts';
import { jsonList, jsonRows, stageRows, type StageType } from './insert-rows.ts';
import type { AlertStateRow, Notice } from './alerts.ts';
import { dropTemp } from './sql-text.ts';

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

/** The columns of _cbp_alert_states_stage and their types. */
const STATE_TYPES: StageType[] = ['text', 'text', 'text', 'text', 'text', 'text', 'integer', 'double', 'double', 'double', 'boolean', 'text'];

/**
 * Records in one transaction, together or not at all: the states (inserted, or updated in place when they changed:
 * first_seen_at stays, updated_at says when it last changed), the new notices (one already recorded is left as it is),
 * and the notices promoted from history to delivery (notify set).
 */
export async function recordJudgement(store: Store, q: { states: AlertStateRow[]; fresh: Notice[]; promoted: string[] }): Promise<void> {
  if (!q.states.length && !q.fresh.length && !q.promoted.length) return;
  const { states, fresh, promoted } = q;
  const lo = states.reduce((m, r) => (r.mid < m ? r.mid : m), states[0]?.mid ?? '');
  const hi = states.reduce((m, r) => (r.mid > m ? r.mid : m), states[0]?.mid ?? '');
  const from = states.reduce((m, r) => (r.month < m ? r.month : m), states[0]?.month ?? '');
  await store.exclusive(async () => {
    await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_alert_states_stage (
      mid VARCHAR, network VARCHAR, program VARCHAR, level VARCHAR, month VARCHAR, status VARCHAR, rank INTEGER,
      ratio DOUBLE, numerator DOUBLE, denominator DOUBLE, is_partial BOOLEAN, seen VARCHAR)`);
    await store.run(`CREATE OR REPLACE TEMP TABLE _cbp_alerts_stage AS SELECT * EXCLUDE (created_at), ''::VARCHAR AS created_at FROM alerts LIMIT 0`);
    try {
      await store.transaction(async (s) => {
        if (states.length) {
          await stageRows(s, '_cbp_alert_states_stage', STATE_TYPES, states, (x, i) => x[STATE_COLS[i]]);
          // A state recorded as it is now is left alone; the recorded states compared are the batch's MIDs' and months'.
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
          await s.run(`UPDATE alerts SET notify = true WHERE notice_id IN (${jsonRows(1)})`, [jsonList(promoted)]);
        }
      });
    } finally {
      await store.run(dropTemp('TABLE', '_cbp_alert_states_stage', '_cbp_alerts_stage'));
    }
  });
}
