/**
 * Ends a vitest run with one plain line, "N passed, N failed" (", N skipped"
 * when any), that CI systems reading only a closing line understand.
 */
import type { Reporter, RunnerTask, RunnerTestFile } from 'vitest';

export default class PlainSummaryReporter implements Reporter {
  onFinished(files: RunnerTestFile[] = []): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    const visit = (task: RunnerTask): void => {
      if (task.type === 'suite') {
        for (const child of task.tasks) visit(child);
        return;
      }
      const state = task.result?.state;
      if (state === 'pass') counts.passed++;
      else if (state === 'fail') counts.failed++;
      else counts.skipped++;
    };
    for (const file of files) for (const task of file.tasks) visit(task);
    const failedFiles = files.filter((file) => file.result?.state === 'fail' && file.tasks.length === 0).length;
    counts.failed += failedFiles; // a file that failed to load has no tests to count but must not pass unnoticed
    process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed${counts.skipped > 0 ? `, ${counts.skipped} skipped` : ''}\n`);
  }
}
