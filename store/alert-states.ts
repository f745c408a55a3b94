// The states earlier evaluations recorded (alert_states), read back for the next evaluation's judging.
import type { Store } from './db.ts';
import type { RecordedState } from './alerts.ts';
import { sqlText as lit } from './sql-text.ts';

/**
 * The states earlier evaluations recorded for MIDs lo..hi, months from `from` on (default: every month), with their
 * figures: reached (what revised figures may take back), resolved and projected (a projection is not a level reached:
 * alerts/notices.ts judgeBatch reads it only to leave an unchanged state unwritten), series by series. Read chunk by
 * chunk (Store.mapRows): tens of thousands of states in a full evaluation.
 */
export async function recordedStates(store: Pick<Store, 'transaction'>, q: { lo: string; hi: string; from?: string | null }): Promise<RecordedState[]> {
  const params: Record<string, string> = { lo: q.lo, hi: q.hi };
  let where = 'WHERE mid >= $lo AND mid <= $hi';
  if (q.from) { where += ' AND month >= $from'; params.from = q.from; }
  // Network, program and status read as ENUMs of the values there are (sorted, so that they sort as their text): one
  // string each, not one per row. Both reads in one transaction: the values listed are those of the rows read.
  return store.transaction(async (s) => {
    const values = await s.columns(`SELECT list(DISTINCT network) AS network, list(DISTINCT program) AS program, list(DISTINCT status) AS status
        FROM alert_states ${where}`, params);
    const enumOf = (c: 'network' | 'program' | 'status') => {
      const list = values.column(c)[0] as { items?: unknown[] } | null | undefined;
      return list?.items?.length ? `${c}::ENUM(${list.items.map(String).sort().map(lit).join(', ')}) AS ${c}` : c;
    };
    return s.mapRows(
      `SELECT mid, ${enumOf('network')}, ${enumOf('program')}, level, month, ${enumOf('status')}, rank, ratio, numerator, denominator, is_partial
         FROM alert_states ${where}
        ORDER BY mid, network, program, level, month`,
      params,
      (column) => {
        const [mid, network, program, level, month, status, rank, ratio, numerator, denominator, isPartial] = [
          'mid', 'network', 'program', 'level', 'month', 'status', 'rank', 'ratio', 'numerator', 'denominator', 'is_partial',
        ].map(column);
        return (i): RecordedState => ({
          mid: mid[i] as string, network: network[i] as string, program: program[i] as string, level: level[i] as string,
          month: month[i] as string, status: status[i] as string, rank: rank[i] as number, ratio: ratio[i] as number | null,
          numerator: numerator[i] as number | null, denominator: denominator[i] as number | null, is_partial: isPartial[i] === true,
        });
      },
    );
  }, { generation: false });
}
