// The lake under faults (docs/lake.md "Under faults"), against a real PostgreSQL and the lake's data folder: cbp killed
// (kill -9) at random moments of its writes (the catalog crashing: lake-faults.test.ts). After the trials, a re-run
// completes and every committed row is there exactly once, as in an undisturbed run on a DuckDB file.
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { admin, cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { backfill, dumpLake, ENTRY, lakeOf, newLake, useRig } from './helpers/lake-faults-rig.ts';

const TRIALS = Number(process.env.CBP_KILL_TRIALS ?? 10);

describe.skipIf(skipLake)(lakeTitle('the lake under kill -9'), { timeout: 600_000 }, () => {
  const { rig: rigOf, undisturbed } = useRig();

  it(`keeps every committed row once when cbp is killed (kill -9) at random moments of its writes, ${TRIALS} times; upkeep then removes the orphaned files and nothing else`, async () => {
    const rig = rigOf();
    const env = newLake(rig);
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
    expect(await dumpLake(env)).toEqual(undisturbed());
    // Nothing else runs: no grace needed. Only files no snapshot lists go; every file the lake lists is still there.
    const s = await openStore({ dbPath: 'lake', lake: lakeOf(env), migrate: false });
    try {
      await maintainStore(s, { keepDays: 7, graceHours: 0 });
      const listed = await s.all<{ path: string }>("SELECT data_file AS path FROM ducklake_list_files('lake', 'chargebacks')");
      for (const f of listed) expect(fs.existsSync(f.path), f.path).toBe(true);
    } finally {
      s.close();
    }
    expect(await dumpLake(env)).toEqual(undisturbed());
  });
});

