// One writer per store file: a reader that holds the file for a moment (`cbp status`) delays a run, it does not
// fail it; a process that keeps the file still gets the lock message, after the wait.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../store/db.ts';
import { tempDir } from './helpers/tmp.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const children: ChildProcess[] = [];
const stores: Store[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
  for (const s of stores.splice(0)) s.close();
});

/** A process that opens the file read-only, says so, and closes it after holdMs (never, when undefined). */
function holder(dbPath: string, holdMs?: number): Promise<ChildProcess> {
  const code = `
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const i = await DuckDBInstance.create(${JSON.stringify(dbPath)}, { access_mode: 'READ_ONLY' });
    process.stdout.write('held\\n');
    ${holdMs === undefined ? 'setInterval(() => {}, 1000);' : `setTimeout(() => { i.closeSync(); process.exit(0); }, ${holdMs});`}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('held') && resolve(child));
    child.on('exit', (c) => reject(new Error(`holder exited ${c}`)));
  });
}

describe('the store file lock', () => {
  it('waits for a reader that holds the store for a moment, then opens for writing', async () => {
    const dbPath = path.join(tempDir(), 'cbp.duckdb');
    (await openStore({ dbPath, migrate: false })).close();
    await holder(dbPath, 300);
    const s = await openStore({ dbPath, migrate: false });
    stores.push(s);
    await s.run('CREATE TABLE t (x INTEGER)');
  });

  it('still refuses, with what to do, when another process keeps the store', async () => {
    const dbPath = path.join(tempDir(), 'cbp.duckdb');
    (await openStore({ dbPath, migrate: false })).close();
    await holder(dbPath);
    await expect(openStore({ dbPath, migrate: false, lockWaitMs: 200 })).rejects.toThrow(/held by another process .*query the published snapshot/);
  });
});
