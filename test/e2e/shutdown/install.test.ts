/** `envoy-shutdown install --to DIR` as the installer init container runs it (docs/design.md, "Installing the program"). */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BUILT_DIR, BUILT_EXECUTABLE, ensureBuilt, installTo } from '../../support/envoy/shutdown-executable';

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
let workDir: string;

beforeAll(async () => {
  await ensureBuilt();
  workDir = mkdtempSync(join(tmpdir(), 'envoy-shutdown-install-'));
  chmodSync(workDir, 0o755);
}, 120_000);
afterAll(() => rmSync(workDir, { recursive: true, force: true }));

/** Every file of the build, relative to its directory. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]));
}

test('copies the program and everything beside it, executable, and is idempotent', () => {
  const target = join(workDir, 'config/drainguard');
  installTo(target);
  const first = statSync(join(target, 'envoy-shutdown'));
  installTo(target);
  expect(filesUnder(target).sort()).toEqual(filesUnder(BUILT_DIR).sort()); // no temporary files left behind
  const installed = join(target, 'envoy-shutdown');
  expect(statSync(installed).mode & 0o777).toBe(0o755);
  expect(statSync(installed).size).toBe(first.size);
  expect(readFileSync(installed).equals(readFileSync(BUILT_EXECUTABLE))).toBe(true);
  // The installed copy is itself complete: it can install again, and run.
  expect(spawnSync(installed, ['install', '--to', join(workDir, 'again')]).status).toBe(0);
  expect(spawnSync(join(workDir, 'again/envoy-shutdown'), ['version'], { encoding: 'utf8' }).stdout).toMatch(/^envoy-shutdown \d/);
});

test('a target that is not a directory fails clearly with exit 1', () => {
  const file = join(workDir, 'a-file');
  writeFileSync(file, '');
  const result = spawnSync(BUILT_EXECUTABLE, ['install', '--to', join(file, 'sub')], { encoding: 'utf8' });
  expect(result.status).toBe(1);
  expect(result.stderr).toMatch(/envoy-shutdown install: cannot create .*ENOTDIR/);
});

test('a directory the user cannot write fails clearly with exit 1', () => {
  // Running the installer as another user needs root (as in CI); never skipped.
  if (!isRoot) throw new Error('this test needs root to run the installer as uid 65534');
  const program = installTo(join(workDir, 'nobody-can-run'));
  const readOnly = join(workDir, 'root-owned');
  mkdirSync(readOnly, { mode: 0o755 });
  const result = spawnSync(program, ['install', '--to', join(readOnly, 'drainguard')], { uid: NOBODY, gid: NOBODY, encoding: 'utf8' });
  expect(result.status).toBe(1);
  expect(result.stderr).toMatch(/envoy-shutdown install: cannot create .*EACCES/);
});

test('usage errors exit 2', () => {
  expect(spawnSync(BUILT_EXECUTABLE, ['install']).status).toBe(2);
  expect(spawnSync(BUILT_EXECUTABLE, ['install', '--to']).status).toBe(2);
});
