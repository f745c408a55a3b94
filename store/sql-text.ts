/** Text as a SQL string literal (quotes doubled, a NUL as chr(0)), for statements that take no parameters: views, ATTACH, SET. */
export const sqlText = (text: string): string => `'${text.replace(/'/g, "''").replace(/\0/g, "' || chr(0) || '")}'`;
