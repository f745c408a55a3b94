// `npm ci` is the README's first command: it must accept the committed lock file on a machine whose
// registry serves only this platform's binaries (see scripts/fix-lockfile.mjs).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(__dirname, '..');

describe('package-lock.json', () => {
  it('has an entry for every optional platform dependency, so npm ci accepts it', () => {
    const out = execFileSync(process.execPath, [path.join(root, 'scripts', 'fix-lockfile.mjs'), '--check'], { cwd: root, encoding: 'utf8' });
    expect(out).toMatch(/every optional platform dependency has an entry/);
  });
});
