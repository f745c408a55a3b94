// What the lake test files share: new lakes on the file's PostgreSQL, a store opened for one call, the views of a
// store, and a copy of the run's demo on a file with its rows as dumpStore gives them.
import path from 'node:path';
import { openStore, type Store } from '../../store/db.ts';
import type { LakeOptions } from '../../store/lake.ts';
import { storeVersion } from '../../store/generation.ts';
import type { Postgres } from './postgres.ts';
import { copyDemo } from './shared-demo.ts';
import { dumpStore } from './store-dump.ts';
import { tempDir } from './tmp.ts';

let n = 0;
/** A new, empty lake: its own database and data folder. */
export function newLake(pg: Postgres): LakeOptions & { store: string } {
  const db = `lake_${++n}`;
  pg.createDb(db);
  return { catalog: pg.dsn(db), dataPath: tempDir('cbp-lake-data-'), store: `ducklake:postgres:${pg.dsn(db)}` };
}

export async function withStore<T>(o: Parameters<typeof openStore>[0], fn: (s: Store) => Promise<T>): Promise<T> {
  const s = await openStore(o);
  try {
    return await fn(s);
  } finally {
    s.close();
  }
}

export const viewsOf = async (s: Store) =>
  (await s.all<{ v: string }>("SELECT view_name AS v FROM duckdb_views() WHERE NOT internal AND schema_name = 'main' AND database_name = current_database() ORDER BY 1")).map((r) => r.v);

export interface FileDemo {
  dataDir: string; dbPath: string; snapshotPath: string;
  views: string[]; rows: Record<string, string[]>; version: Awaited<ReturnType<typeof storeVersion>>;
}

/** A copy of the run's demo (test/helpers/shared-demo.ts) on a file: its folder, views, every row and its version. */
export async function fileDemo(): Promise<FileDemo> {
  const dataDir = path.join(tempDir(), 'demo');
  await copyDemo(dataDir);
  const dbPath = path.join(dataDir, 'cbp.duckdb');
  return withStore({ dbPath, readOnly: true }, async (s) => {
    const views = await viewsOf(s);
    return { dataDir, dbPath, snapshotPath: path.join(dataDir, 'published', 'cbp.duckdb'), views, rows: await dumpStore(s, views), version: await storeVersion(s) };
  });
}
