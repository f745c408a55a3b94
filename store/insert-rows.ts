// Rows JS computed into a table: as one JSON parameter (rules, fingerprints, report picks), or staged in a temp table
// through DuckDB's appender (many: an evaluation's states and notices, the series a forecast reads).
import type { DuckDBAppender } from '@duckdb/node-api';
import type { Store } from './db.ts';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/**
 * Rows sent as one JSON parameter ($n, made by jsonParam), as a SELECT: column j is the text of each row's value j, cast
 * by casts[j] (a parameter per value binds slowly).
 */
export function jsonRows(width: number, casts: readonly string[] = [], n = 1): string {
  return `SELECT ${Array.from({ length: width }, (_, j) => `(e->>${j})${casts[j] ?? ''}`).join(', ')} FROM (SELECT unnest(json_extract($${n}::JSON, '$[*]')) AS e)`;
}

/** Rows (arrays) as jsonRows' parameter: a non-finite number or a bigint as itself, a lone surrogate as U+FFFD (as a parameter would). */
export function jsonParam(rows: readonly unknown[][]): string {
  return JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' || (typeof v === 'number' && !Number.isFinite(v)) ? String(v)
    : typeof v === 'string' ? v.replace(LONE_SURROGATE, '\uFFFD') : v));
}

/** Values as jsonRows(1)'s parameter: `x IN (${jsonRows(1)})` binds a list of any length as one parameter. */
export const jsonList = (values: readonly unknown[]): string => jsonParam(values.map((v) => [v]));

/** Inserts rows (each an array, in cols' order, else the table's) by jsonRows, each value cast to its column's type, or by casts[column] first. */
export async function insertRows(store: Pick<Store, 'run'>, table: string, rows: unknown[][], cols?: readonly string[], casts: Record<string, string> = {}): Promise<void> {
  if (!rows.length) return;
  const select = jsonRows(cols?.length ?? rows[0]!.length, cols?.map((c) => casts[c] ?? ''));
  await store.run(`INSERT INTO ${table} ${cols ? `(${cols.join(', ')})` : ''} ${select}`, [jsonParam(rows)]);
}

/** A staged column's type (appendRow). */
export type StageType = 'text' | 'double' | 'integer' | 'boolean';

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
export async function stageRows<T>(s: Pick<Store, 'conn'>, table: string, types: readonly StageType[], rows: Iterable<T>, value: (row: T, column: number) => unknown): Promise<void> {
  const app = await s.conn.createAppender(table, 'main', 'temp');
  try {
    for (const r of rows) appendRow(app, types, r, value);
    app.flushSync();
  } finally {
    app.closeSync();
  }
}
