// `node --import ./import-trace.mjs ...`: records every module the process imports in the file named by
// CBP_TEST_IMPORT_TRACE (one URL a line). See import-trace.ts.
import { register } from 'node:module';

register(new URL('./import-trace-hooks.mjs', import.meta.url), { data: { file: process.env.CBP_TEST_IMPORT_TRACE } });
