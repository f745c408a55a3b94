// The documentation a user reads stays inside the repository: every relative link resolves to a file here, and
// nothing names the project's planning material, which a clone does not have.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

function markdownFiles(): string[] {
  const out = ['README.md'];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, e.name);
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}

describe('the documentation', () => {
  const files = markdownFiles();

  it('links only to files inside the repository', () => {
    const broken: string[] = [];
    for (const f of files) {
      const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!;
        if (!target || /^[a-z]+:/i.test(target)) continue;
        const abs = path.resolve(ROOT, path.dirname(f), target);
        if (path.relative(ROOT, abs).startsWith('..') || !fs.existsSync(abs)) broken.push(`${f}: ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('names no file that only the project\'s planning folder has', () => {
    const named: string[] = [];
    for (const f of files) {
      const text = fs.readFileSync(path.join(ROOT, f), 'utf8');
      for (const m of text.matchAll(/DESIGN\.md|shared\/(reference|spec)|\.\.\/shared/g)) named.push(`${f}: ${m[0]}`);
    }
    expect(named).toEqual([]);
  });
});
