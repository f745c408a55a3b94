// The small SQL language a report load types its raw columns with. Every raw column is VARCHAR; these
// expressions type it and say why when they cannot. What is plain SQL lives in sql/load/typing.sql as
// temporary macros (created once per connection, typingOnce); what depends on the contract's lists (statuses,
// partners, card brands) is generated here from them, so each list has one source.
import { sqlText } from '../sql-text.ts';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { BRAND_ALIASES, CARD_BRANDS } from '../../contract/common.ts';
import { CHARGEBACK_STATUSES } from '../../contract/reporting.ts';
import { PACKAGE_ROOT } from '../../lib/package-root.ts';

/** sql/load/typing.sql, beside the views (not through store/db.ts: loading DuckDB for a path would slow every `cbp` start). */
export const TYPING_SQL_FILE = path.join(PACKAGE_ROOT, 'sql', 'load', 'typing.sql');

let typing: string | undefined;
const typed = new WeakSet<object>();
/** Creates the typing macros (temp objects) on `store`'s connection unless this process already did; outside a transaction, whose rollback would drop them. */
export async function typingOnce(store: { conn: object; run(sql: string): Promise<void> }): Promise<void> {
  if (typed.has(store.conn)) return;
  typing ??= readFileSync(TYPING_SQL_FILE, 'utf8');
  await store.run(typing);
  typed.add(store.conn);
}

export const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;

// The macros of sql/load/typing.sql, by column expression.
export const nz = (c: string) => `load_nz(${c})`;
export const txt = (c: string) => `load_txt(${c})`;
const shown = (c: string) => `load_shown(${c})`;
export const amountT = (c: string) => `load_amount(${c})`;
export const countT = (c: string) => `load_count(${c})`;
export const floatT = (c: string) => `load_float(${c})`;
export const tsT = (c: string) => `load_ts(${c})`;
export const currencyT = (c: string) => `load_currency(${c})`;
export const statusesT = (c: string) => `load_statuses(${c})`;
export const gatewaysT = (c: string) => `load_gateways(${c})`;

// A value already spelled as its canonical form maps to itself: that test is a cheap list lookup, and only
// other spellings pay for the normalising string functions. list_contains, not IN: DuckDB turns an IN list
// into a join against the constants, which costs a load more CPU.
const oneOf = (c: string, values: readonly string[]) => `list_contains([${values.map(sqlText).join(', ')}], ${c})`;
export const enumT = (c: string, values: readonly string[], key: string) =>
  `CASE WHEN ${oneOf(c, values)} THEN ${c} ELSE CASE ${key} ${values.map((v) => `WHEN ${sqlText(v.toLowerCase())} THEN ${sqlText(v)}`).join(' ')} END END`;
// Plain replace, not a regex: it runs on every row, and the spellings seen are did_not_fight and Did Not Fight.
export const statusT = (c: string) => enumT(c, CHARGEBACK_STATUSES, `lower(replace(trim(${c}), '_', ' '))`);

/** What JavaScript's `\s` and trim() take for white space, as an RE2 class body (DuckDB's `\s` is ASCII only). */
const JS_SPACE = String.raw`\t\n\v\f\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}\x{feff}`;

/**
 * contract/common.ts normaliseBrand as SQL: the brand a spelling names, by brandKey (trimmed, lower case,
 * each run of spaces and hyphens one `_`) and BRAND_ALIASES; NULL for a spelling the contract does not know.
 * The events view's stg_card_brand (sql/views/10_stg_events.sql) is this, for `s` (a test checks it).
 */
export function brandSql(c: string): string {
  const key = `regexp_replace(regexp_replace(lower(${c}), '^[${JS_SPACE}]+|[${JS_SPACE}]+$', '', 'g'), '[${JS_SPACE}-]+', '_', 'g')`;
  return `CASE ${key} ${Object.entries(BRAND_ALIASES).map(([k, v]) => `WHEN ${sqlText(k)} THEN ${sqlText(v)}`).join(' ')} END`;
}
export const brandT = (c: string) => `CASE WHEN ${oneOf(c, CARD_BRANDS)} THEN ${c} ELSE ${brandSql(c)} END`;

/**
 * A check: when `bad` holds, the row is quarantined with `field: expectation, got value`. `gate` is a cheap
 * condition that holds whenever `bad` does: a row none of whose gates hold skips building a reason at all.
 */
export interface Check {
  gate: string;
  reason: string;
}
export const check = (bad: string, field: string, expect: string, raw: string, gate = bad): Check => ({
  gate,
  reason: `CASE WHEN ${bad} THEN ${sqlText(`${field}: ${expect}, got `)} || ${shown(raw)} END`,
});
export const required = (field: string, raw: string) => check(`t_${field} IS NULL`, field, 'a non-empty value', raw);
/** Optional field: quarantined only when given and not parseable. */
export const optBad = (raw: string, typed: string) => `(${typed} IS NULL AND ${nz(raw)} IS NOT NULL)`;
export const optional = (raw: string, typed: string, field: string, expect: string) => check(optBad(raw, typed), field, expect, raw, `${typed} IS NULL`);

export const DT_EXPECT = 'a UTC date-time YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD HH:MM:SS, or a date YYYY-MM-DD';
export const AMOUNT_EXPECT = 'an amount (a number or a decimal string such as "94.76")';
export const CURRENCY_EXPECT = 'a three-letter ISO 4217 code such as USD';
export const BRAND_EXPECT = `a card brand (${CARD_BRANDS.join(', ')})`;
