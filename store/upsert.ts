// An upsert in the store's dialect: INSERT … ON CONFLICT on a DuckDB file (its primary keys find the stored row), MERGE
// on a lake (DuckLake has no keys: the MERGE's join finds it). One statement spec, two renderings, the same result.
import type { Store } from './db.ts';

export interface Upsert {
  into: string;
  columns: readonly string[];
  /** the new rows: a SELECT or VALUES whose columns are `columns`, in order, with no key twice */
  rows: string;
  key: readonly string[];
  /** column → expression of the stored row's update (excluded.c: the new row's value, <into>.c: the stored one's); none: the stored row stays */
  set?: Readonly<Record<string, string>>;
}

export function upsertSql(store: Pick<Store, 'lake'>, u: Upsert): string {
  const set = Object.entries(u.set ?? {}).map(([c, e]) => `${c} = ${e}`).join(', ');
  if (!store.lake) {
    return `INSERT INTO ${u.into} (${u.columns.join(', ')}) ${u.rows} ON CONFLICT (${u.key.join(', ')}) ${set ? `DO UPDATE SET ${set}` : 'DO NOTHING'}`;
  }
  const on = u.key.map((k) => `${u.into}.${k} = excluded.${k}`).join(' AND ');
  return `MERGE INTO ${u.into} USING (SELECT * FROM (${u.rows}) AS r(${u.columns.join(', ')})) AS excluded ON ${on}
    ${set ? `WHEN MATCHED THEN UPDATE SET ${set}` : ''}
    WHEN NOT MATCHED THEN INSERT (${u.columns.join(', ')}) VALUES (${u.columns.map((c) => `excluded.${c}`).join(', ')})`;
}
