// A load's temp copy of its report file (written when cbp reads long rows itself) lies beside the file, on the
// data's disk, under an OS lock while the load runs; a load killed mid-way leaves it, and the next load in that
// folder removes it. Before, it was a full copy of the report in the system's temp folder that nothing removed.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openTestStore } from './helpers/store-template.ts';
import { loadReport } from '../store/load.ts';
import { claimLoadCopy, removeStaleLoadCopies } from '../store/load/temp.ts';
import { CHARGEBACK_COLUMNS } from '../contract/reporting.ts';
import { tmpDir } from './store-fixtures.ts';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SEEN = '2024-03-05T00:00:00Z';
const MiB = 1024 * 1024;
const row = (case_number: string, reason = 'Fraud') =>
  `${case_number},New,74000000000000000000001,MID-1,411111******1111,visa,94.76,USD,4837,${reason},2024-03-02 10:15:00,2024-02-20,,,`;

/** A CSV report with one 5 MiB row (read by cbp, so the load makes a temp copy without it). */
function longRowFile(dir: string, name = 'cb.csv'): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `${CHARGEBACK_COLUMNS.join(',')}\n${row('CB-1')}\n${row('CB-2', 'x'.repeat(5 * MiB))}\n${row('CB-3')}\n`);
  return file;
}

const copiesIn = (dir: string) => fs.readdirSync(dir).filter((n) => n.includes('.cbp-load-')).sort();
const tmpCopies = () => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('cbp-load-'));

describe("a load's temp copy", () => {
  it('lies beside the file under its lock while the load reads it, and is gone after', async () => {
    const dir = tmpDir();
    const file = longRowFile(dir);
    const store = await openTestStore({ dbPath: path.join(dir, 'cbp.duckdb') });
    const seen: string[] = [];
    const modes: number[] = [];
    const before = tmpCopies();
    try {
      const r = await loadReport(store, file, {
        kind: 'chargebacks',
        seenAt: SEEN,
        beforeCommit: () => {
          seen.push(...copiesIn(dir));
          modes.push(fs.statSync(path.join(dir, seen[0])).mode & 0o777);
          // Another load's clean-up now leaves it alone.
          expect(removeStaleLoadCopies(dir)).toEqual([]);
        },
      });
      expect([r.rowsRead, r.rowsLoaded]).toEqual([3, 3]);
    } finally {
      store.close();
    }
    expect(seen).toEqual([expect.stringMatching(/^\.cb\.csv\.cbp-load-\d+-\d+$/), expect.stringMatching(/^\.cb\.csv\.cbp-load-\d+-\d+\.lock$/)]);
    expect(modes).toEqual([0o600]);
    expect(copiesIn(dir)).toEqual([]);
    expect(tmpCopies()).toEqual(before);
  });

  it('left by a load killed mid-way (kill -9) is removed by the next load in that folder; others of no such name stay', async () => {
    const dir = tmpDir();
    const dbPath = path.join(dir, 'cbp.duckdb');
    const file = longRowFile(dir);
    const script = path.join(dir, 'child.mts');
    fs.writeFileSync(
      script,
      `import { openStore } from ${JSON.stringify(path.join(ROOT, 'store/db.ts'))};
import { loadReport } from ${JSON.stringify(path.join(ROOT, 'store/load.ts'))};
const store = await openStore({ dbPath: ${JSON.stringify(dbPath)} });
await loadReport(store, ${JSON.stringify(file)}, { kind: 'chargebacks', seenAt: '${SEEN}', beforeCommit: async () => {
  process.stdout.write('IN_TRANSACTION\\n');
  await new Promise((r) => setTimeout(r, 60000));
} });
`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const closed = new Promise((r) => child.once('close', r));
    let held: string[] = [];
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d) => {
        if (String(d).includes('IN_TRANSACTION')) {
          held = copiesIn(dir);
          // Held by the running load: not taken for a leftover.
          expect(removeStaleLoadCopies(dir)).toEqual([]);
          child.kill('SIGKILL');
          resolve();
        }
      });
      child.on('exit', (code, sig) => (sig === 'SIGKILL' ? resolve() : reject(new Error(`child ended before the kill: ${code} ${stderr}`))));
    });
    await closed;
    const copy = held.find((n) => !n.endsWith('.lock'))!;
    expect(held).toEqual([copy, `${copy}.lock`]);
    // What the killed load left: its copy (the report without its long row) and its lock file.
    expect(copiesIn(dir)).toEqual(held);
    expect(fs.statSync(path.join(dir, copy)).size).toBeGreaterThan(0);
    // A stranger's files of other names are left alone.
    const kept = ['.cb.csv.cbp-load-notes', 'cb.csv.cbp-load-1-2', '.cb.csv.cbp-load-1-2.bak'];
    for (const k of kept) fs.writeFileSync(path.join(dir, k), 'x');
    const store = await openTestStore({ dbPath });
    try {
      // Any load in that folder cleans up, a short one with no temp copy of its own too.
      const other = path.join(dir, 'small.csv');
      fs.writeFileSync(other, `${CHARGEBACK_COLUMNS.join(',')}\n${row('CB-9')}\n`);
      await loadReport(store, other, { kind: 'chargebacks', seenAt: SEEN });
      expect(copiesIn(dir)).toEqual(kept.filter((k) => k.includes('.cbp-load-')).sort());
      expect(fs.readdirSync(dir).filter((n) => kept.includes(n)).sort()).toEqual([...kept].sort());
      const r = await loadReport(store, file, { kind: 'chargebacks', seenAt: SEEN });
      expect([r.rowsRead, r.rowsLoaded]).toEqual([3, 3]);
    } finally {
      store.close();
    }
  });

  it('without a native lock, falls back to the pid rule: a live pid is left alone', () => {
    const dir = tmpDir();
    const gone = spawnSync(process.execPath, ['-e', '0']).pid as number;
    for (const f of [`.a.csv.cbp-load-${gone}-1`, `.a.csv.cbp-load-${process.ppid}-2`]) fs.writeFileSync(path.join(dir, f), 'x');
    expect(removeStaleLoadCopies(dir, { tryLock: null })).toEqual([`.a.csv.cbp-load-${gone}-1`]);
    expect(fs.readdirSync(dir)).toEqual([`.a.csv.cbp-load-${process.ppid}-2`]);
  });

  it('names are never shared: a second claim in the same millisecond gets another name, and release removes copy and lock', () => {
    const dir = tmpDir();
    const file = path.join(dir, 'r.json');
    const a = claimLoadCopy(file);
    const b = claimLoadCopy(file);
    expect(a.copy).not.toBe(b.copy);
    fs.writeFileSync(a.copy, 'x');
    a.release();
    b.release();
    expect(fs.readdirSync(dir)).toEqual([]);
  });
});
