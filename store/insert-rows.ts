// Rows into a table by parameters: for the few thousand rows JS computes (report picks, forecasts).
import type { Store } from './db.ts';

/** Inserts rows into a table, each value a parameter, 400 rows a statement. */
export async function insertRows(store: Pick<Store, 'run'>, table: string, rows: unknown[][]): Promise<void> {
  for (let i = 0; i < rows.length; i += 400) {
    const params: unknown[] = [];
    const values = rows.slice(i, i + 400).map((r) => `(${r.map((v) => { params.push(v); return `$${params.length}`; }).join(', ')})`);
    await store.run(`INSERT INTO ${table} VALUES ${values.join(', ')}`, params as never);
  }
}
