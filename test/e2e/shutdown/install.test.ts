/** `envoy-shutdown install --to DIR` as the installer init container runs it (docs/design.md, "Installing the program"), for each architecture. */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandFor, ensureBuilt, installTo, TARGETS, type ShutdownTarget } from '../../support/envoy/shutdown-executable';

const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;

/** Runs `program` (built for `target`) synchronously. */
function runSync(target: ShutdownTarget, program: string, args: string[], options: { uid?: number; gid?: number } = {}) {
  const [command, commandArgs] = commandFor(target, program, args);
  return spawnSync(command, commandArgs, { encoding: 'utf8', ...options });
}

describe.each(TARGETS)('$title', (target) => {
  let workDir: string;
  beforeAll(async () => {
    await ensureBuilt();
    workDir = mkdtempSync(join(tmpdir(), `envoy-shutdown-install-${target.arch}-`));
    chmodSync(workDir, 0o755);
  }, 120_000);
  afterAll(() => rmSync(workDir, { recursive: true, force: true }));

  test('copies the one static file, executable, and is idempotent', () => {
    const dir = join(workDir, 'config/drainguard');
    installTo(dir, target);
    const first = statSync(join(dir, 'envoy-shutdown'));
    installTo(dir, target);
    expect(readdirSync(dir)).toEqual(['envoy-shutdown']); // no temporary file left behind
    expect(readdirSync(target.builtDir)).toEqual(['envoy-shutdown']); // and nothing else ships
    const installed = join(dir, 'envoy-shutdown');
    expect(statSync(installed).mode & 0o777).toBe(0o755);
    expect(statSync(installed).size).toBe(first.size);
    expect(readFileSync(installed).equals(readFileSync(target.built))).toBe(true);
    // The installed copy is itself complete: it can install again, and run.
    expect(runSync(target, installed, ['install', '--to', join(workDir, 'again')]).status).toBe(0);
    expect(runSync(target, join(workDir, 'again/envoy-shutdown'), ['version']).stdout).toMatch(/^envoy-shutdown \d/);
  });

  test('a target that is not a directory fails clearly with exit 1', () => {
    const file = join(workDir, 'a-file');
    writeFileSync(file, '');
    const result = runSync(target, target.built, ['install', '--to', join(file, 'sub')]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/envoy-shutdown install: cannot create .*ENOTDIR/);
    const onFile = runSync(target, target.built, ['install', '--to', file]);
    expect(onFile.status).toBe(1);
    expect(onFile.stderr).toMatch(/envoy-shutdown install: cannot create .*ENOTDIR/);
  });

  test('a directory the user cannot write fails clearly with exit 1', () => {
    // Running the installer as another user needs root (as in CI); never skipped.
    if (!isRoot) throw new Error('this test needs root to run the installer as uid 65534');
    const program = installTo(join(workDir, 'nobody-can-run'), target);
    const readOnly = join(workDir, 'root-owned');
    mkdirSync(readOnly, { mode: 0o755 });
    const result = runSync(target, program, ['install', '--to', join(readOnly, 'drainguard')], { uid: NOBODY, gid: NOBODY });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/envoy-shutdown install: cannot create .*EACCES/);
  });

  test('usage errors exit 2', () => {
    expect(runSync(target, target.built, ['install']).status).toBe(2);
    expect(runSync(target, target.built, ['install', '--to']).status).toBe(2);
  });
});
