// CBP_STORE: which store cbp opens. Unset (or a DuckDB file path), the DuckDB file of CBP_DB_PATH; or a DuckLake lake
// catalogued in PostgreSQL, `ducklake:postgres:<libpq key=value string>` (docs/lake.md). The libpq string's password
// is a secret: shown masked, and never in an error or a log.

export const LAKE_PREFIX = 'ducklake:postgres:';

/** The libpq string of a lake setting, or null when the setting is not a lake. */
export function lakeCatalog(store: string | undefined): string | null {
  return store !== undefined && store.startsWith(LAKE_PREFIX) ? store.slice(LAKE_PREFIX.length) : null;
}

/** libpq key=value pairs: key = value, values bare or single-quoted with \' and \\ escapes. */
export function parseLibpq(s: string): Array<[string, string]> {
  return libpqPairs(s).map(([k, v]) => [k, v]);
}

/** The pairs with each value also as written (escapes kept). */
function libpqPairs(s: string): Array<[string, string, string]> {
  const out: Array<[string, string, string]> = [];
  const re = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|([^\s']*))/y;
  let i = 0;
  while (i < s.length) {
    if (/^\s*$/.test(s.slice(i))) break;
    re.lastIndex = i;
    const m = re.exec(s);
    if (!m) throw new Error(`cannot read the connection string from position ${i}: write key=value pairs separated by spaces (dbname=cbp host=db.example.com user=cbp)`);
    out.push([m[1], m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? ''), m[2] ?? m[3] ?? '']);
    i = re.lastIndex;
  }
  return out;
}

/** What is wrong with a CBP_STORE value, or null. */
export function storeSettingProblem(store: string): string | null {
  if (!store.startsWith('ducklake:')) return null;
  if (!store.startsWith(LAKE_PREFIX)) return `a lake is ducklake:postgres:<connection string>; only a PostgreSQL catalog admits several processes`;
  let pairs: Array<[string, string]>;
  try {
    pairs = parseLibpq(store.slice(LAKE_PREFIX.length));
  } catch (e) {
    return (e as Error).message;
  }
  if (!pairs.some(([k]) => k === 'dbname')) return 'the connection string names no dbname (ducklake:postgres:dbname=cbp host=… user=…)';
  return null;
}

/** The password of a lake setting in every spelling an error may quote (for redaction): its value, as written with
 * libpq's escapes, and either with SQL's doubled quotes; longest first. */
export function lakeSecrets(store: string | undefined): string[] {
  const catalog = lakeCatalog(store);
  if (catalog === null) return [];
  try {
    const spellings = libpqPairs(catalog).filter(([k, v]) => k === 'password' && v.length > 0)
      .flatMap(([, v, raw]) => [v, raw, v.replace(/'/g, "''"), raw.replace(/'/g, "''")]);
    return [...new Set(spellings)].sort((a, b) => b.length - a.length);
  } catch {
    return [];
  }
}

/** The setting with its password masked. */
export function maskLake(store: string): string {
  const catalog = lakeCatalog(store);
  if (catalog === null) return store;
  try {
    return LAKE_PREFIX + parseLibpq(catalog).map(([k, v]) => `${k}=${k === 'password' ? '***' : /[\s'\\]/.test(v) || v === '' ? `'${v.replace(/['\\]/g, '\\$&')}'` : v}`).join(' ');
  } catch {
    return `${LAKE_PREFIX}(unreadable, hidden)`;
  }
}
