#!/usr/bin/env node
// node scripts/record-histories.mjs — rewrites the replay fixtures in test/fixtures/histories/ from real runs:
// the test files that record them (RECORDERS), with CBP_RECORD_HISTORIES=1 against a dev server (`npm run
// temporal:install` and `npm run lake:install` first) or TEMPORAL_ADDRESS. The old fixtures are removed first, so a history no run records any more goes.
// Then run test/temporal-replay-recorded.test.ts and commit the folder (docs/orchestration.md, "Tests").
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dir = path.join(root, 'test', 'fixtures', 'histories');
const keep = path.join(root, 'test', 'fixtures', `histories.previous-${process.pid}`);

const RECORDERS = ['test/temporal-server-real.test.ts', 'test/temporal-worker-stop.test.ts', 'test/lake-workers.test.ts', 'test/digest-mail.test.ts'];

if (fs.existsSync(dir)) fs.renameSync(dir, keep);
fs.mkdirSync(dir, { recursive: true });
const r = spawnSync(process.execPath, [path.join(root, 'node_modules', 'vitest', 'vitest.mjs'), 'run', ...RECORDERS], {
  cwd: root,
  stdio: 'inherit',
  env: { ...process.env, CBP_RECORD_HISTORIES: '1', CBP_REQUIRE_TEMPORAL: '1', CBP_REQUIRE_LAKE: '1' },
});
if (r.status !== 0) {
  // The runs failed: put the fixtures back as they were.
  fs.rmSync(dir, { recursive: true, force: true });
  if (fs.existsSync(keep)) fs.renameSync(keep, dir);
  process.stderr.write('record-histories: the real-server suite failed; the fixtures are unchanged\n');
  process.exit(r.status ?? 1);
}
fs.rmSync(keep, { recursive: true, force: true });
process.stdout.write(`record-histories: ${fs.readdirSync(dir).filter((f) => f.endsWith('.json')).length} histories in ${path.relative(root, dir)}\n`);
