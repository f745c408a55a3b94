// Staging per report kind: one SELECT over the reader's raw columns types and validates every row (typing.ts),
// keeping every bad row with its reason and one good row per key, into the temp table _stg.
import { CHARGEBACK_STATUSES, MID_NETWORK_KEYS, PREVENTION_STATUSES, SOURCE_PARTNERS, STAT_FIELDS, type ReportKind } from '../../contract/reporting.ts';
import { HEAD_CHARS, ROW_LIMIT } from '../long-rows.ts';
import { DISTINCTIVE, MC_EXTRA, RAW_COLUMNS, netFields } from './columns.ts';
import { MID_KEY_SPELLINGS } from '../../contract/reporting.ts';
import {
  AMOUNT_EXPECT, BRAND_EXPECT, CURRENCY_EXPECT, DT_EXPECT, amountT, brandT, check, countT, currencyT, enumT, floatT, gatewaysT, ident, nz, optBad,
  optional, required, statusT, statusesT, tsT, txt, type Check,
} from './typing.ts';
import { sqlText } from '../sql-text.ts';

export interface Staging {
  /** The typing, validating SELECT (typed columns, _why, _sig, _raw) that `create` stores as _stg. */
  select: string;
  create: string;
  dedupe: string;
  stats: string;
}

/** The staging of `kind` over `reader`, a SELECT of the kind's raw columns (read.ts). */
export function stagingFor(kind: ReportKind, reader: string): Staging {
  return kind === 'chargebacks' ? chargebackStaging(reader) : kind === 'prevention' ? preventionStaging(reader) : midStaging(reader);
}

function chargebackStaging(reader: string): Staging {
  const typed = {
    mid: nz('mid'),
    case_number: nz('case_number'),
    status: statusT('status'),
    arn: txt('arn'),
    card_number: txt('card_number'),
    card_type: brandT('card_type'),
    amount: amountT('amount'),
    currency: currencyT('currency'),
    reason_code: txt('reason_code'),
    reason: txt('reason'),
    date_received: tsT('date_received'),
    transaction_date: tsT('transaction_date'),
    order_id: txt('order_id'),
    name: txt('name'),
    tracking_number: txt('tracking_number'),
  };
  const checks = [
    required('case_number', 'case_number'),
    required('mid', 'mid'),
    check(`t_status IS NULL`, 'status', `one of ${CHARGEBACK_STATUSES.join(', ')}`, 'status'),
    ...amountChecks(),
    optional('card_type', 't_card_type', 'card_type', BRAND_EXPECT),
    optional('currency', 't_currency', 'currency', CURRENCY_EXPECT),
    // Without its date a chargeback falls in no month: it would never count.
    check(`t_date_received IS NULL`, 'date_received', DT_EXPECT, 'date_received'),
    optional('transaction_date', 't_transaction_date', 'transaction_date', DT_EXPECT),
  ];
  return stagingSql(reader, 'chargebacks', typed, checks, ['mid', 'case_number']);
}

/** A case's amount: a number, not negative, and below what any case holds (a figure that large is a broken export). */
function amountChecks(): Check[] {
  const number = `TRY_CAST(trim(amount) AS DOUBLE)`;
  return [
    check(`t_amount IS NULL AND ${number} IS NULL`, 'amount', AMOUNT_EXPECT, 'amount'),
    check(`t_amount < 0`, 'amount', 'an amount of 0 or more', 'amount'),
    check(`coalesce(t_amount >= 1e12, ${number} IS NOT NULL)`, 'amount', 'an amount below 1,000,000,000,000 (no case holds more)', 'amount', `t_amount IS NULL OR t_amount >= 1e12`),
  ];
}

function preventionStaging(reader: string): Staging {
  const typed = {
    alert_case_id: nz('alert_case_id'),
    statuses_in: statusesT('statuses'),
    arn: txt('arn'),
    mid: nz('mid'),
    merchant_descriptor: txt('merchant_descriptor'),
    source_partner: enumT('source_partner', SOURCE_PARTNERS, `lower(trim(source_partner))`),
    bin: txt('bin'),
    last_four: txt('last_four'),
    amount: amountT('amount'),
    currency: currencyT('currency'),
    date_received: tsT('date_received'),
    transaction_date: tsT('transaction_date'),
    order_id: txt('order_id'),
    name: txt('name'),
  };
  const statusesNorm = `list_transform(t_statuses_in, x -> ${enumT('x', PREVENTION_STATUSES, 'lower(trim(x))')})`;
  const checks = [
    required('alert_case_id', 'alert_case_id'),
    check(
      `t_statuses_in IS NULL OR len(list_filter(${statusesNorm}, x -> x IS NOT NULL)) <> len(t_statuses_in)`,
      'statuses',
      `a list of ${PREVENTION_STATUSES.join(', ')}`,
      'statuses',
    ),
    check(`t_source_partner IS NULL`, 'source_partner', `one of ${SOURCE_PARTNERS.join(', ')}`, 'source_partner'),
    ...amountChecks(),
    optional('currency', 't_currency', 'currency', CURRENCY_EXPECT),
    optional('date_received', 't_date_received', 'date_received', DT_EXPECT),
    optional('transaction_date', 't_transaction_date', 'transaction_date', DT_EXPECT),
  ];
  return stagingSql(reader, 'prevention', typed, checks, ['alert_case_id'], {
    statuses: statusesNorm,
    status: `${statusesNorm}[-1]`,
  });
}

function midStaging(reader: string): Staging {
  const typed: Record<string, string> = {
    mid: nz('mid'),
    alias: txt('alias'),
    gateways: gatewaysT('gateways'),
  };
  const checks: Check[] = [required('mid', 'mid')];
  const figure = (f: string) => {
    const isCount = f.endsWith('_count');
    const isRatio = f.endsWith('_ratio');
    return {
      isRatio,
      type: (raw: string) => (isCount ? countT(raw) : isRatio ? floatT(raw) : amountT(raw)),
      expect: isCount ? 'a whole count (0, 1, 2, ...)' : isRatio ? 'a number or empty' : AMOUNT_EXPECT,
    };
  };
  for (const f of STAT_FIELDS) {
    const { isRatio, type, expect } = figure(f);
    typed[f] = type(f);
    checks.push(isRatio ? check(optBad(f, `t_${f}`), f, expect, f, `t_${f} IS NULL`) : check(`t_${f} IS NULL`, f, expect, f));
  }
  // Each network's object and each of its figures (from the object, else the flat column) is one column of
  // `raws`, read once: the typing macros repeat their argument, and repeated expressions made planning slow.
  const objects: string[] = [];
  const raws: string[] = [];
  for (const k of MID_NETWORK_KEYS) {
    const obj = ident(`_o_${k}`);
    objects.push(`coalesce(${MID_KEY_SPELLINGS[k].map((c) => nz(c)).join(', ')}) AS ${obj}`);
    typed[`${k}_present`] = `(${obj} IS NOT NULL OR coalesce(${netFields(k).map((f) => nz(ident(`${k}_${f}`))).join(', ')}) IS NOT NULL)`;
    for (const f of netFields(k)) {
      const name = `${k}_${f}`;
      const raw = ident(`_r_${name}`);
      raws.push(`coalesce(json_extract_string(${obj}, ${sqlText(`$.${f}`)}), ${ident(name)}) AS ${raw}`);
      const { isRatio, type, expect } = figure(f);
      typed[name] = type(raw);
      // Figures of an absent network object are not required; of a present one they are (ratios may be empty).
      const bad = MC_EXTRA.includes(f) || isRatio ? optBad(raw, `t_${name}`) : `(t_${k}_present AND t_${name} IS NULL)`;
      checks.push(check(bad, `${k}.${f}`, expect, raw));
    }
  }
  const withObjects = `SELECT *, ${objects.join(', ')} FROM (${reader})`;
  return stagingSql(`SELECT *, ${raws.join(',\n  ')} FROM (${withObjects})`, 'mid_report', typed, checks, ['mid']);
}

/**
 * One pass: raw → typed (t_ columns) → reason → staging, keeping every bad row and one good row per key.
 * `after` adds columns computed from typed ones (e.g. a normalised list).
 */
function stagingSql(reader: string, kind: ReportKind, typed: Record<string, string>, checks: Check[], key: string[], after: Record<string, string> = {}): Staging {
  const raw = RAW_COLUMNS[kind];
  // A row over ROW_LIMIT keeps only the first HEAD_CHARS characters of each longer value (the whole row stays in
  // its landing file); any other row is kept as read.
  const cut = (c: string) => `CASE WHEN _bytes > ${ROW_LIMIT} AND length(${c}) > ${HEAD_CHARS} THEN left(${c}, ${HEAD_CHARS}) || '…' ELSE ${c} END`;
  const rawJson = `to_json(struct_pack(${raw.map((c) => `${ident(c)} := ${cut(ident(c))}`).join(', ')}))::VARCHAR`;
  // Its longest value, named in the reason: given by cbp for a row it read itself, else found here.
  const longest = `list_sort([${raw.map((c) => `struct_pack(n := coalesce(strlen(${ident(c)}), 0), f := ${sqlText(c)})`).join(', ')}], 'DESC')[1]`;
  const sizeReason = `'row: ' || printf('%.1f', _bytes / 1048576) || ' MiB, over the ${ROW_LIMIT / 1048576} MiB limit for one row (its longest value, ' ||
    coalesce(_big_field, struct_extract(${longest}, 'f')) || ', is ' || printf('%.1f', coalesce(_big_bytes, struct_extract(${longest}, 'n')) / 1048576) || ' MiB)'`;
  const sig = DISTINCTIVE[kind].map((c) => `${ident(c)} IS NOT NULL`).join(' OR ');
  const out = [...Object.keys(typed).map((k) => `t_${k} AS ${ident(k)}`), ...Object.entries(after).map(([k, e]) => `${e} AS ${ident(k)}`)];
  // Duplicates are rare, and a window over every row costs as much as the read: staging keeps them, and
  // dedupe runs only when a count shows there are some.
  const select = `WITH src AS (${reader}),
t AS (SELECT *, ${Object.entries(typed).map(([k, e]) => `${e} AS t_${k}`).join(',\n  ')} FROM src),
v AS (SELECT *, CASE WHEN _bytes > ${ROW_LIMIT} THEN ${sizeReason}
  WHEN ${checks.map((c) => `(${c.gate})`).join(' OR ')} THEN NULLIF(concat_ws('; ', ${checks.map((c) => c.reason).join(',\n  ')}), '') END AS _reason, (${sig}) AS _sig FROM t)
SELECT ${out.join(', ')}, _reason AS _why, _sig,
  CASE WHEN _reason IS NOT NULL THEN ${rawJson} END AS _raw
FROM v`;
  const create = `CREATE OR REPLACE TEMP TABLE _stg AS\n${select}`;
  const keys = key.map(ident).join(', ');
  // Of duplicate keys inside one file, one is kept by content order, so the choice never depends on read order.
  const dedupe = `CREATE OR REPLACE TEMP TABLE _stg AS SELECT * FROM _stg
QUALIFY _why IS NOT NULL OR row_number() OVER (PARTITION BY _why IS NULL, ${keys} ORDER BY ${Object.keys(typed).map(ident).join(', ')}) = 1`;
  const stats = `SELECT count(*) AS read, count(*) FILTER (WHERE _why IS NULL) AS good, count(*) FILTER (WHERE _why IS NOT NULL) AS bad,
  count(*) FILTER (WHERE _sig) AS sig, count(DISTINCT (${keys})) FILTER (WHERE _why IS NULL) AS keys FROM _stg`;
  return { select, create, dedupe, stats };
}
