// Test files in an order that keeps both test processes busy to the end: the long ones (servers, lakes, demos) first,
// then the rest as vitest orders them. A clean clone has no timings, and ran a 6-minute file last, beside nothing.
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** The longest files (minutes each on 2 cores, from a full run's timings), in the order they start. */
export const LONG_FIRST = [
  'temporal-server-real.test.ts',
  'lake.test.ts',
  'lake-demo.test.ts',
  'lake-workers.test.ts',
  'demo-temporal.test.ts',
  'store-load-long.test.ts',
  'report-browser.test.ts',
  'db-backup.test.ts',
];

export default class LongFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification) => {
      const i = LONG_FIRST.indexOf(path.basename(f.moduleId));
      return i < 0 ? LONG_FIRST.length : i;
    };
    return sorted.map((f, i) => ({ f, i })).sort((a, b) => rank(a.f) - rank(b.f) || a.i - b.i).map(({ f }) => f);
  }
}
