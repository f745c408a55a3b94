// The lake under faults (docs/lake.md "Under faults"), against a real PostgreSQL and the lake's data folder: the
// catalog crashing mid-backfill, and cbp killed at random moments of its writes. After each, a re-run completes and
// every committed row is there exactly once, as in an undisturbed run on a DuckDB file.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sandboxEnv } from '../cli/sandbox-env.ts';
import { openStore } from '../store/db.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { admin, cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { backfill, dump, dumpLake, ENTRY, lakeOf, newLake as lakeOn, parquetsIn, RANGE, startRig, stopRig, type Rig } from './helpers/lake-faults-rig.ts';
import { tempDir } from './helpers/tmp.ts';

const TRIALS = Number(process.env.CBP_KILL_TRIALS ?? 10);

let rig: Rig;
let undisturbed: Record<string, string[]>;
const newLake = () => lakeOn(rig);

describe.skipIf(skipLake)(lakeTitle('the lake under faults'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    rig = await startRig();
    const dir = tempDir('cbp-file-');
    const r = await cbp(['run', 'backfill', ...RANGE], sandboxEnv(rig.sb, dir));
    expect(r.code, r.stderr).toBe(0);
    undisturbed = await dump({ dbPath: path.join(dir, 'cbp.duckdb') });
    expect(undisturbed.chargebacks!.length).toBeGreaterThan(5);
  }, 180_000);
  afterAll(async () => {
    await stopRig(rig ?? {});
  });

  it('fails a backfill with a clear error and exit 1 when PostgreSQL crashes mid-run; once it is back, a re-run completes with every row once', async () => {
    const env = newLake();
    expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
    // Slow downloads, so the crash falls among the windows' loads.
    await admin(rig.sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 700 } } });
    let crashed: Promise<void> | undefined;
    // Mid-run: once the backfill has written a data file of its own (a slow machine may take seconds to open), and
    // then a while, so that the crash falls in a slow download rather than on that file's commit.
    const parquets = () => parquetsIn(env);
    const migrated = parquets();
    const run = backfill(env);
    try {
      for (let i = 0; parquets() <= migrated && i < 1200; i++) await new Promise((r) => setTimeout(r, 50));
      expect(parquets(), 'the backfill wrote no data file to crash after').toBeGreaterThan(migrated);
      await new Promise((r) => setTimeout(r, 350));
      crashed = rig.pg.crash();
      const r = await run;
      expect(r.code, r.out.slice(-2000)).toBe(1);
      expect(r.out).toMatch(/The lake's catalog \(PostgreSQL, .*\) stopped answering( \(.*\))?: this step did not finish.*run the command again.*\[CBP_ERR_STORE_UNAVAILABLE\]/);
    } finally {
      await crashed;
      await admin(rig.sb, 'POST', '/faults', {});
      await rig.pg.start();
    }
    const again = await backfill(env);
    expect(again.code, again.out.slice(-2000)).toBe(0);
    expect(await dumpLake(env)).toEqual(undisturbed);
  });

  it(`keeps every committed row once when cbp is killed (kill -9) at random moments of its writes, ${TRIALS} times; upkeep then removes the orphaned files and nothing else`, async () => {
    const env = newLake();
    expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
    await admin(rig.sb, 'POST', '/faults', { routes: { 'POST /reporting/chargebacks': { latencyMs: 150 } } });
    let killed = 0;
    try {
      for (let t = 0; t < TRIALS; t++) {
        // Past start-up, among the loads (a run that found every window done may end first).
        const r = await backfill(env, { afterMs: (ENTRY.endsWith('cbp.js') ? 600 : 1800) + Math.random() * 3000 });
        expect(r.code === 0 || r.signal === 'SIGKILL', r.out.slice(-2000)).toBe(true);
        if (r.signal === 'SIGKILL') killed++;
      }
    } finally {
      await admin(rig.sb, 'POST', '/faults', {});
    }
    expect(killed, 'no run was killed').toBeGreaterThan(0);
    const done = await backfill(env);
    expect(done.code, done.out.slice(-2000)).toBe(0);
    expect(await dumpLake(env)).toEqual(undisturbed);
    // Nothing else runs: no grace needed. Only files no snapshot lists go; every file the lake lists is still there.
    const s = await openStore({ dbPath: 'lake', lake: lakeOf(env), migrate: false });
    try {
      await maintainStore(s, { keepDays: 7, graceHours: 0 });
      const listed = await s.all<{ path: string }>("SELECT data_file AS path FROM ducklake_list_files('lake', 'chargebacks')");
      for (const f of listed) expect(fs.existsSync(f.path), f.path).toBe(true);
    } finally {
      s.close();
    }
    expect(await dumpLake(env)).toEqual(undisturbed);
  });
});

