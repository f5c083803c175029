import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join, resolve } from 'node:path';

/** Runs the built `drainguard` CLI as a separate process, the way users do. */

export const REPO_ROOT = resolve(__dirname, '../../..');
/** The shared fixtures sit beside the repository (CI clones it next to `shared/` too). */
export const SHARED_FIXTURES = resolve(REPO_ROOT, '../shared/fixtures');
export const CONTOUR_FIXTURES = ['03-envoy-main.yaml', '03-envoy-v1.23.0.yaml', '03-envoy-v1.33.6.yaml'].map((name) =>
  join(SHARED_FIXTURES, 'contour', name),
);

const NODE = join(REPO_ROOT, 'node_modules/.bin/node');
const MAIN = join(REPO_ROOT, 'dist/cli/main.js');

/** Compiles src to dist once per test file (call from beforeAll). */
export function buildCli(): void {
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: 'pipe' });
  if (!existsSync(MAIN)) throw new Error(`npm run build did not produce ${MAIN}`);
}

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function drainguard(args: readonly string[], stdin?: string): CliResult {
  const result = spawnSync(NODE, [MAIN, ...args], { cwd: REPO_ROOT, input: stdin ?? '', encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** `npx` as the README runs it: with the project's pinned Node first on PATH. */
export function npx(args: readonly string[]): CliResult {
  const env = { ...process.env, PATH: `${join(REPO_ROOT, 'node_modules/.bin')}${delimiter}${process.env.PATH ?? ''}` };
  const result = spawnSync('npx', ['--no-install', ...args], { cwd: REPO_ROOT, encoding: 'utf8', env });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
