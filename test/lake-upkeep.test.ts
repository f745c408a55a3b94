// `cbp db maintain` beside the lake's other users (docs/lake.md "Upkeep"): a store open for a whole life (as `cbp
// worker` holds one), readers that each open the lake afresh (as `cbp sql` does), a writer committing small steps,
// and upkeep at its shortest accepted settings, round after round. No process fails, every read is whole; a read of
// many statements reads one snapshot (store/analyst.ts onOneSnapshot).
import { writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import path from 'node:path';
import pgClient from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR, openStore, type Store } from '../store/db.ts';
import { onOneSnapshot, openLakeAnalystSession } from '../store/analyst.ts';
import { evaluateAlerts } from '../alerts/engine.ts';
import { loadRules } from '../rules/thresholds.ts';
import { streamRatiosJson } from '../store/ratios-stream.ts';
import { newLake } from './helpers/lake-stores.ts';
import { insertStats } from './ratios-fixtures.ts';
import { readMigrations } from '../store/migrate.ts';
import { maintainStore } from '../store/lake-maintain.ts';
import { STATS_INDEX } from '../store/lake.ts';
import { recordRun } from '../store/runs.ts';
import { lakeTitle, skipLake, startPostgres, type Postgres } from './helpers/postgres.ts';
import { tempDir } from './helpers/tmp.ts';
import { createLogger, log, setLogger } from '../lib/log.ts';

const ROUNDS = Number(process.env.CBP_UPKEEP_ROUNDS ?? 10);
const SEEDS = 40;
const BATCH = 12;
/** New lakes two hosts open at once. */
const HOST_TRIALS = Number(process.env.CBP_HOST_TRIALS ?? 5);
let pg: Postgres;

const run = (id: string) => ({ runId: id, workflow: 'ingest', status: 'ok' as const, startedAt: new Date().toISOString(), finishedAt: new Date().toISOString(), summary: {} });
const pgRows = async (db: string, sql: string) => {
  const c = new pgClient.Client({ host: '127.0.0.1', port: pg.port, user: 'cbp', database: db });
  await c.connect();
  try {
    return (await c.query(sql)).rows as Array<Record<string, unknown>>;
  } finally {
    await c.end();
  }
};
const seeds = async (s: Store) => (await s.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM runs WHERE run_id LIKE 'seed-%'"))[0]!.n;

describe.skipIf(skipLake)(lakeTitle('lake upkeep beside workers and readers'), { timeout: 600_000 }, () => {
  beforeAll(async () => {
    pg = await startPostgres();
  }, 60_000);
  afterAll(async () => {
    await pg?.stop();
  });

  it('lets two hosts open a new lake at once, every time: one makes the schema in one commit, the other finds it; a reader finds all of it or none', async () => {
    for (let trial = 0; trial < HOST_TRIALS; trial++) {
      pg.createDb(`hosts_${trial}`);
      const lake = { catalog: pg.dsn(`hosts_${trial}`), dataPath: tempDir('cbp-lake-data-') };
      const reads: string[] = [];
      const read = openLakeAnalystSession(lake).then((r) => r.all<{ n: number }>('SELECT count(*)::INTEGER AS n FROM mart_ratios').finally(() => r.close()).then(() => 'whole'),
        (e: Error) => (/has no schema yet: run `cbp db migrate`/.test(e.message) ? 'none' : e.message));
      const [a, b] = await Promise.all([openStore({ dbPath: 'lake', lake }), openStore({ dbPath: 'lake', lake })]);
      reads.push(await read);
      try {
        expect(a.migration!.applied.length + b.migration!.applied.length).toBe(readMigrations(DEFAULT_MIGRATIONS_DIR).length);
        expect(b.migration!.skippedViews).toEqual([]);
        expect(a.migration!.skippedViews).toEqual([]);
      } finally {
        a.close();
        b.close();
      }
      expect(['whole', 'none'], reads[0]).toContain(reads[0]);
      if (trial === 0) {
        // The schema is one commit after the lake's own first snapshot, its views in it; a reopen commits nothing.
        (await openStore({ dbPath: 'lake', lake })).close();
        const snapshots = await pgRows(`hosts_${trial}`, 'SELECT snapshot_id, changes_made FROM ducklake_snapshot_changes ORDER BY snapshot_id');
        expect(snapshots.map((r) => Number(r.snapshot_id))).toEqual([0, 1]);
        for (const made of ['created_table:"main"."schema_migrations"', 'created_view:"main"."mart_ratios"']) expect(String(snapshots[1]!.changes_made)).toContain(made);
        // The catalog's file statistics are indexed by table and column; a lake made before it gets it at its next upkeep.
        const index = () => pgRows(`hosts_${trial}`, `SELECT indexdef FROM pg_indexes WHERE indexname = '${STATS_INDEX}'`).then((r) => r.map((x) => String(x.indexdef)));
        expect(await index()).toEqual([expect.stringMatching(/ON public\.ducklake_file_column_stats USING btree \(table_id, column_id\)$/)]);
        await pgRows(`hosts_${trial}`, `DROP INDEX ${STATS_INDEX}`);
        const upkeep = await openStore({ dbPath: 'lake', lake });
        try {
          expect(await index()).toEqual([]);
          await maintainStore(upkeep);
        } finally {
          upkeep.close();
        }
        expect(await index()).toHaveLength(1);
      }
    }
  });

  it("runs upkeep as a catalog role that does not own DuckLake's tables: no index, and a warning gives the owner the statement", async () => {
    pg.createDb('not_owner');
    const lake = { catalog: pg.dsn('not_owner'), dataPath: tempDir('cbp-lake-data-') };
    (await openStore({ dbPath: 'lake', lake })).close();
    await pgRows('not_owner', `DROP INDEX ${STATS_INDEX}; CREATE ROLE cbp_worker LOGIN; GRANT ALL ON ALL TABLES IN SCHEMA public TO cbp_worker;
      GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO cbp_worker; GRANT USAGE, CREATE ON SCHEMA public TO cbp_worker`);
    const [warned, before] = [[] as string[], log()];
    setLogger(createLogger({ level: 'warn', destination: new Writable({ write(c, _e, cb) { warned.push(String(c)); cb(); } }) }));
    try {
      const worker = await openStore({ dbPath: 'lake', lake: { ...lake, catalog: `${lake.catalog} user=cbp_worker` } });
      try {
        await maintainStore(worker);
      } finally {
        worker.close();
      }
    } finally {
      setLogger(before);
    }
    expect(await pgRows('not_owner', `SELECT 1 FROM pg_indexes WHERE indexname = '${STATS_INDEX}'`)).toEqual([]);
    expect(warned.join('')).toContain(`the catalog tables' owner can run: CREATE INDEX IF NOT EXISTS ${STATS_INDEX} ON public.ducklake_file_column_stats (table_id, column_id)`);
  });

  it('takes a new lake piece by piece when a view of its files fails: the migrations in one commit, the view named', async () => {
    pg.createDb('bad_view');
    const viewsDir = tempDir('cbp-views-');
    writeFileSync(path.join(viewsDir, '10_ok.sql'), 'CREATE OR REPLACE VIEW v_ok AS SELECT count(*) AS n FROM runs;\n');
    writeFileSync(path.join(viewsDir, '20_bad.sql'), 'CREATE OR REPLACE VIEW v_bad AS SELECT no_such_column FROM runs;\n');
    const s = await openStore({ dbPath: 'lake', lake: { catalog: pg.dsn('bad_view'), dataPath: tempDir('cbp-lake-data-') }, viewsDir });
    try {
      expect(s.migration!.applied.length).toBe(readMigrations(DEFAULT_MIGRATIONS_DIR).length);
      expect(s.migration!.views).toContain('v_ok');
      expect(s.migration!.skippedViews).toEqual([{ file: '20_bad.sql', statement: 1, reason: expect.any(String) }]);
    } finally {
      s.close();
    }
    // The migrations still one commit: a reader finds every table or none.
    const made = await pgRows('bad_view', 'SELECT changes_made FROM ducklake_snapshot_changes ORDER BY snapshot_id');
    expect(made.filter((r) => /created_table:"main"\."(?!schema_views")/.test(String(r.changes_made)))).toHaveLength(1);
  });

  it('`cbp ratios --json` reads every month from the snapshot its first read saw, though a writer commits meanwhile', async () => {
    const lake = newLake(pg);
    const writer = await openStore({ dbPath: 'lake', lake });
    let reader: Store | undefined;
    try {
      await insertStats(writer, ['2026-01', '2026-02', '2026-03'].flatMap((month) =>
        ['m1', 'm2'].map((mid) => ({ mid, network: 'mastercard' as const, month, cb: 30, tx: 10_000, cbReport: false }))));
      await evaluateAlerts(writer, { asOf: '2026-04-05T00:00:00Z', rules: loadRules() });
      const stream = async (oneSnapshot: boolean) => {
        reader = await openLakeAnalystSession(lake, { ownStatementsOnly: true }); // as cbp ratios --json opens it
        const lines: string[] = [];
        let wrote = false;
        // After the first month's rows are out, a writer empties the last month.
        const write = async (text: string) => {
          lines.push(text);
          if (!wrote && text.includes('"2026-01"')) {
            wrote = true;
            await writer.transaction((s) => s.run("DELETE FROM ratio_mart WHERE month = '2026-03'"));
          }
        };
        const read = () => streamRatiosJson(reader!, { scope: 'all' }, write, { ownSession: true });
        await (oneSnapshot ? onOneSnapshot(reader, read) : read());
        reader.close();
        reader = undefined;
        return (JSON.parse(lines.join('')) as Array<{ month: string }>).map((r) => r.month);
      };
      const months = await stream(true);
      expect(new Set(months)).toEqual(new Set(['2026-01', '2026-02', '2026-03']));
      // The same read statement by statement: the later month is gone from it (what onOneSnapshot guards against).
      await writer.transaction((s) => s.run('DELETE FROM ratio_mart_state'));
      await evaluateAlerts(writer, { asOf: '2026-04-05T00:00:00Z', rules: loadRules() });
      expect(await stream(false)).not.toContain('2026-03');
    } finally {
      reader?.close();
      writer.close();
    }
  });

  it(`keeps every process working and every read whole while upkeep runs ${ROUNDS} times beside them`, async () => {
    pg.createDb('upkeep');
    const lake = { catalog: pg.dsn('upkeep'), dataPath: tempDir('cbp-lake-data-') };
    const open = (readOnly = false) => openStore({ dbPath: 'lake', lake, readOnly, migrate: !readOnly });
    // The long-lived store writes the seed rows in small commits (each its own few rows, as a worker's steps are).
    const worker = await open();
    const failures: string[] = [];
    let written = 0;
    let merged = 0;
    try {
      for (let i = 0; i < SEEDS; i++) await recordRun(worker, run(`seed-${i}`));
      expect(await seeds(worker)).toBe(SEEDS);
      for (let round = 0; round < ROUNDS; round++) {
        let busy = true;
        const writer = (async () => {
          // A step's commit of a dozen rows: a Parquet file of its own for upkeep to merge.
          for (; busy; written += BATCH) {
            await worker.transaction((s) => s.run(`INSERT INTO runs (run_id, workflow, status, started_at, finished_at, summary)
              SELECT 'w-' || ($1 + i), 'ingest', 'ok', now()::TIMESTAMP, now()::TIMESTAMP, '{}' FROM range(${BATCH}) t(i)`, [written]))
              .catch((e) => failures.push(`worker write: ${(e as Error).message}`));
          }
        })();
        const reader = (async () => {
          while (busy) {
            const r = await open(true);
            try {
              const n = await seeds(r);
              if (n !== SEEDS) failures.push(`reader read ${n} seed rows of ${SEEDS}`);
            } catch (e) {
              failures.push(`reader: ${(e as Error).message}`);
            } finally {
              r.close();
            }
            await new Promise((res) => setTimeout(res, 50));
          }
        })();
        const upkeep = await open();
        try {
          merged += (await maintainStore(upkeep, { keepDays: 0, graceHours: 1 })).mergedFiles;
        } catch (e) {
          failures.push(`upkeep: ${(e as Error).message}`);
        } finally {
          upkeep.close();
          busy = false;
          await Promise.all([writer, reader]);
        }
        // The long-lived store reads and writes on after upkeep.
        try {
          const n = await seeds(worker);
          if (n !== SEEDS) failures.push(`worker read ${n} seed rows of ${SEEDS}`);
        } catch (e) {
          failures.push(`worker read: ${(e as Error).message}`);
        }
        if (failures.length) break;
      }
      expect(failures.slice(0, 5)).toEqual([]);
      // Upkeep had the writer's files to merge while it committed more.
      expect(merged).toBeGreaterThan(0);
      const [{ n }] = await worker.all<{ n: number }>("SELECT count(*)::INTEGER AS n FROM runs WHERE run_id LIKE 'w-%'");
      expect(n).toBe(written);
    } finally {
      worker.close();
    }
  });
  // Last: it stops this suite's PostgreSQL.
  it('says the catalog stopped answering, with the code an operator acts on, when PostgreSQL goes away mid-run', async () => {
    pg.createDb('gone');
    const lake = { catalog: pg.dsn('gone'), dataPath: tempDir('cbp-lake-data-') };
    const s = await openStore({ dbPath: 'lake', lake });
    try {
      await recordRun(s, run('before'));
      await pg.stop();
      const e = await recordRun(s, run('after')).then(() => null, (x: Error & { code?: string }) => x);
      expect(e?.code).toBe('CBP_ERR_STORE_UNAVAILABLE');
      expect(e?.message).toMatch(/^The lake's catalog \(PostgreSQL, ducklake:postgres:dbname=gone .*\) stopped answering .*Connection refused.*run the command again/);
    } finally {
      s.close();
    }
  });
});
