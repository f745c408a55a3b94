// `npm ci` is the README's first command: it must accept the committed lock file on a machine whose
// registry serves only this platform's binaries (see scripts/fix-lockfile.mjs).
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '..');

describe('package-lock.json', () => {
  it('has an entry for every optional platform dependency, so npm ci accepts it', () => {
    const out = execFileSync(process.execPath, [path.join(root, 'scripts', 'fix-lockfile.mjs'), '--check'], { cwd: root, encoding: 'utf8' });
    expect(out).toMatch(/every optional platform dependency has an entry/);
  });
});

/** [major, minor, patch] of "20", "20.19", "20.19.1", "10.x", "12.*" (missing or x parts: 0). */
function parts(v: string): number[] {
  const p = v.trim().replace(/^v/, '').split('.').map((x) => (/^\d+$/.test(x) ? Number(x) : 0));
  return [p[0] ?? 0, p[1] ?? 0, p[2] ?? 0];
}
const cmp = (a: number[], b: number[]) => a[0]! - b[0]! || a[1]! - b[1]! || a[2]! - b[2]!;

/** Whether version satisfies an engines range of the forms the lock holds: `||` of space-separated >=, >, <=, <, ^, ~, x, *. */
export function satisfiesEngine(version: string, range: string): boolean {
  const v = parts(version);
  return range.split('||').some((alt) =>
    alt.trim().replace(/(>=|<=|>|<|\^|~)\s+/g, '$1').split(/\s+/).filter(Boolean).every((c) => {
      const m = /^(>=|<=|>|<|\^|~)?(.*)$/.exec(c)!;
      const op = m[1] ?? '';
      const b = parts(m[2]!);
      const wild = m[2]!.split('.').map((x) => /^[x*]$|^$/.test(x));
      if (m[2] === '*' || m[2] === '') return true;
      if (op === '>=') return cmp(v, b) >= 0;
      if (op === '>') return cmp(v, b) > 0;
      if (op === '<=') return cmp(v, b) <= 0;
      if (op === '<') return cmp(v, b) < 0;
      if (op === '^') return v[0] === b[0] && cmp(v, b) >= 0;
      if (op === '~') return v[0] === b[0] && v[1] === b[1] && cmp(v, b) >= 0;
      // A bare version: its given parts must match (10.* or 10 any minor).
      const given = m[2]!.split('.').length;
      return v.slice(0, given).every((x, i) => wild[i] || x === b[i]);
    }),
  );
}

describe('the Node versions cbp supports', () => {
  it('every locked package accepts the lowest Node of each range the package names (engines), so npm ci there warns of none', () => {
    const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { engines?: { node?: string } }> };
    const range = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;
    // The first version of each part of the range ("^20.19.0 || >=22.12.0": 20.19.0 and 22.12.0), and the newest majors.
    const floors = range.split('||').map((part) => /^\s*(?:\^|>=)\s*([\d.]+)\s*$/.exec(part)![1]!);
    const versions = [...floors, '24.0.0', '26.0.0'];
    for (const v of versions) expect(satisfiesEngine(v, range), v).toBe(true);
    const refused = versions.flatMap((v) => Object.entries(lock.packages)
      .filter(([name, p]) => name && p.engines?.node && !satisfiesEngine(v, p.engines.node))
      .map(([name, p]) => `Node ${v}: ${name} ${p.engines!.node}`));
    expect(refused).toEqual([]);
    // The README says the same versions.
    expect(readFileSync(path.join(root, 'README.md'), 'utf8')).toContain(`Node.js ${floors.map((f) => f.replace(/\.0$/, '')).join(' or ')} or newer`);
  });

  it('reads the engine ranges the lock holds', () => {
    expect(satisfiesEngine('20.19.0', '^20.19.0 || >=22.12.0')).toBe(true);
    expect(satisfiesEngine('22.1.0', '^20.19.0 || >=22.12.0')).toBe(false);
    expect(satisfiesEngine('20.19.0', '>=22')).toBe(false);
    expect(satisfiesEngine('20.19.0', '>= 20.3.0')).toBe(true);
    expect(satisfiesEngine('20.19.0', '10.* || >= 12.*')).toBe(true);
    expect(satisfiesEngine('11.2.0', '6.* || 8.* || >= 10.*')).toBe(true);
    expect(satisfiesEngine('9.1.0', '6.* || 8.* || >= 10.*')).toBe(false);
  });
});
