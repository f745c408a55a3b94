// The lake under faults (docs/lake.md "Under faults"), against a real PostgreSQL and the lake's data folder: the
// catalog crashing mid-backfill (cbp killed at random moments of its writes: lake-kill.test.ts). After it, a re-run
// completes and every committed row is there exactly once, as in an undisturbed run on a DuckDB file.
import { describe, expect, it } from 'vitest';
import { admin, cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { backfill, dumpLake, newLake, parquetsIn, useRig } from './helpers/lake-faults-rig.ts';

describe.skipIf(skipLake)(lakeTitle('the lake under faults'), { timeout: 600_000 }, () => {
  const { rig: rigOf, undisturbed } = useRig();
  it('fails a backfill with a clear error and exit 1 when PostgreSQL crashes mid-run; once it is back, a re-run completes with every row once', async () => {
    const rig = rigOf();
    const env = newLake(rig);
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
    expect(await dumpLake(env)).toEqual(undisturbed());
  });
});
