// The lake suites' PostgreSQL: lib/local-postgres.ts in a temp folder of the test run. Skipped where PostgreSQL or
// the lake's DuckDB extensions are missing, unless CBP_REQUIRE_LAKE=1 (CI), where that is a failure.
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { postgresBin, startLocalPostgres, type LocalPostgres } from '../../lib/local-postgres.ts';
import { DEFAULT_LAKE_EXTENSIONS_DIR } from '../../store/lake.ts';
import { PACKAGE_ROOT } from '../../lib/package-root.ts';
import { tempDir } from './tmp.ts';

const BIN = postgresBin();
const EXTENSIONS = ['ducklake', 'postgres_scanner'];
const extensionsInstalled = (() => {
  const v = path.join(DEFAULT_LAKE_EXTENSIONS_DIR, 'v1.5.5');
  if (!existsSync(v)) return false;
  return readdirSync(v).some((p) => EXTENSIONS.every((e) => existsSync(path.join(v, p, `${e}.duckdb_extension`))));
})();
export const lakeAvailable = BIN !== undefined && extensionsInstalled;
export const lakeRequired = process.env.CBP_REQUIRE_LAKE === '1';
export const skipLake = !lakeAvailable && !lakeRequired;

export function lakeTitle(what: string): string {
  if (lakeAvailable) return `${what} (PostgreSQL of ${BIN})`;
  const why = BIN === undefined ? 'no PostgreSQL (initdb, postgres)' : 'no lake extensions: npm run lake:install';
  return lakeRequired ? `${what} (CBP_REQUIRE_LAKE=1, and ${why})` : `${what} (skipped: ${why})`;
}

export type Postgres = LocalPostgres;

/** An S3-compatible server for the lake suite: gofakes3 (MIT, Go), which .ci/run builds into .tools/go/bin. */
export const gofakes3 = [path.join(PACKAGE_ROOT, '.tools', 'go', 'bin', 'gofakes3'), ...(process.env.PATH ?? '').split(path.delimiter).map((d) => path.join(d, 'gofakes3'))].find((f) => existsSync(f));

export async function startPostgres(): Promise<Postgres> {
  if (!BIN) throw new Error('CBP_REQUIRE_LAKE=1 but there is no PostgreSQL here (initdb, postgres): apt-get install postgresql');
  if (!extensionsInstalled) throw new Error(`CBP_REQUIRE_LAKE=1 but the lake's DuckDB extensions are not in ${DEFAULT_LAKE_EXTENSIONS_DIR}: npm run lake:install`);
  return startLocalPostgres(path.join(tempDir('cbp-pg-'), 'pg'));
}
