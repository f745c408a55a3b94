// Temp folders of the tests: every one is made here and removed after its test file (test/helpers/setup.ts),
// whatever the test itself does, so a run leaves nothing behind in the system's temp folder.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const made: string[] = [];

/** A new folder under the temp folder, removed after the test file at the latest. */
export function tempDir(prefix = 'cbp-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}
