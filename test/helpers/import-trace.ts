// Which packages a `cbp` process loads: it runs with module hooks that record every import it resolves.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './tmp.ts';
import { cleanEnv } from './cbp-cli.ts';

const TRACER = fileURLToPath(new URL('./import-trace.mjs', import.meta.url));

/**
 * Packages slow to load (bench/startup.bench.ts measures them), so only the commands that use them load them,
 * never `cbp --version` or `--help`.
 */
export const HEAVY_PACKAGES = ['@duckdb/node-api', '@temporalio/client', '@temporalio/worker', 'fastify', 'undici', 'nodemailer', 'echarts', '@resvg/resvg-js'] as const;

export interface Traced {
  code: number | null;
  stdout: string;
  stderr: string;
  /** Names of the packages imported (from node_modules), sorted. */
  packages: string[];
  /** cbp's own modules imported, relative to the repository (cli/commands/sql.ts), sorted. */
  files: string[];
}

const REPO = fileURLToPath(new URL('../..', import.meta.url));

/** Runs `node <entry> ...args` with the tracer, in `cwd` with `env` (CBP_ and TEMPORAL_ settings removed first). */
export function traceImports(entry: string, args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Traced> {
  const out = path.join(tempDir('cbp-trace-'), 'imports.txt');
  const base = cleanEnv();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TRACER, entry, ...args], {
      cwd: opts.cwd,
      env: { ...base, ...opts.env, CBP_TEST_IMPORT_TRACE: out },
      timeout: 170_000,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const urls = fs.existsSync(out) ? fs.readFileSync(out, 'utf8').split('\n').filter(Boolean) : [];
      const packages = new Set<string>();
      const files = new Set<string>();
      for (const u of urls) {
        const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(u);
        if (m) packages.add(m[1]);
        else if (u.startsWith('file:')) {
          const rel = path.relative(REPO, fileURLToPath(u));
          if (!rel.startsWith('..')) files.add(rel.split(path.sep).join('/'));
        }
      }
      resolve({ code, stdout, stderr, packages: [...packages].sort(), files: [...files].sort() });
    });
  });
}
