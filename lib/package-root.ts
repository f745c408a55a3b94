// The folder of cbp's package.json, whether the code runs from the sources (tests, tsx) or compiled to dist/
// (the `cbp` command): files the code reads by path (sql/, package.json, .tools/) are found from here, never
// by counting `..` from a module, which differs by one level between the two.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest folder at or above `from` holding the package.json of the package named `name`. */
export function findPackageRoot(from: string, name = 'cbp'): string {
  for (let dir = path.resolve(from); ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      try {
        if ((JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === name) return dir;
      } catch {
        // not JSON: not ours, look further up
      }
    }
    if (path.dirname(dir) === dir) throw new Error(`cbp: no package.json of ${name} at or above ${from}: reinstall cbp (npm ci)`);
  }
}

export const PACKAGE_ROOT = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));

/** cbp's version, from its package.json. */
export const PACKAGE_VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
