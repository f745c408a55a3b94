// A new store at a path, from a template: an empty store migrated once per run (kept in the run's temp folder,
// test/helpers/global-tmp.ts) and copied, in place of migrating every new test store from nothing. The copy gets
// a store id of its own; openStore then finds it current (a template of older code would be migrated as any store).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { openStore, type Store, type StoreOptions } from '../../store/db.ts';
import { RUN_CACHE, RUN_PREFIX } from './global-tmp.ts';

let template: Promise<string> | undefined;

/** The template's path: the run's, else one of this process's (removed at its exit). */
function templatePath(): Promise<string> {
  template ??= (async () => {
    const base = os.tmpdir();
    const shared = path.basename(base).startsWith(RUN_PREFIX);
    const dir = shared ? path.join(base, RUN_CACHE) : fs.mkdtempSync(path.join(base, 'cbp-store-template-'));
    if (!shared) process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'store-template.duckdb');
    if (fs.existsSync(file)) return file;
    fs.mkdirSync(dir, { recursive: true });
    const making = path.join(dir, `making-${process.pid}`, 'cbp.duckdb');
    (await openStore({ dbPath: making })).close();
    fs.renameSync(making, file);
    fs.rmSync(path.dirname(making), { recursive: true, force: true });
    return file;
  })();
  return template;
}

/** Puts a new, migrated store at dbPath (which must not exist), with a store id of its own. */
export async function seedStore(dbPath: string): Promise<void> {
  if (fs.existsSync(dbPath)) throw new Error(`seedStore: ${dbPath} exists`);
  fs.mkdirSync(path.dirname(dbPath), { recursive: true });
  fs.copyFileSync(await templatePath(), dbPath);
  const db = await DuckDBInstance.create(dbPath);
  const c = await db.connect();
  try {
    await c.run('UPDATE store_generation SET store_id = gen_random_uuid()::VARCHAR');
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** openStore, with a new store file (the default migrations and views, writable) seeded from the template first. */
export async function openTestStore(opts: StoreOptions): Promise<Store> {
  const seeds = opts.dbPath !== ':memory:' && !opts.lake && !opts.readOnly && opts.migrate !== false && !opts.migrationsDir && !opts.viewsDir;
  if (seeds && !fs.existsSync(opts.dbPath)) await seedStore(opts.dbPath);
  return openStore(opts);
}
