/**
 * A test that does not run as written fails the run: jest, with the reporters of this project's
 * jest.config.js (what `npm test` runs), is run as a child process on test files of a temporary
 * directory. One test skipped, focused, left to do or expected to fail makes it exit 1 naming that
 * test; the same files written plainly exit 0.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NODE, REPO_ROOT } from '../support/repo';

// The project's own configuration: the reporters `npm test` runs with.
const projectConfig = require(join(REPO_ROOT, 'jest.config.js')) as { reporters: (string | [string, unknown])[] };

const JEST = join(REPO_ROOT, 'node_modules/jest/bin/jest.js');

/** Each way a test can be weakened: a test file, and what the failing run says about it. */
const WEAKENED: Record<string, { source: string; said: RegExp }> = {
  'skip.test.js': { source: "test('runs', () => {});\ntest.skip('is skipped', () => {});\n", said: /skip\.test\.js: "is skipped" pending/ },
  'xit.test.js': { source: "test('runs', () => {});\nxit('is skipped too', () => {});\n", said: /xit\.test\.js: "is skipped too" pending/ },
  'describe-skip.test.js': { source: "describe.skip('a group', () => { test('inside', () => {}); });\ntest('runs', () => {});\n", said: /describe-skip\.test\.js: "a group inside" pending/ },
  'todo.test.js': { source: "test('runs', () => {});\ntest.todo('is left to do');\n", said: /todo\.test\.js: "is left to do" todo/ },
  'only-beside.test.js': { source: "test.only('is focused', () => {});\ntest('is left out', () => {});\n", said: /only-beside\.test\.js: "is left out" pending/ },
  // Every test focused leaves nothing out today; the source says it all the same.
  'only-all.test.js': { source: "test.only('is focused', () => {});\ndescribe('x', () => { it.only('as well', () => {}); });\n", said: /only-all\.test\.js:1: test\.only[\s\S]*only-all\.test\.js:2: it\.only/ },
  'failing.test.js': { source: "test.failing('passes by failing', () => { throw new Error('x'); });\n", said: /failing\.test\.js: "passes by failing" expected to fail/ },
};

/** Plain tests, and the words of the modifiers where they are no code: in strings and comments. */
const PLAIN = "// test.skip and test.only in a comment are words\ntest('mentions test.only(...) in a string', () => { expect('it.skip').toBe('it.skip'); });\n";

function jestOn(files: Record<string, string>): { status: number | null; output: string } {
  const directory = mkdtempSync(join(tmpdir(), 'drainguard-strictness-'));
  try {
    for (const [name, source] of Object.entries(files)) writeFileSync(join(directory, name), source);
    const reporters = projectConfig.reporters.map((reporter) => (typeof reporter === 'string' ? reporter.replace('<rootDir>', REPO_ROOT) : reporter));
    const config = { rootDir: directory, testMatch: ['**/*.test.js'], transform: {}, testEnvironment: 'node', reporters, cacheDirectory: join(directory, '.cache') };
    const result = spawnSync(NODE, [JEST, '--config', JSON.stringify(config), '--ci', '--watchman=false'], { cwd: directory, encoding: 'utf8', env: { PATH: process.env.PATH ?? '' } });
    return { status: result.status, output: `${result.stdout}${result.stderr}` };
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

test('the project runs its tests with the reporter that enforces this', () => {
  expect(projectConfig.reporters).toContain('<rootDir>/test/support/summary-reporter.js');
});

test('a skipped, focused, todo or failing test anywhere fails the run, and the run says which', () => {
  const run = jestOn(Object.fromEntries(Object.entries(WEAKENED).map(([name, { source }]) => [name, source])));
  expect(run.status).toBe(1);
  expect(run.output).toContain('tests that do not run as written');
  for (const [name, { said }] of Object.entries(WEAKENED)) expect({ name, said: said.test(run.output) }).toEqual({ name, said: true });
}, 120_000);

test('the same tests written plainly pass, even where strings and comments name the modifiers', () => {
  const run = jestOn({ 'plain.test.js': PLAIN, 'more.test.js': "describe('a group', () => { test('inside', () => {}); });\n" });
  expect(run.output).not.toContain('tests that do not run as written');
  expect(run.output).toMatch(/tests: 2 passed, 0 failed, 0 skipped/);
  expect(run.status).toBe(0);
}, 120_000);

test('one skipped test among many is enough', () => {
  const run = jestOn({ 'plain.test.js': PLAIN, 'skip.test.js': WEAKENED['skip.test.js']!.source });
  expect(run.status).toBe(1);
  expect(run.output).toMatch(WEAKENED['skip.test.js']!.said);
}, 120_000);
