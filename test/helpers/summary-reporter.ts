// Prints one plain closing line, "N passed, N failed, N skipped", that any CI log reader understands.
import type { Reporter } from 'vitest/reporters';

type Task = { type: string; mode?: string; result?: { state?: string }; tasks?: Task[] };

export default class SummaryReporter implements Reporter {
  onFinished(files: Task[] = []): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const walk = (t: Task): void => {
      if (t.tasks) t.tasks.forEach(walk);
      if (t.type !== 'test') return;
      const state = t.result?.state;
      if (state === 'pass') passed++;
      else if (state === 'fail') failed++;
      else if (t.mode === 'skip' || t.mode === 'todo' || state === 'skip') skipped++;
    };
    files.forEach(walk);
    // A file that failed to load has no tests but a failed result.
    failed += files.filter((f) => f.result?.state === 'fail' && !(f.tasks ?? []).length).length;
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
