/**
 * `npm run build` (src/build-dist.mjs) on a copy of the sources: nothing done when nothing changed (so
 * `npm start` after `npm ci` does not compile again), only what changed otherwise, and never a stale
 * output left behind: a stale dist/drain-contract.js would shadow the folder dist/drain-contract/.
 */
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { NODE, REPO_ROOT } from '../../support/repo';
import { temporaryDirectory } from '../server/webhook-test-kit';

const copy = temporaryDirectory();
const path = (name: string) => join(copy.path, name);

beforeAll(() => {
  for (const name of ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'package-lock.json']) cpSync(join(REPO_ROOT, name), path(name), { recursive: true });
  symlinkSync(join(REPO_ROOT, 'node_modules'), path('node_modules'));
});
afterAll(() => copy.remove());

function build(): { status: number | null; stderr: string } {
  const result = spawnSync(NODE, [path('src/build-dist.mjs')], { cwd: copy.path, encoding: 'utf8' });
  return { status: result.status, stderr: result.stderr };
}

test('a first build, then nothing to do; an edit is compiled, a removed source loses its output, a stale file goes', () => {
  const first = build();
  expect(first).toEqual({ status: 0, stderr: '' });
  expect(statSync(path('dist/cli/main.js')).mode & 0o111).not.toBe(0);
  const mainBuilt = statSync(path('dist/cli/main.js')).mtimeMs;

  expect(build()).toEqual({ status: 0, stderr: 'dist/ is up to date\n' });
  expect(statSync(path('dist/cli/main.js')).mtimeMs).toBe(mainBuilt);

  writeFileSync(path('src/added.ts'), 'export const ADDED = 1;\n');
  expect(build()).toEqual({ status: 0, stderr: '' });
  expect(readFileSync(path('dist/added.js'), 'utf8')).toContain('exports.ADDED = 1');

  // What a rebase that turned a file into a folder leaves: the old output beside the new folder.
  rmSync(path('src/added.ts'));
  writeFileSync(path('dist/drain-contract.js'), 'module.exports = "stale";\n');
  mkdirSync(path('dist/envoy-shutdown/linux-amd64'), { recursive: true });
  writeFileSync(path('dist/envoy-shutdown/linux-amd64/keep.js'), '');
  const after = build();
  expect(after.status).toBe(0);
  const removed = after.stderr.split('\n').filter(Boolean);
  expect(removed).toHaveLength(3);
  expect(removed).toEqual(expect.arrayContaining([
    'removed dist/added.js: its source is gone',
    'removed dist/added.js.map: its source is gone',
    'removed dist/drain-contract.js: its source is gone',
  ]));
  expect(existsSync(path('dist/drain-contract/index.js'))).toBe(true);
  // Another build's folder is not tsc's to clean.
  expect(existsSync(path('dist/envoy-shutdown/linux-amd64/keep.js'))).toBe(true);
  expect(spawnSync(NODE, [path('dist/cli/main.js'), '--version'], { encoding: 'utf8' }).stdout).toMatch(/^drainguard \d/);
});

test('dist/ deleted: everything is compiled again (the kept build info does not claim otherwise)', () => {
  rmSync(path('dist'), { recursive: true, force: true });
  expect(build()).toEqual({ status: 0, stderr: '' });
  expect(existsSync(path('dist/cli/main.js'))).toBe(true);
  expect(existsSync(path('dist/server/decision-worker.js'))).toBe(true);
});
