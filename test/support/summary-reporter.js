/**
 * Prints one plain closing line, `tests: N passed, N failed, N skipped`, after jest's own summary:
 * the form CI tooling reads in any language (jest's "Tests: N passed, N total" is not that form).
 *
 * And fails the run (jest exits 1) when a test did not run as written, so that no test can be
 * weakened quietly: one skipped (`.skip`, `xit`, or left out because another in its file is focused),
 * left to do (`.todo`), expected to fail (`.failing`), or a test file that focuses (`.only`, `fit`,
 * `fdescribe`) or skips in its source, even where that leaves nothing out today (every test of the
 * file focused). The source is read with TypeScript's parser, so the words inside strings and comments
 * do not count. A run that selects tests by name (`-t`) skips the others on purpose: only the source
 * is checked then. test/unit/test-strictness.test.ts runs jest on such files and sees it fail.
 */
const { readFileSync } = require('node:fs');
const { relative } = require('node:path');
const ts = require('typescript');

/** Runtime statuses of a test that did not run as written. */
const NOT_RUN = new Set(['pending', 'skipped', 'todo', 'disabled', 'focused']);
/** Modifiers of test, it and describe that skip, focus or invert tests. */
const MODIFIERS = new Set(['only', 'skip', 'todo', 'failing']);
const ROOTS = new Set(['test', 'it', 'describe']);
/** jest's one-word forms of focus and skip. */
const SHORTHANDS = new Set(['fit', 'fdescribe', 'xit', 'xtest', 'xdescribe']);

/** `test.only`, `describe.skip.each`, `it.concurrent.only`, `fit`: `file:line: text` of each use in the source. */
function weakeningsInSource(path) {
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    let word;
    if (ts.isPropertyAccessExpression(node) && MODIFIERS.has(node.name.text)) {
      let root = node.expression;
      while (ts.isPropertyAccessExpression(root)) root = root.expression;
      if (ts.isIdentifier(root) && ROOTS.has(root.text)) word = node.getText(source);
    } else if (ts.isIdentifier(node) && SHORTHANDS.has(node.text) && ts.isCallExpression(node.parent) && node.parent.expression === node) {
      word = node.text;
    }
    if (word !== undefined) found.push(`${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${word}`);
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
    // `-t PATTERN` leaves the other tests out on purpose.
    this.selectsByName = Boolean(globalConfig.testNamePattern);
    this.error = undefined;
  }

  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    process.stdout.write(`tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped\n`);

    const weakened = [];
    for (const file of results.testResults) {
      const name = relative(this.rootDir, file.testFilePath);
      for (const test of file.testResults) {
        if (NOT_RUN.has(test.status) && !(this.selectsByName && test.status === 'pending')) weakened.push(`${name}: "${test.fullName}" ${test.status}`);
        else if (test.failing) weakened.push(`${name}: "${test.fullName}" expected to fail (.failing)`);
      }
      for (const use of weakeningsInSource(file.testFilePath)) weakened.push(`${name}:${use}`);
    }
    if (weakened.length === 0) return;
    const message = `tests that do not run as written (skipped, focused, todo or failing), which fail the run:\n${weakened.map((line) => `  ${line}`).join('\n')}\n`;
    process.stdout.write(message);
    this.error = new Error(message);
  }

  getLastError() {
    return this.error;
  }
}

module.exports = SummaryReporter;
