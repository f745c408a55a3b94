// A new store at a path, from a template: an empty store migrated once per run (kept in the run's temp folder,
// test/helpers/global-tmp.ts) and copied, in place of migrating every new test store from nothing. The copy gets
// a store id of its own; openStore then finds it current (a template of older code would be migrated as any store).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { DEFAULT_MIGRATIONS_DIR, openStore, type Store, type StoreOptions } from '../../store/db.ts';
import { readMigrations } from '../../store/migrate.ts';
import { runCachePath } from './global-tmp.ts';

let template: Promise<string | undefined> | undefined;

/**
 * The run's template (keyed by the migrations' text: a watch run's edited migration makes a new one), or undefined
 * outside a run's temp folder: then stores are migrated from nothing, as before.
 */
function templatePath(): Promise<string | undefined> {
  template ??= (async () => {
    const key = createHash('sha256').update(readMigrations(DEFAULT_MIGRATIONS_DIR).map((m) => m.checksum).join()).digest('hex').slice(0, 12);
    const file = runCachePath(`store-template-${key}.duckdb`);
    if (!file || fs.existsSync(file)) return file;
    const making = path.join(path.dirname(file), `making-${process.pid}`, 'cbp.duckdb');
    (await openStore({ dbPath: making })).close();
    fs.renameSync(making, file);
    fs.rmSync(path.dirname(making), { recursive: true, force: true });
    return file;
  })();
  return template;
}

/** Puts a new, migrated store at dbPath (which must not exist), with a store id of its own; nothing outside a run. */
export async function seedStore(dbPath: string): Promise<void> {
  if (fs.existsSync(dbPath)) throw new Error(`seedStore: ${dbPath} exists`);
  const from = await templatePath();
  if (!from) return;
  fs.mkdirSync(path.dirname(dbPath), { recursive: true });
  fs.copyFileSync(from, dbPath);
  const db = await DuckDBInstance.create(dbPath);
  const c = await db.connect();
  try {
    await c.run('UPDATE store_generation SET store_id = gen_random_uuid()::VARCHAR');
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/**
 * openStore, with a new store file (the default migrations and views, writable) seeded from the template first. A store
 * given a memory limit has the machine's threads, as in use: the suite's one thread (test/helpers/setup.ts) needs less memory.
 */
export async function openTestStore(opts: StoreOptions): Promise<Store> {
  const seeds = opts.dbPath !== ':memory:' && !opts.lake && !opts.readOnly && opts.migrate !== false && !opts.migrationsDir && !opts.viewsDir;
  if (seeds && !fs.existsSync(opts.dbPath)) await seedStore(opts.dbPath);
  return openStore(opts.memoryLimit && !opts.threads ? { ...opts, threads: os.availableParallelism() } : opts);
}
