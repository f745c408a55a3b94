// The demo's data folder: the demo wipes it at start, so it may only ever wipe a folder that an earlier demo
// created. It writes a marker file first thing in a folder it creates; any other non-empty folder is refused,
// and so is any folder that holds (or is) the store, snapshot or journal cbp is configured to use.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { UsageError } from '../lib/errors.ts';

/** The file that says "cbp demo made this folder and may wipe it". */
export const DEMO_MARKER = '.cbp-demo';

function within(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Makes `dataDir` an empty demo folder carrying the marker, or throws a UsageError (exit 2) and touches
 * nothing. `configured` are the paths of the configured store (data dir, DuckDB file, snapshot, journal):
 * the demo never wipes a folder that holds one of them, marker or not.
 */
export function prepareDemoDir(dataDir: string, configured: Array<{ name: string; path: string }>, now = new Date()): string {
  const dir = path.resolve(dataDir);
  for (const c of configured) {
    const p = path.resolve(c.path);
    if (within(p, dir)) {
      throw new UsageError(
        `cbp demo refuses --data-dir ${dataDir}: it holds the configured ${c.name} (${c.path}), and the demo wipes its folder at start. ` +
          'Give the demo a folder of its own (the default is data/demo), or point the setting elsewhere.',
      );
    }
  }
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw new UsageError(`cbp demo refuses --data-dir ${dataDir}: it is a file, not a folder. Give the demo a new or empty folder.`);
    const entries = readdirSync(dir);
    if (entries.length > 0 && !entries.includes(DEMO_MARKER)) {
      throw new UsageError(
        `cbp demo refuses --data-dir ${dataDir}: the folder is not empty and was not created by cbp demo (it has no ${DEMO_MARKER} marker), ` +
          'and the demo wipes its folder at start. Give the demo a new or empty folder (the default is data/demo).',
      );
    }
    // Ours (marked) or empty: emptied, the folder itself kept.
    for (const e of entries) rmSync(path.join(dir, e), { recursive: true, force: true });
  } else {
    mkdirSync(dir, { recursive: true });
  }
  // Written before anything else goes in, so a demo killed half-way leaves a folder the next demo may wipe.
  writeFileSync(
    path.join(dir, DEMO_MARKER),
    `This folder was created by \`cbp demo\` on ${now.toISOString().replace(/\.\d{3}Z$/, 'Z')}; the next \`cbp demo --data-dir\` here wipes it.\n`,
  );
  return dir;
}
