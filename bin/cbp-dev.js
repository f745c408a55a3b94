#!/usr/bin/env node
// cbp from the TypeScript sources through tsx, no build step: what the tests spawn, so they always run the
// code as it is in the working tree. Slower to start than bin/cbp.js (tsx compiles on the fly); tsx is a
// development dependency.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/index.ts');
await main(process.argv);
