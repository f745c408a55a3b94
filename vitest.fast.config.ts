// `npm run test:fast`: the inner loop, the unit and store tests. Left out: the slow files (those test/helpers/durations.json
// lists) and every file that runs the CLI or starts a process or a server (the sandbox, the receiver, Temporal,
// PostgreSQL, a browser). `npm test` runs them all.
import fs from 'node:fs';
import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.ts';

const slow = new Set(Object.keys(JSON.parse(fs.readFileSync(new URL('./test/helpers/durations.json', import.meta.url), 'utf8'))));
const STARTS = /\bsandbox\(|SMTPServer\(|startWithReceiver\(|spawn(Sync)?\(|execFile|Worker\.create\(|\bcbp\(\[|runCbp\(|cbpHere\(|startSandbox\(|startReceiver\(|createServer\(|startPostgres\(|startTemporalEnv\(|useTemporalEnv\(|runDemo\(/;
const left = fs.readdirSync(new URL('./test/', import.meta.url)).filter((f) => f.endsWith('.test.ts'))
  .filter((f) => slow.has(f) || STARTS.test(fs.readFileSync(new URL(`./test/${f}`, import.meta.url), 'utf8')));

const fast = mergeConfig(base, defineConfig({
  test: { exclude: ['node_modules/**', ...left.map((f) => `test/${f}`)] },
}));
// The temp folder's check only: no file here reads the shared demo.
fast.test.globalSetup = ['./test/helpers/global-tmp.ts'];
export default fast;
