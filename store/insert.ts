// Rows inserted from JS as parameters, in statements of a bounded size (small tables: rules, fingerprints).
import type { Store } from './db.ts';

/** Inserts rows in statements of 400, each value a parameter (followed by casts[column] when given). */
export async function insertChunked(store: Pick<Store, 'run'>, head: string, cols: readonly string[], rows: unknown[][], tail: string, casts: Record<string, string> = {}): Promise<void> {
  const CHUNK = 400;
  for (let i = 0; i < rows.length; i += CHUNK) {
    const part = rows.slice(i, i + CHUNK);
    const params: unknown[] = [];
    const values = part.map((r) => `(${r.map((v, j) => { params.push(v); return `$${params.length}${casts[cols[j]] ?? ''}`; }).join(', ')})`);
    await store.run(`${head} (${cols.join(', ')}) VALUES ${values.join(', ')} ${tail}`, params as never);
  }
}

/** A text as a SQL string literal ('it''s'), for statements built with values inline. */
export const sqlLiteral = (v: string) => `'${v.replaceAll("'", "''")}'`;
