// Rows JS computed into a table: by parameters (a few thousand: report picks, forecasts), or staged in a temp table
// through DuckDB's appender (many: an evaluation's states and notices, the series a forecast reads).
import type { DuckDBAppender } from '@duckdb/node-api';
import type { Store } from './db.ts';

/** Inserts rows into a table, each value a parameter, 400 rows a statement. */
export async function insertRows(store: Pick<Store, 'run'>, table: string, rows: unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += 400) {
    const params: unknown[] = [];
    const values = rows.slice(i, i + 400).map((r) => `(${r.map((v) => { params.push(v); return `$${params.length}`; }).join(', ')})`);
    await store.run(`INSERT INTO ${table} VALUES ${values.join(', ')}`, params as never);
  }
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
