// The cbp command as a child process (bin/cbp-dev.js: the sources, through tsx), its output and exit code.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface CbpRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cbp ARGS` in cwd with this process's environment plus env. */
export function runCbp(args: string[], o: { cwd: string; env?: Record<string, string> }): Promise<CbpRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'cbp-dev.js'), ...args], { cwd: o.cwd, env: { ...process.env, ...o.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
