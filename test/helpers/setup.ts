// Runs in every test file: removes the temp folders the file made through test/helpers/tmp.ts. Stores get one DuckDB
// thread, in this process and the cbp it spawns (the suite runs two files at once on two cores).
import { afterAll } from 'vitest';
import { setStoreThreads } from '../../store/threads.ts';
import { TEST_STORE_THREADS } from './cbp-cli.ts';
import { removeTempDirs } from './tmp.ts';

process.env.CBP_STORE_THREADS = TEST_STORE_THREADS;
setStoreThreads(Number(TEST_STORE_THREADS));

afterAll(() => removeTempDirs());
