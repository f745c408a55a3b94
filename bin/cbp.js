#!/usr/bin/env node
// The cbp command: the compiled CLI in dist/, which `npm ci` / `npm install` build (the `prepare` script runs
// `npm run build`). From the sources without building, use bin/cbp-dev.js.
let cli;
try {
  cli = await import('../dist/cli/index.js');
} catch (e) {
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' || !String(e.message).includes('dist/cli/index.js')) throw e;
  process.stderr.write('cbp: not built (dist/cli/index.js is missing): run `npm run build` in the cbp folder (npm ci does it too)\n');
  process.exit(1);
}
await cli.main(process.argv);
