/**
 * Where things are in the repository. Imports only Node's standard library: tests of both lanes and the
 * benchmarks use it (the benchmarks run compiled into node_modules/.cache/drainguard-bench, so the root
 * is found by walking up to drainguard's package.json rather than by a fixed number of `..`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

function findRepoRoot(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'drainguard') return dir;
  }
  throw new Error(`cannot find the drainguard repository above ${__dirname}`);
}

export const REPO_ROOT = findRepoRoot();

/** A path inside the repository. */
export function repoPath(...segments: string[]): string {
  return resolve(REPO_ROOT, ...segments);
}

/**
 * The Node that npm scripts run on: the pinned one npm installed into node_modules/.bin on Linux
 * (package.json optionalDependencies), else the one running jest (macOS: the user's own Node 24).
 */
export const NODE = existsSync(join(REPO_ROOT, 'node_modules/.bin/node')) ? join(REPO_ROOT, 'node_modules/.bin/node') : process.execPath;

/** Contour's own Envoy DaemonSet manifests (examples/contour/03-envoy.yaml) at three releases. */
export const CONTOUR_FIXTURES_DIR = join(REPO_ROOT, 'test/fixtures/contour');
export const CONTOUR_FIXTURES = ['03-envoy-main.yaml', '03-envoy-v1.23.0.yaml', '03-envoy-v1.33.6.yaml'].map((name) =>
  join(CONTOUR_FIXTURES_DIR, name),
);
