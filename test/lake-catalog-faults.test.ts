// The lake's catalog misbehaving (docs/lake.md "Under faults"), against a real PostgreSQL: a COMMIT whose answer was
// lost after PostgreSQL applied it, and a PostgreSQL that stops answering. cbp says so, with the code to act on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../store/db.ts';
import { cbp } from './activities-fixtures.ts';
import { lakeTitle, skipLake } from './helpers/postgres.ts';
import { backfill, lakeOf, newLake as lakeOn, startRig, stopRig, type Rig } from './helpers/lake-faults-rig.ts';
import { startCommitProxy } from './helpers/pg-commit-proxy.ts';

let rig: Rig;
const newLake = () => lakeOn(rig);

describe.skipIf(skipLake)(lakeTitle('the lake\'s catalog misbehaving'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    rig = await startRig();
  }, 180_000);
  afterAll(async () => {
    await stopRig(rig ?? {});
  });

  it('says a lake is damaged when a COMMIT answer was lost after PostgreSQL applied it (DuckLake removed its files): the step fails, the next reads name the file, nothing applied twice', async () => {
    const proxy = await startCommitProxy(rig.pg.port);
    try {
      const env = lakeOn(rig, proxy.port);
      expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
      proxy.arm(4);
      const first = await backfill(env);
      expect(proxy.cut, first.out.slice(-1500)).toBe(1);
      expect(first.code, first.out.slice(-1500)).toBe(1);
      // The step fails as the catalog stopped answering, or at the next read of what DuckLake removed (same run).
      expect(first.out).toMatch(/\[CBP_ERR_STORE_UNAVAILABLE\]|\[CBP_ERR_STORE_DAMAGED\]/);
      const again = await backfill(env);
      expect(again.code, again.out.slice(-1500)).toBe(1);
      expect(again.out).toMatch(/The lake lists a data file that is not there \(.*\.parquet\): a commit whose answer was lost.*\[CBP_ERR_STORE_DAMAGED\]/);
    } finally {
      await proxy.close();
    }
  });

  it('gives up a statement a frozen PostgreSQL never answers, saying so and what to do, and a command then exits 1 instead of waiting', async () => {
    const env = newLake();
    expect((await cbp(['db', 'migrate'], env)).code).toBe(0);
    const store = await openStore({ dbPath: 'lake', lake: { ...lakeOf(env), statementTimeout: 2 } });
    try {
      await store.all('SELECT count(*) FROM chargebacks');
      rig.pg.freeze(true);
      await expect(store.all('SELECT count(*) FROM chargebacks')).rejects.toThrow(
        /A statement on the lake waited 2 s without an answer from its catalog \(PostgreSQL, .*\): this step did not finish.*CBP_LAKE_STATEMENT_TIMEOUT/);
      // The CLI: started while the catalog is frozen, it fails and ends (exit 1 or 2) on its own, saying what to check
      // (the connection's wait shortened from cbp's default, as a user's connect_timeout does; lake-settings.test.ts checks cbp's).
      const started = Date.now();
      const r = await cbp(['alerts', 'evaluate'], { ...env, CBP_STORE: `${env.CBP_STORE} connect_timeout=2`, CBP_LAKE_STATEMENT_TIMEOUT: '2' });
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/PostgreSQL/);
      expect(Date.now() - started).toBeLessThan(60_000);
    } finally {
      rig.pg.freeze(false);
      store.close();
    }
    // Once it answers, the lake is whole and works.
    expect((await cbp(['alerts', 'evaluate'], env)).code).toBe(0);
  });

});
