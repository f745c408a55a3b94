// View files (sql/views/*.sql) as text: the store makes its views of them (store/migrate.ts), and the ratio views' text
// is part of the judge's identity (rules/rule-table.ts).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The view files of dir, in filename order (the order they are made in); none when dir does not exist. */
export function readViews(dir: string): Array<{ file: string; sql: string }> {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).filter((x) => x.endsWith('.sql')).sort().map((f) => ({ file: f, sql: readFileSync(path.join(dir, f), 'utf8') }));
}
