import { spawnSync } from 'node:child_process';
import { delimiter, join } from 'node:path';
import { CONTOUR_FIXTURES, NODE, REPO_ROOT } from '../../support/repo';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';

/** Runs the built `drainguard` CLI as a separate process, the way users do. */

export { REPO_ROOT };
export { CONTOUR_FIXTURES };

const MAIN = CLI_MAIN;

/** jest's globalSetup compiled src to dist before any worker started; this only checks it is there. */
export function buildCli(): void {
  assertDistBuilt();
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
