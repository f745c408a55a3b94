// The published snapshot: a consistent, read-only copy of the store for analysts. The writer copies the
// whole database into a temp file beside the snapshot and renames it into place, which is atomic on one
// file system: a reader sees the old copy or the new one, never a half-finished load, and since readers
// open only the copy they never hold the writer's lock.
//
// The copy carries the store's id and generation (store/generation.ts). publishIfBehind leaves the snapshot
// alone only when it holds this store's id at this store's generation, so every run's publish step (even
// one that wrote nothing) repairs a snapshot a killed run left behind, or one of a store since started over;
// and every publish removes the temp copies killed publishes left beside the snapshot (a full copy of the
// store each). A publish holds an OS file lock beside its temp copy (lib/file-lock.ts) for as long as the
// copy exists, so "is someone still writing this?" never depends on a pid that may have been reused.
import { existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../lib/errors.ts';
import { removeUnlockedCopies, tryHoldFile, type TryLock } from '../lib/file-lock.ts';
import { snapshotPathProblems } from '../lib/snapshot-path.ts';
import { openStore, type Store } from './db.ts';
import { sameVersion, storeVersion, type StoreVersion } from './generation.ts';
import { openSnapshotSession, type AnalystSessionOptions } from './analyst.ts';

export interface SnapshotResult {
  path: string;
  bytes: number;
  /** When this call published it; for a snapshot left as it was, when it was last published (file time). */
  publishedAt: string;
  /** The store generation the snapshot holds; null when the store has no generation counter. */
  generation: number | null;
  /** The id of the store the snapshot is a copy of (migration 011); null for a store without one. */
  storeId: string | null;
  /** False when publishIfBehind found the snapshot current and left it. */
  published: boolean;
  /** Temp copies of killed publishes removed by this call (file names). */
  removedTemps: string[];
  /** The store is a lake: nothing is copied, analysts read its latest committed snapshot (path: the lake). */
  lake?: boolean;
}

/** A lake publishes nothing: every commit is a snapshot analysts read in place (docs/lake.md). */
async function lakeResult(store: Store): Promise<SnapshotResult> {
  // Its writers take turns instead of raising a generation (store/lake-lock.ts): the id alone names it.
  const v = await storeVersion(store); // (on a lake it gives null ids for a lake it cannot read)
  return { path: store.dbPath, bytes: 0, publishedAt: iso(new Date()), ...v, generation: null, published: false, removedTemps: [], lake: true };
}

const ALIAS = 'cbp_snapshot_out';
const CHECK_ALIAS = 'cbp_snapshot_check';
const iso = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
const sqlText = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Temp copies this process is writing right now: never taken for leftovers. */
const inFlight = new Set<string>();

/**
 * `<snapshot>.tmp-<pid>-<ms>`, its `.wal` and its `.lock`: the names publishSnapshot gives its temp copy and
 * the lock it holds while the copy exists.
 */
function tempPattern(target: string): RegExp {
  const base = path.basename(target).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^(${base}\\.tmp-(\\d+)-(\\d+))(\\.wal|\\.lock)?$`);
}

/**
 * Removes the temp copies a killed publish left beside the snapshot: only names of publishSnapshot's own
 * pattern, and of those only the ones no publish is writing. A publish holds the lock `<temp>.lock` while its
 * copy exists, so a copy whose lock can be taken is a leftover, whatever its pid (the kernel dropped the lock
 * when its holder died; a pid may since belong to another process). Where there is no native lock the pid
 * rule stands in: a live pid is left alone, unless it is this process's and not in flight. Returns the
 * names removed (the lock files taken for the check are not listed).
 */
export function removeStaleTemps(snapshotPath: string, opts: { tryLock?: TryLock | null } = {}): string[] {
  const target = path.resolve(snapshotPath);
  return removeUnlockedCopies(path.dirname(target), tempPattern(target), inFlight, opts.tryLock);
}

/** What a snapshot file holds: whether it exists, and the id and generation of the store it copies. */
export type SnapshotVersion = { exists: boolean } & StoreVersion;

const UNKNOWN: StoreVersion = { storeId: null, generation: null };

/**
 * The store id and generation the snapshot at `snapshotPath` holds, read through `store` (attached read-only for the
 * moment): `exists` false when there is none; `generation` (and `storeId`) null when it cannot be read or
 * has none.
 */
export async function snapshotGeneration(store: Store, snapshotPath: string): Promise<SnapshotVersion> {
  const target = path.resolve(snapshotPath);
  if (!existsSync(target)) return { exists: false, ...UNKNOWN };
  try {
    await store.run(`ATTACH ${sqlText(target)} AS ${CHECK_ALIAS} (READ_ONLY)`);
  } catch {
    return { exists: true, ...UNKNOWN };
  }
  try {
    return { exists: true, ...(await storeVersion(store, CHECK_ALIAS)) };
  } catch {
    return { exists: true, ...UNKNOWN };
  } finally {
    await store.run(`DETACH ${CHECK_ALIAS}`).catch(() => undefined);
  }
}

/**
 * The generation the snapshot file holds, read through an instance of its own (read-only, closed at once):
 * for readers whose session may not ATTACH (`cbp status`). Same answers as snapshotGeneration.
 */
export async function snapshotFileGeneration(snapshotPath: string): Promise<SnapshotVersion> {
  const target = path.resolve(snapshotPath);
  if (!existsSync(target)) return { exists: false, ...UNKNOWN };
  let snap: Store;
  try {
    snap = await openStore({ dbPath: target, readOnly: true, migrate: false });
  } catch {
    return { exists: true, ...UNKNOWN };
  }
  try {
    return { exists: true, ...(await storeVersion(snap)) };
  } catch {
    return { exists: true, ...UNKNOWN };
  } finally {
    snap.close();
  }
}

/**
 * Refuses (ConfigError, nothing written) a snapshot path that names the store or its write-ahead log: the
 * rename would put the copy in place of the open store, and every later write would go to the unlinked
 * file. Configuration load refuses it too (lib/config.ts), with the journal and landing folders; this is
 * the last guard for callers that bring their own paths.
 */
function refuseStorePath(store: Store, target: string): void {
  if (store.dbPath === ':memory:') return;
  const problems = snapshotPathProblems({ snapshot: { path: target, name: 'the snapshot path' }, store: { path: path.resolve(store.dbPath), name: 'the store' } });
  if (problems.length) throw new ConfigError(problems);
}

/** A name no other publish uses, whose lock this process holds (held by another: a name of the same millisecond). */
function claimTemp(target: string): { tmp: string; release: () => void } {
  for (let n = 0; ; n++) {
    const tmp = `${target}.tmp-${process.pid}-${Date.now() + n}`;
    if (inFlight.has(tmp) || existsSync(tmp)) continue;
    const release = tryHoldFile(`${tmp}.lock`);
    if (release === null) continue;
    inFlight.add(tmp);
    return {
      tmp,
      release: () => {
        inFlight.delete(tmp);
        release?.();
      },
    };
  }
}

/** Call after a committed write (never inside a transaction: COPY FROM DATABASE reads committed data). */
export async function publishSnapshot(store: Store, opts: { snapshotPath: string }): Promise<SnapshotResult> {
  if (store.lake) return lakeResult(store);
  const target = path.resolve(opts.snapshotPath);
  refuseStorePath(store, target);
  mkdirSync(path.dirname(target), { recursive: true });
  const removedTemps = removeStaleTemps(target);
  const [{ db }] = await store.all<{ db: string }>('SELECT current_database() AS db');
  let version: StoreVersion = UNKNOWN;
  // The lock beside the temp copy is held from before the copy exists until after it is gone.
  const { tmp, release } = claimTemp(target);
  try {
    await store.run(`ATTACH ${sqlText(tmp)} AS ${ALIAS}`);
    try {
      await store.run(`COPY FROM DATABASE "${db.replace(/"/g, '""')}" TO ${ALIAS}`);
      // What the copy holds, read from the copy itself.
      version = await storeVersion(store, ALIAS);
    } finally {
      await store.run(`DETACH ${ALIAS}`);
    }
    renameSync(tmp, target);
  } finally {
    rmSync(tmp, { force: true });
    rmSync(`${tmp}.wal`, { force: true });
    release();
  }
  return { path: target, bytes: statSync(target).size, publishedAt: iso(new Date()), ...version, published: true, removedTemps };
}

/**
 * The publish step of every run: leaves the snapshot alone only when it holds this store's id at this
 * store's generation (sameVersion), and publishes otherwise: missing, unreadable, older, a copy of a store
 * since started over (whose generation counts from 1 again), or of this store before a backup was put back.
 * Temp copies of killed publishes are removed either way.
 */
export async function publishIfBehind(store: Store, opts: { snapshotPath: string }): Promise<SnapshotResult> {
  if (store.lake) return lakeResult(store);
  const target = path.resolve(opts.snapshotPath);
  refuseStorePath(store, target);
  const removedTemps = removeStaleTemps(target);
  const current = await storeVersion(store);
  const snap = await snapshotGeneration(store, target);
  if (snap.exists && sameVersion(current, snap)) {
    const st = statSync(target);
    return { path: target, bytes: st.size, publishedAt: iso(st.mtime), generation: snap.generation, storeId: snap.storeId, published: false, removedTemps };
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
