// The built CLI (npm run build → dist/, what bin/cbp.js runs), in a package folder of its own: the package.json,
// node_modules and sql/ of the repo beside a dist/ (a copy of the repo's while it is current, which npm ci built with
// the real build script; else built here by that script). It checks what only the build can get wrong: emitted
// import paths, files the code reads from the package root, the prebuilt workflow bundle, and what a start loads.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { WORKFLOW_TYPES } from '../workflows/names.ts';
import { cbpEntry, cleanEnv } from './helpers/cbp-cli.ts';
import { HEAVY_PACKAGES, traceImports } from './helpers/import-trace.ts';
import { tempDir } from './helpers/tmp.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };

function run(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base = cleanEnv();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: opts.cwd, env: { ...base, ...opts.env }, timeout: 290_000 });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let pkgDir: string;
let cbp: string;

beforeAll(async () => {
  pkgDir = tempDir('cbp-build-');
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(pkgDir, 'package.json'));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(pkgDir, 'node_modules'), 'dir');
  fs.symlinkSync(path.join(ROOT, 'sql'), path.join(pkgDir, 'sql'), 'dir');
  fs.mkdirSync(path.join(pkgDir, 'bin'));
  cbp = path.join(pkgDir, 'bin', 'cbp.js');
  fs.copyFileSync(path.join(ROOT, 'bin', 'cbp.js'), cbp);
  if (cbpEntry() === path.join(ROOT, 'bin', 'cbp.js')) {
    fs.cpSync(path.join(ROOT, 'dist'), path.join(pkgDir, 'dist'), { recursive: true });
    return;
  }
  const b = await run([path.join(ROOT, 'scripts', 'build.mjs'), '--out-dir', path.join(pkgDir, 'dist')], { cwd: ROOT });
  expect(b.stderr).toBe('');
  expect(b.code).toBe(0);
}, 300_000);

describe('the built cbp (dist/)', { timeout: 180_000 }, () => {
  it('prints its version and help, loading neither tsx nor any heavy package', async () => {
    for (const args of [['--version'], ['--help']]) {
      const r = await traceImports(cbp, args, { cwd: tempDir() });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({ args, code: 0, stderr: '' });
      expect(r.packages).toContain('commander');
      expect(r.packages.filter((p) => p === 'tsx' || p === 'esbuild' || (HEAVY_PACKAGES as readonly string[]).includes(p))).toEqual([]);
      if (args[0] === '--version') expect(r.stdout.trim()).toBe(pkg.version);
      else expect(r.stdout).toMatch(/Usage: cbp[\s\S]*Commands:[\s\S]*\bdemo\b/);
    }
  });

  it("applies the package's sql/ migrations and views to a new store (files found from dist/ by the package root)", async () => {
    const cwd = tempDir();
    const r = await run([cbp, 'db', 'migrate', '--json'], { cwd, env: { CBP_DATA_DIR: 'data', CBP_LOG_LEVEL: 'error' } });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { applied: unknown[]; views: unknown[]; skippedViews: unknown[] };
    expect(out.applied).toHaveLength(fs.readdirSync(path.join(ROOT, 'sql', 'migrations')).filter((f) => f.endsWith('.sql')).length);
    expect(out.views.length).toBeGreaterThan(0);
    expect(out.skippedViews).toEqual([]);
  });

  it('runs its workers on the prebuilt workflow bundle, which holds every workflow and no I/O module', async () => {
    const bundle = path.join(pkgDir, 'dist', 'workflow-bundle.js');
    const code = fs.readFileSync(bundle, 'utf8');
    for (const name of Object.values(WORKFLOW_TYPES)) expect(code).toContain(name);
    expect(code).not.toMatch(/node_modules\/(@duckdb|undici|pino)\/|require\("(node:)?fs"\)/);
    const worker = pathToFileURL(path.join(pkgDir, 'dist', 'worker', 'worker.js')).href;
    const r = await run(['--input-type=module', '-e', `const m = await import(${JSON.stringify(worker)}); console.log(JSON.stringify(m.workflowSource()))`], { cwd: pkgDir });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ workflowBundle: { codePath: bundle } });
  });

  it('keeps a dist/ built from the same sources (npx cbp in a new clone runs prepare again), and builds one whose stamp differs', async () => {
    const build = () => run([path.join(ROOT, 'scripts', 'build.mjs'), '--out-dir', path.join(pkgDir, 'dist')], { cwd: ROOT });
    const stamp = path.join(pkgDir, 'dist', '.build-stamp');
    const current = fs.readFileSync(stamp, 'utf8'); // (beforeAll copied a current dist/, or built one)
    expect(current).toMatch(/^[0-9a-f]{64}$/);
    const kept = await build();
    expect({ code: kept.code, stderr: kept.stderr }).toEqual({ code: 0, stderr: '' });
    expect(kept.stdout).toContain('is current');
    // Another stamp (sources changed since): built again whole, with the stamp of these sources.
    fs.writeFileSync(stamp, 'f'.repeat(64));
    fs.writeFileSync(path.join(pkgDir, 'dist', 'marker'), '');
    const built = await build();
    expect({ code: built.code, stderr: built.stderr }).toEqual({ code: 0, stderr: '' });
    expect(built.stdout).not.toContain('is current');
    expect(fs.existsSync(path.join(pkgDir, 'dist', 'marker'))).toBe(false);
    expect(fs.readFileSync(stamp, 'utf8')).toBe(current);
  });

  it('says to build when dist/ is missing, instead of a stack trace', async () => {
    const bare = tempDir();
    fs.mkdirSync(path.join(bare, 'bin'));
    fs.copyFileSync(cbp, path.join(bare, 'bin', 'cbp.js'));
    const r = await run([path.join(bare, 'bin', 'cbp.js'), '--version'], { cwd: bare });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('run `npm run build`');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });
});
