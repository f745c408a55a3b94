import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/sequencer.ts';

// forks: DuckDB's and Temporal's native bridges have crashed under worker threads. A fork runs file after file
// (isolate: false): each file's import of DuckDB and the modules would otherwise be paid again.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A temp folder per run, checked empty at the end; every test file removes the folders it made. One demo
    // for the files that read a demo's output.
    globalSetup: ['./test/helpers/global-tmp.ts', './test/helpers/shared-demo.ts'],
    setupFiles: ['./test/helpers/setup.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    sequence: { sequencer: LongestFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
});
