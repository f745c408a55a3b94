#!/usr/bin/env node
// Makes package-lock.json usable by `npm ci` on machines whose registry serves only this platform's
// binaries. Packages such as @duckdb/node-api, esbuild, rollup and @swc/core list one optional dependency
// per platform; when the registry answers 404 for the other platforms' packages, npm 11 leaves them out
// of the lock file and then `npm ci` refuses that same lock file ("Missing: <pkg>@ from lock file",
// npm/cli#9846). This adds an entry for each missing optional dependency (version, optional: true), which
// satisfies npm ci's check; npm still installs only the packages that fit this platform.
//
// Run after every `npm install` that changes dependencies: `npm run lock:fix` (a test runs --check).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = path.join(root, 'package-lock.json');

/** Entries the lock file lacks for declared optional dependencies: [location, entry]. */
export function missingOptional(lock) {
  const pkgs = lock.packages ?? {};
  const out = [];
  for (const [loc, meta] of Object.entries(pkgs)) {
    for (const [name, spec] of Object.entries(meta.optionalDependencies ?? {})) {
      // npm resolves a dependency from the parent's own node_modules up to the root.
      let found = false;
      for (let dir = loc; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
        if (pkgs[`${dir ? `${dir}/` : ''}node_modules/${name}`]) { found = true; break; }
        if (!dir) break;
      }
      if (found) continue;
      const version = String(spec).replace(/^[\^~=]/, '');
      if (!/^\d+\.\d+\.\d+/.test(version)) continue; // a range: nothing safe to pin
      const hoisted = `node_modules/${name}`;
      const at = pkgs[hoisted] ? `${loc}/node_modules/${name}` : hoisted;
      const entry = { version, optional: true };
      if (meta.dev) entry.dev = true;
      out.push([at, entry]);
    }
  }
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const lock = JSON.parse(readFileSync(file, 'utf8'));
  const add = missingOptional(lock);
  if (process.argv.includes('--check')) {
    if (add.length) {
      console.error(`package-lock.json lacks ${add.length} optional platform entries (${add.slice(0, 3).map(([at]) => at).join(', ')}...): npm ci will refuse it. Run: npm run lock:fix`);
      process.exit(1);
    }
    console.log('package-lock.json: every optional platform dependency has an entry');
    process.exit(0);
  }
  for (const [at, entry] of add) lock.packages[at] = entry;
  const sorted = Object.fromEntries(
    Object.entries(lock.packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a < b ? -1 : a > b ? 1 : 0)),
  );
  lock.packages = sorted;
  writeFileSync(file, JSON.stringify(lock, null, 2) + '\n');
  console.log(add.length ? `package-lock.json: added ${add.length} optional platform entries` : 'package-lock.json: nothing to add');
}
