// Runs in every test file: removes the temp folders the file made through test/helpers/tmp.ts.
import { afterAll } from 'vitest';
import { removeTempDirs } from './tmp.ts';

afterAll(() => removeTempDirs());
