#!/usr/bin/env node
// Runs the TypeScript CLI directly through tsx, so `npx cbp` works right after `npm ci` with no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../cli/index.ts');
await main(process.argv);
