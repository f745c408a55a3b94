#!/usr/bin/env node
// npm run analyst-tools:install — the tools the README's export lines use, as an analyst gets them: the DuckDB CLI
// (PyPI's `duckdb-cli` wheel carries the `duckdb` binary), pandas and pyarrow, pinned, in a project-local virtualenv,
// .tools/analyst (git-ignored; another folder as the first argument). Does nothing when they are there. Prints the
// folder of the `duckdb` and `python` it installed. test/demo.test.ts runs the README's lines with them.
import { execFileSync } from 'node:child_process';
import { findPython } from './python.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PINS = ['duckdb-cli==1.5.5', 'pandas==3.1.1', 'pyarrow==26.0.1']; // duckdb-cli: the DuckDB cbp is pinned to
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const venv = path.resolve(process.argv[2] ?? path.join(root, '.tools', 'analyst'));
const win = process.platform === 'win32';
const bin = path.join(venv, win ? 'Scripts' : 'bin');
const say = (l) => process.stderr.write(`${l}\n`);
const ready = () => fs.existsSync(path.join(bin, win ? 'duckdb.exe' : 'duckdb')) && fs.existsSync(path.join(venv, '.cbp-pins')) &&
  fs.readFileSync(path.join(venv, '.cbp-pins'), 'utf8') === PINS.join('\n');

if (ready()) {
  say(`already installed: ${PINS.join(', ')}`);
  process.stdout.write(`${bin}\n`);
  process.exit(0);
}
const python = findPython();
if (!python) {
  say('npm run analyst-tools:install needs Python 3 (with venv), and none was found. Or: pipx install duckdb-cli; pip install pandas pyarrow.');
  process.exit(1);
}
try {
  say(`installing ${PINS.join(', ')} into ${path.relative(root, venv) || venv} ...`);
  fs.rmSync(venv, { recursive: true, force: true });
  execFileSync(python, ['-m', 'venv', venv], { stdio: ['ignore', 'ignore', 'inherit'] });
  execFileSync(path.join(bin, 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...PINS], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.writeFileSync(path.join(venv, '.cbp-pins'), PINS.join('\n'));
  say(`installed: ${execFileSync(path.join(bin, 'duckdb'), ['--version'], { encoding: 'utf8' }).trim()}`);
  process.stdout.write(`${bin}\n`);
} catch (e) {
  fs.rmSync(venv, { recursive: true, force: true });
  say(`npm run analyst-tools:install failed: ${e.message}`);
  process.exit(1);
}
