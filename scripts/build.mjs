#!/usr/bin/env node
// npm run build (also run by `prepare`, so `npm ci` leaves a working `cbp`): the runtime folders compiled by
// tsc to dist/ (tsconfig.build.json), the files beside the code that tsc does not copy (.sql, .json, ...), and
// the Temporal workflow bundle dist/workflow-bundle.js, so `cbp worker` does not bundle at every start.
//
// Built into a temporary sibling folder and swapped in at the end: a failed build leaves the previous dist/
// as it was, and dist/ never holds files of sources that were deleted. A dist/ built from the same inputs (its
// stamp, a hash of them) is kept: `npx cbp` in a new clone runs `prepare` again, which must not cost a build.
//
//   node scripts/build.mjs [--out-dir DIR] [--force]     (default: dist in the package root)
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { STAMP, buildIncludes, buildStamp, readStamp } from './build-stamp.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

function fail(msg) {
  process.stderr.write(`build: ${msg}\n`);
  process.exit(1);
}

const args = process.argv.slice(2);
const at = args.indexOf('--out-dir');
if (args.some((a, i) => a !== '--out-dir' && a !== '--force' && (at < 0 || i !== at + 1))) fail(`unknown argument; usage: node scripts/build.mjs [--out-dir DIR] [--force]`);
if (at >= 0 && (!args[at + 1] || args[at + 1].startsWith('--'))) fail('--out-dir needs a folder');
const out = path.resolve(at >= 0 ? args[at + 1] : path.join(root, 'dist'));
const tmp = `${out}.building-${process.pid}`;
const tsconfig = path.join(root, 'tsconfig.build.json');
let include;
try { include = buildIncludes(root); } catch { fail('typescript is not installed: run npm ci in the cbp folder'); }
const digest = buildStamp(root, include);
if (!args.includes('--force') && readStamp(out) === digest) {
  process.stdout.write(`build: ${path.relative(process.cwd(), out) || out} is current (built from these sources; --force builds again)\n`);
  process.exit(0);
}

const started = Date.now();
rmSync(tmp, { recursive: true, force: true });
try {
  // 1. tsc: type errors fail the build (what `npm run typecheck` reports), nothing is half-emitted into dist/.
  const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', tsconfig, '--outDir', tmp], { cwd: root, stdio: 'inherit' });
  if (tsc.status !== 0) throw new Error(`tsc failed (exit ${tsc.status ?? tsc.signal}); nothing was changed in ${out}`);

  // 2. What the code reads beside itself and tsc does not emit (an imported .json is emitted; a .sql read by
  // path is not). Files shared by the whole package (sql/, package.json) are read from the package root.
  for (const dir of include) copyAssets(path.join(root, dir), path.join(tmp, dir));

  // 3. The workflow bundle, from the compiled bindings: the same code the rest of dist/ runs.
  const { bundleWorkflowCode } = await import('@temporalio/worker');
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
  const bundle = await bundleWorkflowCode({ workflowsPath: path.join(tmp, 'workflows', 'temporal.js'), logger: quiet });
  writeFileSync(path.join(tmp, 'workflow-bundle.js'), bundle.code);
  writeFileSync(path.join(tmp, STAMP), digest);

  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
} catch (e) {
  rmSync(tmp, { recursive: true, force: true });
  fail(e instanceof Error ? e.message : String(e));
}
process.stdout.write(`build: ${path.relative(process.cwd(), out) || out} in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);

/** Copies every file under `from` that is not TypeScript to the same place under `to`. */
function copyAssets(from, to) {
  if (!existsSync(from)) return;
  for (const e of readdirSync(from, { withFileTypes: true })) {
    const src = path.join(from, e.name);
    if (e.isDirectory()) copyAssets(src, path.join(to, e.name));
    else if (e.isFile() && !/\.[cm]?ts$/.test(e.name)) cpSync(src, path.join(to, e.name));
  }
}
