// Runs the longest test files first, so that the two forks finish together: vitest's own record of the last run's
// durations where it has one, else test/helpers/durations.json (a fresh clone has no record; vitest would order by size).
// The files that read the run's demo start after the first few, by when the demo has ended (test/helpers/shared-demo.ts).
import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { READERS } from './shared-demo.ts';

/** Files run before any that reads the demo: about the demo's own time on two busy cores. */
const AFTER = 4;
const KNOWN: Record<string, number> = JSON.parse(fs.readFileSync(new URL('./durations.json', import.meta.url), 'utf8'));

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = (f: TestSpecification): number => {
      const rel = path.relative(root, f.moduleId);
      const last = this.ctx.cache.getFileTestResults(`${f.project.name}:${rel}`);
      if (last && !last.failed) return last.duration / 1000;
      return KNOWN[path.basename(rel)] ?? fs.statSync(f.moduleId).size / 2000;
    };
    const failed = (f: TestSpecification) => this.ctx.cache.getFileTestResults(`${f.project.name}:${path.relative(root, f.moduleId)}`)?.failed === true;
    const sorted = [...files].sort((a, b) => Number(failed(b)) - Number(failed(a)) || seconds(b) - seconds(a));
    const reads = (f: TestSpecification) => READERS.includes(path.relative(root, f.moduleId));
    const first = sorted.filter((f) => !reads(f)).slice(0, AFTER);
    return [...first, ...sorted.filter((f) => !first.includes(f))];
  }
}
