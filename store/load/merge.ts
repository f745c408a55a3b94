// Moving staging into the store: the quarantine, the current-state tables and the status histories, inside the
// load's transaction. A chargeback report loaded into an empty store skips staging (firstLoadChargebacks).
import { MID_KEY_NETWORK, MID_NETWORK_KEYS, type ReportKind } from '../../contract/reporting.ts';
import type { Store } from '../db.ts';
import { BadReportFileError } from '../errors.ts';
import type { Window } from '../../lib/utc.ts';
import { DISTINCTIVE, otherKind } from './columns.ts';
import { ident } from './typing.ts';
import { dropTemp, sqlText } from '../sql-text.ts';

/**
 * Adds the rows of `source` (a SELECT giving raw and reason) to the quarantine, each once: a reload, or an
 * overlapping report holding the same bad row, adds nothing it already holds.
 */
export function quarantine(s: Store, kind: ReportKind, source: string, file: string, sha256: string): Promise<void> {
  return s.run(
    `INSERT INTO quarantine SELECT DISTINCT $1, r.raw, r.reason, $2, $3, current_timestamp::TIMESTAMP FROM (${source}) r
     WHERE NOT EXISTS (SELECT 1 FROM quarantine q WHERE q.kind = $1 AND q.raw = r.raw AND q.reason = r.reason)`,
    [kind, file, sha256],
  );
}

/** The staged rows of `kind` into its tables: bad ones (where `bad` says there are some) to the quarantine, good ones to state and history. */
export async function moveStaged(s: Store, kind: ReportKind, w: Window | null, seen: string, file: string, sha256: string, bad: boolean): Promise<void> {
  if (bad) await quarantine(s, kind, 'SELECT _raw AS raw, _why AS reason FROM _stg WHERE _why IS NOT NULL', file, sha256);
  if (kind === 'chargebacks') await moveChargebacks(s, seen, file);
  else if (kind === 'prevention') await movePrevention(s, seen, file);
  else await moveMidStats(s, w!, seen, file);
  await s.run(dropTemp('TABLE', '_cur'));
}

/**
 * A stored row gives way to the incoming one ($1 = seen_at, $2 = landing file) unless it was observed later.
 * Two files observed at the same instant are ordered by file name, so the outcome never depends on load order.
 */
const NOT_NEWER = (seenCol: string, fileCol: string) => `(${seenCol} < $1::TIMESTAMP OR (${seenCol} = $1::TIMESTAMP AND ${fileCol} <= $2))`;

/**
 * Replaces rows whose stored observation is not newer; widens first_seen_at of rows that are newer. The stored rows of
 * the staged keys are read once into _cur (on a lake each statement reading a table costs catalog round trips).
 */
async function upsertState(s: Store, table: string, key: string[], cols: string[], seen: string, file: string): Promise<void> {
  const on = (a: string, b: string) => key.map((k) => `${a}.${k} = ${b}.${k}`).join(' AND ');
  await s.run(`CREATE OR REPLACE TEMP TABLE _cur AS SELECT c.*, coalesce(${NOT_NEWER('c.last_seen_at', 'c.landing_file')}, FALSE) AS _replaced
    FROM ${table} c SEMI JOIN _stg s ON ${on('c', 's')} AND s._why IS NULL`, [seen, file]);
  // A stored row gives way (_replaced), or is newer and was first seen later than now (widened), or stays as it is.
  const widened = (r: string) => `NOT ${r}._replaced AND ${r}.last_seen_at > $1::TIMESTAMP AND ${r}.first_seen_at > $1::TIMESTAMP`;
  const [n] = await s.all<{ n: string }>(`SELECT count(*) FILTER (WHERE r._replaced OR ${widened('r')}) AS n FROM _cur r`, [seen]);
  if (Number(n.n) > 0) await s.run(`DELETE FROM ${table} c USING _cur r WHERE ${on('c', 'r')} AND (r._replaced OR ${widened('r')})`, [seen]);
  await s.run(
    `INSERT INTO ${table} SELECT ${cols.map((c) => `s.${ident(c)}`).join(', ')}, least(coalesce(r.first_seen_at, $1::TIMESTAMP), $1::TIMESTAMP), $1::TIMESTAMP, $2
     FROM _stg s LEFT JOIN _cur r ON ${on('s', 'r')} WHERE s._why IS NULL AND coalesce(r._replaced, TRUE)
     UNION ALL SELECT * EXCLUDE (_replaced) REPLACE ($1::TIMESTAMP AS first_seen_at) FROM _cur r WHERE ${widened('r')}`,
    [seen, file],
  );
}

/**
 * Adds a history row where the observed status differs from the one in force at that time; if the next
 * recorded change is to the same status, it was in fact first seen now, so it moves earlier. `implied`: rows the log
 * holds only by implication (chargebacks of a first load), written out first.
 */
async function addHistory(s: Store, table: string, key: string[], seen: string, file: string, implied?: string): Promise<void> {
  const keys = key.join(', ');
  const on = (a: string, b: string) => key.map((k) => `${a}.${k} = ${b}.${k}`).join(' AND ');
  await s.run(`CREATE OR REPLACE TEMP TABLE _log AS SELECT l.* FROM ${table} l SEMI JOIN _stg s ON ${on('l', 's')} AND s._why IS NULL`);
  if (implied) {
    await s.run(`CREATE OR REPLACE TEMP TABLE _imp AS SELECT * FROM (${implied}) c WHERE NOT EXISTS (SELECT 1 FROM _log l WHERE ${on('l', 'c')})`);
    await s.run(`INSERT INTO ${table} SELECT * FROM _imp; INSERT INTO _log SELECT * FROM _imp; ${dropTemp('TABLE', '_imp')}`);
  }
  await s.run(
    `CREATE OR REPLACE TEMP TABLE _h AS
     SELECT ${key.map((k) => `i.${k}`).join(', ')}, i.status, i.seen_at, p.status AS prev_status, p.seen_at AS prev_seen_at,
            n.status AS next_status, n.seen_at AS next_seen_at
     FROM (SELECT ${keys}, status, $1::TIMESTAMP AS seen_at FROM _stg WHERE _why IS NULL) i
     ASOF LEFT JOIN _log p ON ${on('i', 'p')} AND i.seen_at >= p.seen_at
     ASOF LEFT JOIN _log n ON ${on('i', 'n')} AND i.seen_at < n.seen_at`,
    [seen],
  );
  const moved = `i.next_status IS NOT DISTINCT FROM i.status AND (i.prev_seen_at IS NULL OR i.prev_status IS DISTINCT FROM i.status)`;
  const [m] = await s.all<{ n: string }>(`SELECT count(*) AS n FROM _h i WHERE ${moved}`);
  if (Number(m.n) > 0) await s.run(`DELETE FROM ${table} h USING _h i WHERE ${on('h', 'i')} AND h.seen_at = i.next_seen_at AND ${moved}`);
  await s.run(
    `INSERT INTO ${table} SELECT ${keys}, status, seen_at, $1 FROM _h WHERE prev_seen_at IS NULL OR prev_status IS DISTINCT FROM status`,
    [file],
  );
  await s.run(dropTemp('TABLE', '_h', '_log'));
}

export async function isEmpty(s: Pick<Store, 'all'>, table: string): Promise<boolean> {
  const [r] = await s.all<{ n: boolean }>(`SELECT NOT EXISTS (SELECT 1 FROM ${table}) AS n`);
  return Boolean(r.n);
}

const CHARGEBACK_STATE_COLUMNS = ['mid', 'case_number', 'status', 'arn', 'card_number', 'card_type', 'amount', 'currency', 'reason_code', 'reason', 'date_received', 'transaction_date', 'order_id', 'name', 'tracking_number'];

/** The touched cases (_cur) whose only history row is implied by their chargebacks row (see 001_reports.sql). */
const IMPLIED_HISTORY = `SELECT c.mid, c.case_number, c.status, c.last_seen_at, c.landing_file FROM _cur c
  WHERE EXISTS (SELECT 1 FROM chargeback_initial_loads i WHERE i.landing_file = c.landing_file AND i.seen_at = c.last_seen_at)`;

async function moveChargebacks(s: Store, seen: string, file: string): Promise<void> {
  // The touched cases' implied history rows are written out, as they were before the update (_cur): from here on
  // the log alone holds their history.
  await upsertState(s, 'chargebacks', ['mid', 'case_number'], CHARGEBACK_STATE_COLUMNS, seen, file);
  await addHistory(s, 'chargeback_status_log', ['mid', 'case_number'], seen, file, IMPLIED_HISTORY);
}

/** Stores found holding chargebacks: not checked again (on a lake each check is a scan; one emptied since loses only the fast path). */
const holdingChargebacks = new WeakSet<object>();

/** Whether a chargeback report would take the first-load path: no chargebacks and no history yet. */
export async function chargebacksEmpty(s: Pick<Store, 'all'>): Promise<boolean> {
  if (holdingChargebacks.has(s)) return false;
  const empty = (await isEmpty(s, 'chargebacks')) && (await isEmpty(s, 'chargeback_status_log'));
  if (!empty) holdingChargebacks.add(s);
  return empty;
}

/**
 * A first load into an empty store: one statement reads, types and validates the file straight into
 * chargebacks (no staging table: staging cost as much as the read, and a second write of every row).
 * A bad row is parked in the same table until it is moved to the quarantine, a few statements later and
 * in the same transaction: landing_file NULL marks it (a stored row always has one), `reason` holds why
 * and `name` the row as received. Each case's first history row is implied by its chargebacks row (the
 * load is listed in chargeback_initial_loads), not written a second time.
 */
export async function firstLoadChargebacks(
  s: Store, select: string, file: string, shown: string, seen: string, sha256: Promise<string>,
): Promise<{ read: number; bad: number; keys: number }> {
  const values = CHARGEBACK_STATE_COLUMNS.map((c) =>
    c === 'reason' ? 'CASE WHEN _why IS NULL THEN reason ELSE _why END' : c === 'name' ? 'CASE WHEN _why IS NULL THEN name ELSE _raw END' : ident(c),
  );
  const [ins] = await s.all<{ Count: string | number }>(
    `INSERT INTO chargebacks SELECT ${values.join(', ')}, $1::TIMESTAMP, $1::TIMESTAMP, CASE WHEN _why IS NULL THEN $2 END FROM (${select})`,
    [seen, file],
  );
  const read = Number(ins?.Count ?? 0);
  // A bad row's NULL landing_file: the column's statistics answer this without a scan when there is none.
  const [st] = await s.all<{ bad: string }>(`SELECT count(*) AS bad FROM chargebacks WHERE landing_file IS NULL`);
  const bad = Number(st.bad);
  let keys = read - bad;
  if (bad > 0) {
    if (bad === read) {
      const sig = DISTINCTIVE.chargebacks.map((c) => `json_extract_string(name, ${sqlText(`$.${c}`)}) IS NOT NULL`).join(' OR ');
      const [r] = await s.all<{ n: string }>(`SELECT count(*) FILTER (WHERE ${sig}) AS n FROM chargebacks WHERE landing_file IS NULL`);
      if (Number(r.n) === 0) throw new BadReportFileError(otherKind(shown, 'chargebacks', read));
    }
    await quarantine(s, 'chargebacks', 'SELECT name AS raw, reason FROM chargebacks WHERE landing_file IS NULL', file, await sha256);
    await s.run('DELETE FROM chargebacks WHERE landing_file IS NULL');
  }
  // Distinct case numbers prove distinct (mid, case_number) keys; only a shortfall (a repeated case, or one
  // case number under two MIDs) needs the exact de-duplication.
  const [d] = keys > 0 ? await s.all<{ n: string }>('SELECT count(DISTINCT case_number) AS n FROM chargebacks') : [{ n: '0' }];
  if (Number(d.n) < keys) {
    // Of duplicate keys inside one file, one is kept by content order, as the staging path does.
    const [del] = await s.all<{ Count: string | number }>(
      `DELETE FROM chargebacks WHERE rowid IN (SELECT rowid FROM chargebacks
       QUALIFY row_number() OVER (PARTITION BY mid, case_number ORDER BY ${CHARGEBACK_STATE_COLUMNS.map(ident).join(', ')}) > 1)`,
    );
    keys -= Number(del?.Count ?? 0);
  }
  if (keys > 0) await s.run('INSERT INTO chargeback_initial_loads VALUES ($1, $2::TIMESTAMP)', [file, seen]);
  return { read, bad, keys };
}

async function movePrevention(s: Store, seen: string, file: string): Promise<void> {
  const cols = ['alert_case_id', 'status', 'statuses', 'arn', 'mid', 'merchant_descriptor', 'source_partner', 'bin', 'last_four', 'amount', 'currency', 'date_received', 'transaction_date', 'order_id', 'name'];
  await upsertState(s, 'prevention_alerts', ['alert_case_id'], cols, seen, file);
  await addHistory(s, 'prevention_status_history', ['alert_case_id'], seen, file);
}

async function moveMidStats(s: Store, w: Window, seen: string, file: string): Promise<void> {
  const figures = (p: string, extra: boolean) =>
    `${p}chargeback_count, ${p}chargeback_amount, ${p}transaction_count, ${p}transaction_amount, ${p}chargeback_ratio, ${p}chargeback_amount_ratio, ` +
    (extra ? `${p}previous_month_transaction_count, ${p}previous_month_transaction_amount` : 'NULL, NULL');
  const rows = [
    `SELECT mid, 'all' AS network, ${figures('', false)} FROM _stg WHERE _why IS NULL`,
    ...MID_NETWORK_KEYS.map(
      (k) => `SELECT mid, ${sqlText(MID_KEY_NETWORK[k])}, ${figures(`${k}_`, k === 'master_card')} FROM _stg WHERE _why IS NULL AND ${k}_present`,
    ),
  ].join('\nUNION ALL ');
  // A record replaces the whole (mid, window) it describes, unless the stored figures were observed later.
  await s.run(
    `DELETE FROM mid_stats m USING _stg s WHERE s._why IS NULL AND m.mid = s.mid AND m.window_start = $3::DATE AND m.window_end = $4::DATE
     AND ${NOT_NEWER('m.seen_at', 'm.landing_file')}`,
    [seen, file, w.from, w.to],
  );
  await s.run(
    `INSERT INTO mid_stats SELECT r.mid, $1::DATE, $2::DATE, r.* EXCLUDE (mid), $3::TIMESTAMP, $4 FROM (${rows}) r
     WHERE NOT EXISTS (SELECT 1 FROM mid_stats m WHERE m.mid = r.mid AND m.window_start = $1::DATE AND m.window_end = $2::DATE)`,
    [w.from, w.to, seen, file],
  );
  await s.run(`DELETE FROM mids m USING _stg s WHERE s._why IS NULL AND m.mid = s.mid AND ${NOT_NEWER('m.last_seen_at', 'm.landing_file')}`, [seen, file]);
  await s.run(
    `INSERT INTO mids SELECT s.mid, s.alias, s.gateways, $1::TIMESTAMP, $2 FROM _stg s
     WHERE s._why IS NULL AND NOT EXISTS (SELECT 1 FROM mids m WHERE m.mid = s.mid)`,
    [seen, file],
  );
}
