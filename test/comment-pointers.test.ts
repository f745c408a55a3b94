// Comments that point at a file, or at a name in one ("store/alert-states.ts recordedStates"), point at something
// that exists, migrations' comments too (store/migrate.ts lets them change, never their statements).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** A path of a source or doc, then maybe a code name after it (camelCase or snake_case). */
const POINTER = /((?:[\w-]+\/)+[\w.-]+\.(?:ts|sql|md|mjs|json|js))(?:[ :]+([a-z]+[A-Z]\w*|[a-z]+_[a-z0-9_]+)\b)?/g;
const COMMENT = /^\s*(\/\/|\*|\/\*|--)|\s(\/\/|--)\s/;

describe('comments', () => {
  it('name files and code that exist', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n').filter((f) => f && existsSync(path.join(ROOT, f)));
    // What a fresh clone holds: the tracked files and their folders (data a run makes is not there).
    const present = new Set(tracked.flatMap((f) => f.split('/').map((_, i, parts) => parts.slice(0, i + 1).join('/'))));
    const files = tracked.filter((f) => /\.(ts|sql|mjs|js)$/.test(f));
    const stale: string[] = [];
    for (const f of files) {
      readFileSync(path.join(ROOT, f), 'utf8').split('\n').forEach((line, i) => {
        if (!COMMENT.test(line)) return;
        for (const [, p, name] of line.matchAll(POINTER)) {
          if (/^(OUT|shared|dist|data)\//.test(p!)) continue; // made by a run or the build
          const target = [p!, path.posix.normalize(path.posix.join(path.posix.dirname(f), p!))].find((c) => present.has(c));
          if (!target) stale.push(`${f}:${i + 1}: ${p} is not in the repository`);
          else if (name && statSync(path.join(ROOT, target)).isFile() && !readFileSync(path.join(ROOT, target), 'utf8').includes(name)) stale.push(`${f}:${i + 1}: ${p} has no ${name}`);
        }
      });
    }
    expect(stale).toEqual([]);
  });
});
