/** Text as a SQL string literal (quotes doubled, a NUL as chr(0)), for statements that take no parameters: views, ATTACH, SET. */
export const sqlText = (text: string): string => `'${text.replace(/'/g, "''").replace(/\0/g, "' || chr(0) || '")}'`;

/** A YYYY-MM month's first day, as a SQL DATE. */
export const monthStartSql = (month: string): string => `strptime(${sqlText(month)} || '-01', '%Y-%m-%d')::DATE`;

/**
 * Drops temp tables or views by their full name: a bare name is looked up in a lake's catalog first, a catalog
 * snapshot of its own (docs/lake.md "What it costs").
 */
export const dropTemp = (kind: 'TABLE' | 'VIEW', ...names: string[]): string => names.map((n) => `DROP ${kind} IF EXISTS temp.main.${n}`).join('; ');
