// The published snapshot: a consistent, read-only copy of the store for analysts. The writer copies the
// whole database into a temp file beside the snapshot and renames it into place, which is atomic on one
// file system: a reader sees the old copy or the new one, never a half-finished load, and since readers
// open only the copy they never hold the writer's lock.
//
// The copy carries the store's generation (store/generation.ts). publishIfBehind publishes only when the
// snapshot's generation is older than the store's, so every run's publish step (even one that wrote nothing)
// repairs a snapshot a killed run left behind; and every publish removes the temp copies killed publishes
// left beside the snapshot (a full copy of the store each).
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { openStore, type Store } from './db.ts';
import { attachedGeneration, storeGeneration } from './generation.ts';
import { openSnapshotSession, type AnalystSessionOptions } from './analyst.ts';

export interface SnapshotResult {
  path: string;
  bytes: number;
  /** When this call published it; for a snapshot left as it was, when it was last published (file time). */
  publishedAt: string;
  /** The store generation the snapshot holds; null when the store has no generation counter. */
  generation: number | null;
  /** False when publishIfBehind found the snapshot current and left it. */
  published: boolean;
  /** Temp copies of killed publishes removed by this call (file names). */
  removedTemps: string[];
}

const ALIAS = 'cbp_snapshot_out';
const CHECK_ALIAS = 'cbp_snapshot_check';
const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const sqlText = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Temp copies this process is writing right now: never taken for leftovers. */
const inFlight = new Set<string>();

/** `<snapshot>.tmp-<pid>-<ms>` and its `.wal`: the one name publishSnapshot gives its temp copy. */
function tempPattern(target: string): RegExp {
  const base = path.basename(target).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${base}\\.tmp-(\\d+)-(\\d+)(\\.wal)?$`);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists, under another user.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes the temp copies a killed publish left beside the snapshot: only names of publishSnapshot's own
 * pattern, and of those only the ones whose process is gone (a live process may be publishing right now) or
 * this process's own that are not in flight. Returns the names removed.
 */
export function removeStaleTemps(snapshotPath: string): string[] {
  const target = path.resolve(snapshotPath);
  const dir = path.dirname(target);
  if (!existsSync(dir)) return [];
  const re = tempPattern(target);
  const removed: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const m = re.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    const file = path.join(dir, name);
    if (inFlight.has(file.replace(/\.wal$/, ''))) continue;
    if (pid !== process.pid && processAlive(pid)) continue;
    rmSync(file, { force: true });
    removed.push(name);
  }
  return removed;
}

/**
 * The generation the snapshot at `snapshotPath` holds, read through `store` (attached read-only for the
 * moment): `exists` false when there is none; `generation` null when it cannot be read or has no counter.
 */
export async function snapshotGeneration(store: Store, snapshotPath: string): Promise<{ exists: boolean; generation: number | null }> {
  const target = path.resolve(snapshotPath);
  if (!existsSync(target)) return { exists: false, generation: null };
  try {
    await store.run(`ATTACH ${sqlText(target)} AS ${CHECK_ALIAS} (READ_ONLY)`);
  } catch {
    return { exists: true, generation: null };
  }
  try {
    return { exists: true, generation: await attachedGeneration(store, CHECK_ALIAS) };
  } catch {
    return { exists: true, generation: null };
  } finally {
    await store.run(`DETACH ${CHECK_ALIAS}`).catch(() => undefined);
  }
}

/**
 * The generation the snapshot file holds, read through an instance of its own (read-only, closed at once):
 * for readers whose session may not ATTACH (`cbp status`). Same answers as snapshotGeneration.
 */
export async function snapshotFileGeneration(snapshotPath: string): Promise<{ exists: boolean; generation: number | null }> {
  const target = path.resolve(snapshotPath);
  if (!existsSync(target)) return { exists: false, generation: null };
  let snap: Store;
  try {
    snap = await openStore({ dbPath: target, readOnly: true, migrate: false });
  } catch {
    return { exists: true, generation: null };
  }
  try {
    return { exists: true, generation: await storeGeneration(snap) };
  } catch {
    return { exists: true, generation: null };
  } finally {
    snap.close();
  }
}

/** Call after a committed write (never inside a transaction: COPY FROM DATABASE reads committed data). */
export async function publishSnapshot(store: Store, opts: { snapshotPath: string }): Promise<SnapshotResult> {
  const target = path.resolve(opts.snapshotPath);
  mkdirSync(path.dirname(target), { recursive: true });
  const removedTemps = removeStaleTemps(target);
  const tmp = `${target}.tmp-${process.pid}-${Date.now()}`;
  const [{ db }] = await store.all<{ db: string }>('SELECT current_database() AS db');
  let generation: number | null = null;
  inFlight.add(tmp);
  try {
    await store.run(`ATTACH ${sqlText(tmp)} AS ${ALIAS}`);
    try {
      await store.run(`COPY FROM DATABASE "${db.replace(/"/g, '""')}" TO ${ALIAS}`);
      // What the copy holds, read from the copy itself.
      generation = await attachedGeneration(store, ALIAS);
    } finally {
      await store.run(`DETACH ${ALIAS}`);
    }
    renameSync(tmp, target);
  } finally {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}.wal`, { force: true });
    inFlight.delete(tmp);
  }
  return { path: target, bytes: statSync(target).size, publishedAt: iso(new Date()), generation, published: true, removedTemps };
}

/**
 * The publish step of every run: publishes when the snapshot is missing, unreadable, or older than the
 * store (its generation below the store's), and leaves a current one alone. Temp copies of killed publishes
 * are removed either way.
 */
export async function publishIfBehind(store: Store, opts: { snapshotPath: string }): Promise<SnapshotResult> {
  const target = path.resolve(opts.snapshotPath);
  const removedTemps = removeStaleTemps(target);
  const current = await storeGeneration(store);
  const snap = await snapshotGeneration(store, target);
  if (current !== null && snap.generation !== null && snap.generation >= current) {
    const st = statSync(target);
    return { path: target, bytes: st.size, publishedAt: iso(st.mtime), generation: snap.generation, published: false, removedTemps };
  }
  const r = await publishSnapshot(store, opts);
  return { ...r, removedTemps: [...removedTemps, ...r.removedTemps] };
}

/**
 * Opens the snapshot for reading, as every analyst session opens (store/analyst.ts: read-only, no file or
 * network access, configuration locked); a clear error when none has been published yet.
 */
export async function openSnapshot(snapshotPath: string, opts: AnalystSessionOptions & { workingStore?: string } = {}): Promise<Store> {
  return openSnapshotSession(snapshotPath, opts);
}
