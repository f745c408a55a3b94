// The whole run gets a temp folder of its own (TMPDIR, which os.tmpdir() and every child process honour), so
// whatever a test leaves behind is found: the run fails naming it, and the folder is removed either way.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The run's temp folder's name starts so; RUN_CACHE in it holds what the test files share (the workflow
 * bundle, the store template). */
export const RUN_PREFIX = 'cbp-test-run-';
export const RUN_CACHE = 'run-cache';

/** Where `name` is kept for the whole run (its cache folder), or undefined outside a run's temp folder. */
export function runCachePath(name: string): string | undefined {
  const base = os.tmpdir();
  return path.basename(base).startsWith(RUN_PREFIX) ? path.join(base, RUN_CACHE, name) : undefined;
}

export default function setup(): () => void {
  const before = process.env.TMPDIR;
  const base = mkdtempSync(path.join(os.tmpdir(), RUN_PREFIX));
  process.env.TMPDIR = base;
  return () => {
    // tsx's compile cache (tsx-<uid>), made by the CLI processes the tests start, is not a test's leftover.
    const left = readdirSync(base).filter((e) => !/^tsx-\d+$/.test(e) && e !== RUN_CACHE);
    // What a leftover holds says who made it.
    const inside = left.slice(0, 3).map((e) => { try { return `${e}: ${readdirSync(path.join(base, e)).slice(0, 5).join(', ')}`; } catch { return e; } });
    rmSync(base, { recursive: true, force: true });
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    if (left.length > 0) {
      throw new Error(`the tests left ${left.length} entries in the temp folder (${left.slice(0, 10).join(', ')}${left.length > 10 ? ', …' : ''}; holding ${inside.join(' | ')}): each test removes what it creates (use test/helpers/tmp.ts)`);
    }
  };
}
