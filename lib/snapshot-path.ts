// Where the snapshot may not be. Publishing writes a full copy of the store beside the snapshot path and
// renames it onto that path, which replaces whatever file the path names without a word. So the snapshot
// path must not name the store (the rename would put the copy in place of the open store, and every later
// write would go to the unlinked file and be lost), the store's write-ahead log, another file cbp is told
// about (thresholds, TLS files, the config file), nor lie in a folder whose files cbp keeps one by one (the
// journal: acknowledged events waiting for ingest; landing: reports as received).
import * as fs from 'node:fs';
import path from 'node:path';

/**
 * The path with every existing part resolved through symlinks (realpath of its longest existing ancestor,
 * the rest appended), so two spellings of one place compare equal before the file exists.
 */
export function canonicalPath(p: string): string {
  const abs = path.resolve(p);
  const rest: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      return path.join(fs.realpathSync.native(cur), ...rest.reverse());
    } catch {
      const up = path.dirname(cur);
      if (up === cur) return abs;
      rest.push(path.basename(cur));
      cur = up;
    }
  }
}

function statOrNull(p: string): fs.BigIntStats | null {
  try {
    // bigint: an inode number may be past 2^53.
    return fs.statSync(p, { bigint: true });
  } catch {
    return null;
  }
}

/** Whether the two paths name one file: the same place, or (both existing) the same device and inode (a hard link). */
export function sameFilePath(a: string, b: string): boolean {
  if (canonicalPath(a) === canonicalPath(b)) return true;
  const sa = statOrNull(a);
  const sb = statOrNull(b);
  return sa !== null && sb !== null && sa.dev === sb.dev && sa.ino === sb.ino;
}

/** Whether `p` is the folder `dir` or lies anywhere under it. */
export function insidePath(p: string, dir: string): boolean {
  const rel = path.relative(canonicalPath(dir), canonicalPath(p));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

export interface SnapshotPlace {
  /** The snapshot path and how the user named it (a setting, e.g. `CBP_SNAPSHOT_PATH`). */
  snapshot: { path: string; name: string };
  /** The store: the snapshot may not be it nor its write-ahead log (`.wal`). */
  store?: { path: string; name: string };
  /** Other files the snapshot may not be. */
  files?: Array<{ path: string; name: string }>;
  /** Folders the snapshot may not lie in. */
  dirs?: Array<{ path: string; name: string }>;
}

/** What is wrong with the snapshot's place, one sentence per problem (empty when nothing). */
export function snapshotPathProblems(place: SnapshotPlace): string[] {
  const snap = place.snapshot;
  const out: string[] = [];
  const store = place.store;
  const files = [
    ...(store ? [{ ...store, isStore: true }, { path: `${store.path}.wal`, name: `${store.name}'s write-ahead log`, isStore: true }] : []),
    ...(place.files ?? []).map((f) => ({ ...f, isStore: false })),
  ];
  for (const f of files) {
    if (!sameFilePath(snap.path, f.path)) continue;
    out.push(
      `${snap.name} (${snap.path}) and ${f.name} (${f.path}) are the same file: publishing the snapshot would replace it` +
        (f.isStore
          ? ` with a copy, and every later write to the store would be lost. Give ${snap.name} a file of its own (unset, it is <CBP_DATA_DIR>/published/cbp.duckdb)`
          : `. Give ${snap.name} a file of its own`),
    );
  }
  for (const d of place.dirs ?? []) {
    if (!insidePath(snap.path, d.path)) continue;
    out.push(
      `${snap.name} (${snap.path}) lies in ${d.name} (${d.path}), whose files cbp keeps one by one: publishing could replace one of them. ` +
        `Put the snapshot elsewhere (unset, it is <CBP_DATA_DIR>/published/cbp.duckdb)`,
    );
  }
  return out;
}
