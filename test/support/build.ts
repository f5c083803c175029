/**
 * `dist/`, the compiled drainguard CLI and server, which golden, integration and end-to-end suites run
 * as separate processes. Both jest projects' globalSetup build it once, before any worker starts, so no
 * two suites ever race to rewrite `dist/`; suites only assert that the build is there. Needs nothing but
 * `npm ci` (plain tsc): the drain executables, which need a C toolchain, are drain-executables.ts.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './repo';

export const CLI_MAIN = join(REPO_ROOT, 'dist/cli/main.js');

// `npm test` runs both projects' globalSetup in the one jest process, and both load this module.
let distBuilt = false;

/** Compiles src/ to dist/ (fast enough to run every time), at most once per jest run. */
export function buildDist(log: (line: string) => void = () => undefined): void {
  if (distBuilt) return;
  // The project's own build script: it also makes the `drainguard` bin executable, which npx needs.
  log('building dist/ (npm run build)');
  execFileSync('npm', ['run', '--silent', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  distBuilt = true;
}

/** For suites: fail with a clear message instead of a confusing ENOENT when run without globalSetup. */
export function assertDistBuilt(): void {
  if (!existsSync(CLI_MAIN)) throw new Error(`${CLI_MAIN} is missing: run the tests through jest (its globalSetup builds) or \`npm run build\``);
}
