#!/usr/bin/env node
// npm run lake:install — puts the DuckDB extensions a DuckLake store needs (ducklake, postgres, httpfs) under
// .tools/duckdb-extensions/v<DuckDB>/<platform>/ (git-ignored), the way users get them offline: PyPI's
// duckdb-extension-* wheels, pinned to the DuckDB that @duckdb/node-api carries, signed by DuckDB (cbp loads them
// with unsigned extensions refused). Does nothing when they are there. Prints the extension directory.
import { execFileSync } from 'node:child_process';
import { findPython } from './python.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const DUCKDB = '1.5.5'; // the DuckDB of @duckdb/node-api 1.5.5-r.5 (package.json pins it; a test checks)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const platform = { 'linux-x64': 'linux_amd64', 'linux-arm64': 'linux_arm64', 'darwin-arm64': 'osx_arm64', 'darwin-x64': 'osx_amd64' }[`${process.platform}-${process.arch}`];
// The wheel's package, and the file name DuckDB looks for (postgres is the postgres_scanner extension).
const EXTENSIONS = [['ducklake', 'ducklake'], ['postgres', 'postgres_scanner'], ['httpfs', 'httpfs']];
const say = (l) => process.stderr.write(`${l}\n`);

if (!platform) {
  say(`npm run lake:install: no DuckDB extension wheels for ${process.platform}-${process.arch}.`);
  process.exit(1);
}
const dir = path.join(process.env.CBP_LAKE_EXTENSIONS_DIR ?? path.join(root, '.tools', 'duckdb-extensions'));
const target = path.join(dir, `v${DUCKDB}`, platform);
const missing = EXTENSIONS.filter(([, file]) => !fs.existsSync(path.join(target, `${file}.duckdb_extension`)));
if (missing.length === 0) {
  say(`already installed: ${EXTENSIONS.map(([, f]) => f).join(', ')} for DuckDB v${DUCKDB}`);
  process.stdout.write(`${dir}\n`);
  process.exit(0);
}
const python = findPython();
if (!python) {
  say('npm run lake:install needs Python 3 with pip, to fetch the duckdb-extension-* wheels from PyPI; none was found.');
  process.exit(1);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-lake-install-'));
try {
  const wheels = missing.map(([pkg]) => `duckdb-extension-${pkg}==${DUCKDB}`);
  say(`downloading ${wheels.join(', ')} ...`);
  execFileSync(python, ['-m', 'pip', 'download', '--quiet', '--disable-pip-version-check', '--no-deps', '--only-binary=:all:', '-d', tmp, ...wheels], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.mkdirSync(target, { recursive: true });
  for (const [pkg, file] of missing) {
    const wheel = fs.readdirSync(tmp).find((f) => f.startsWith(`duckdb_extension_${pkg}-`) && f.endsWith('.whl'));
    if (!wheel) throw new Error(`pip left no wheel of duckdb-extension-${pkg}`);
    const out = path.join(tmp, pkg);
    execFileSync(python, ['-m', 'zipfile', '-e', path.join(tmp, wheel), out]);
    const inner = path.join(out, `duckdb_extension_${pkg}`, 'extensions', `v${DUCKDB}`);
    const ext = fs.readdirSync(inner).find((f) => f.endsWith('.duckdb_extension'));
    if (!ext) throw new Error(`${wheel} holds no extension for DuckDB v${DUCKDB}`);
    // Copied under a temporary name, then renamed: a file cut short is never taken for the extension.
    const dest = path.join(target, `${file}.duckdb_extension`);
    fs.copyFileSync(path.join(inner, ext), `${dest}.part`);
    fs.renameSync(`${dest}.part`, dest);
    say(`installed ${path.relative(root, dest)}`);
  }
  process.stdout.write(`${dir}\n`);
} catch (e) {
  say(`npm run lake:install failed: ${e.message}`);
  say('The wheels come from PyPI (duckdb-extension-ducklake, -postgres, -httpfs); check that pip can reach it.');
  process.exitCode = 1;
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
