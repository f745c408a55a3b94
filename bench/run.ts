// npm run bench [-- NAME...]: runs every bench/*.bench.ts (or those whose name contains a NAME), one after
// another in this process's children so each one's peak RSS is its own. Each prints ratios measured side
// by side in the same run; nothing here is a pass/fail wall-clock limit.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => filters.length === 0 || filters.some((n) => f.includes(n)))
  .sort();
if (files.length === 0) {
  console.log(filters.length ? `no benchmark matches ${filters.join(', ')}` : 'no benchmarks yet');
}
let failed = 0;
for (const f of files) {
  console.log(`\n=== ${f} ===`);
  const r = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', path.join(dir, f)], { stdio: 'inherit' });
  if (r.status !== 0) { failed++; console.log(`${f} failed (exit ${r.status})`); }
}
process.exitCode = failed ? 1 : 0;
