// Comments that point at a file, or at a name in one ("store/alert-states.ts recordedStates"), point at something
// that exists. Migrations are left out: their text is checksummed and never changes.
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
    const files = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n')
      .filter((f) => /\.(ts|sql|mjs|js)$/.test(f) && !f.startsWith('sql/migrations/') && existsSync(path.join(ROOT, f)));
    const stale: string[] = [];
    for (const f of files) {
      readFileSync(path.join(ROOT, f), 'utf8').split('\n').forEach((line, i) => {
        if (!COMMENT.test(line)) return;
        for (const [, p, name] of line.matchAll(POINTER)) {
          if (/^(OUT|shared)\//.test(p!)) continue;
          const target = [path.join(ROOT, p!), path.join(ROOT, path.dirname(f), p!)].find((c) => existsSync(c));
          if (!target) stale.push(`${f}:${i + 1}: ${p} does not exist`);
          else if (name && statSync(target).isFile() && !readFileSync(target, 'utf8').includes(name)) stale.push(`${f}:${i + 1}: ${p} has no ${name}`);
        }
      });
    }
    expect(stale).toEqual([]);
  });
});
