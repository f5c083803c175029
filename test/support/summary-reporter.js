/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after jest's own summary:
 * the form CI tooling reads in any language (jest's "Tests: N passed, N total" is not that form).
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}

module.exports = SummaryReporter;
