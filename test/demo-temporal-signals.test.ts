// `cbp demo --temporal` failing and interrupted: without a working temporal CLI it says how to get one (exit 2), a
// dev server that does not start is reported in its own words, and Ctrl-C or SIGKILL leave no process behind.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HOW_TO_GET_TEMPORAL } from '../lib/temporal-cli.ts';
import { cbp, rmrf, tempDir } from './activities-fixtures.ts';
import { alive, cli, demoSignalled as signalled, pdeathsig, processesNaming, required, title } from './helpers/temporal-demo.ts';

const dir = tempDir();
afterAll(() => rmrf(dir));
const demoSignalled = (dataDir: string, signal: NodeJS.Signals) => signalled(dir, dataDir, signal);

describe('cbp demo --temporal without a working temporal CLI', () => {
  it('exits 2 and says how to get one, touching no folder', async () => {
    const dataDir = path.join(dir, 'no-cli');
    // CBP_TEMPORAL_CLI names the binary and nothing else is searched: a path that is not there hides PATH and .tools/.
    const r = await cbp(['demo', '--temporal', '--data-dir', dataDir], { CBP_TEMPORAL_CLI: path.join(dir, 'no-such-temporal') }, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(HOW_TO_GET_TEMPORAL);
    expect(r.stderr).toMatch(/npm run temporal:install.*brew install temporal/s);
    expect(r.stderr).toMatch(/CBP_TEMPORAL_CLI=".*no-such-temporal" is not an executable file/);
    expect(fs.existsSync(dataDir)).toBe(false);
  });

  it('fails (exit 1) with the server\'s own words when its dev server does not start, and stops what it started', async () => {
    const fake = path.join(dir, 'temporal-that-fails');
    fs.writeFileSync(fake, '#!/bin/sh\necho "listen tcp: address already in use (a stand-in failure)" >&2\nexit 3\n', { mode: 0o755 });
    const dataDir = path.join(dir, 'server-fails');
    const r = await cbp(['demo', '--temporal', '--data-dir', dataDir], { CBP_TEMPORAL_CLI: fake }, dir);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/the Temporal dev server \(.*temporal-that-fails server start-dev .*\) did not start: it exited with 3\n.*a stand-in failure/s);
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(processesNaming(dataDir)).toEqual([]);
  });

  it('refuses --days with --temporal (the service lives until today), exit 2', async () => {
    const r = await cbp(['demo', '--temporal', '--days', '10', '--data-dir', path.join(dir, 'days')], {}, dir);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--days does not go with --temporal/);
  });
});
describe.skipIf(!cli && !required)(title, { timeout: 600_000 }, () => {
  it('stops the worker and the dev server on Ctrl-C (SIGINT to the demo alone), exit 130', async () => {
    const dataDir = path.join(dir, 'interrupted');
    const r = await demoSignalled(dataDir, 'SIGINT');
    expect({ code: r.code, stderr: r.stderr.slice(-3000) }).toMatchObject({ code: 130 });
    expect(r.stderr).toMatch(/cbp demo: interrupted; everything it started is stopped/);
    const pid = Number(/dev server .* \(pid (\d+)\)/.exec(r.stdout)![1]);
    expect(alive(pid)).toBe(false);
    expect(processesNaming(dataDir)).toEqual([]);
  });

  it.skipIf(!pdeathsig)('takes the dev server with it when killed by SIGKILL (setpriv --pdeathsig; skipped where there is none)', async () => {
    const dataDir = path.join(dir, 'killed');
    const r = await demoSignalled(dataDir, 'SIGKILL');
    expect(r.signal).toBe('SIGKILL');
    const pid = Number(/dev server .* \(pid (\d+)\)/.exec(r.stdout)![1]);
    // The kernel's SIGTERM reaches the server at once; it takes a moment to stop (a hang guard, not a limit).
    for (let i = 0; i < 600 && alive(pid); i++) await new Promise((res) => setTimeout(res, 100));
    expect(alive(pid)).toBe(false);
    expect(processesNaming(dataDir)).toEqual([]);
  });
});
