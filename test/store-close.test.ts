// Closing the store while a query runs: DuckDB would destroy the connection on the thread running the query, under
// the lock that thread holds, and the process would never exit (a worker stopped by SIGTERM while its metrics read
// the lake hung so). The store interrupts the query and closes once it has ended.
import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { PACKAGE_ROOT as ROOT } from '../lib/package-root.ts';

const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});

describe('store.close() with a query in flight', () => {
  it('interrupts the query, closes after it, and the process exits', async () => {
    const code = `import { openStore } from './store/db.ts';
      const store = await openStore({ dbPath: ':memory:' });
      const q = store.all('SELECT count(*) AS n FROM range(3000000000) a WHERE a.range % 7 = 3');
      await new Promise((r) => setTimeout(r, 300));
      store.close();
      console.log(await q.then(() => 'finished', (e) => 'rejected: ' + e.message));`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    // A hang is the failure: the child is killed (code null) after a minute, far beyond the interrupt's milliseconds.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    const exit = await new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
    clearTimeout(timer);
    expect(exit, out).toBe(0);
    expect(out).toMatch(/rejected: .*Interrupt/i);
  }, 90_000);

  it('refuses queries after close, with a plain error', async () => {
    const store = await openStore({ dbPath: ':memory:' });
    store.close();
    await expect(store.all('SELECT 1')).rejects.toThrow(/store is closed/);
    store.close();
  });
});
