// The systemd units of deploy/systemd pass `systemd-analyze verify` (every key known, every value parsed), where
// systemd-analyze is installed; skipped, and said so, where it is not. verify prints a warning for a bad line and
// still exits 0, so any output fails. ExecStart's node is pointed at this node (verify checks the file exists).
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './store-fixtures.ts';
import { tempDir } from './helpers/tmp.ts';

const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;
const UNITS = path.join(ROOT, 'deploy', 'systemd');

describe.skipIf(!hasAnalyze)(`deploy/systemd units${hasAnalyze ? '' : ' (skipped: no systemd-analyze here)'}`, () => {
  it('pass systemd-analyze verify with no warning', () => {
    const dir = tempDir();
    const units = readdirSync(UNITS).filter((n) => n.endsWith('.service'));
    expect(units.sort()).toEqual(['cbp-webhook.service', 'cbp-worker.service']);
    for (const u of units) writeFileSync(path.join(dir, u), readFileSync(path.join(UNITS, u), 'utf8').replaceAll('/usr/bin/node', process.execPath));
    const r = spawnSync('systemd-analyze', ['verify', ...units.map((u) => path.join(dir, u))], { encoding: 'utf8' });
    expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
    expect(r.status).toBe(0);
  });
});

it('keeps the units on the CLI commands they run', () => {
  const exec = (u: string) => /^ExecStart=(.*)$/m.exec(readFileSync(path.join(UNITS, u), 'utf8'))![1];
  expect(exec('cbp-webhook.service')).toMatch(/\/bin\/cbp\.js webhook$/);
  expect(exec('cbp-worker.service')).toMatch(/\/bin\/cbp\.js worker --grace 30s$/);
});
