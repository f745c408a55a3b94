// The build's stamp (scripts/build.mjs): a hash of every file the build reads, kept in dist/.build-stamp. dist/ is
// current while its stamp is the sources' (the build keeps it then, and the tests run it).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export const STAMP = '.build-stamp';

/** The folders tsconfig.build.json compiles (typescript reads its comments). */
export function buildIncludes(root) {
  const ts = createRequire(import.meta.url)('typescript');
  return ts.readConfigFile(path.join(root, 'tsconfig.build.json'), ts.sys.readFile).config.include;
}

/** The hash of the included folders, what configures tsc and the build, and the dependencies locked and installed. */
export function buildStamp(root, include = buildIncludes(root)) {
  const h = createHash('sha256');
  const file = (f) => h.update(`${path.relative(root, f)}\0`).update(readFileSync(f)).update('\0');
  const tree = (dir) => { for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const f = path.join(dir, e.name);
    if (e.isDirectory()) tree(f); else if (e.isFile()) file(f);
  } };
  for (const f of ['scripts/build.mjs', 'scripts/build-stamp.mjs', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json', 'node_modules/.package-lock.json']) {
    if (existsSync(path.join(root, f))) file(path.join(root, f));
  }
  for (const dir of include) if (existsSync(path.join(root, dir))) tree(path.join(root, dir));
  return h.digest('hex');
}

/** The stamp `out` (a built dist/) was built with; null: none. */
export function readStamp(out) {
  try { return readFileSync(path.join(out, STAMP), 'utf8'); } catch { return null; }
}
