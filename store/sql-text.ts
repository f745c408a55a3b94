/** Text as a SQL string literal (quotes doubled), for statements that take no parameters: views, ATTACH, SET. */
export const sqlText = (text: string): string => `'${text.replace(/'/g, "''")}'`;
