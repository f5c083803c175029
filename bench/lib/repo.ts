/**
 * Where the repository is. The bench is compiled into node_modules/.cache/drainguard-bench, so paths are
 * found by walking up to drainguard's package.json, never by a fixed number of `..`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

function isDrainguardRoot(dir: string): boolean {
  const manifest = join(dir, 'package.json');
  return existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'drainguard';
}

let root: string | undefined;

/** A path inside the repository. */
export function repoPath(...segments: string[]): string {
  if (root === undefined) {
    let dir = __dirname;
    while (!isDrainguardRoot(dir)) {
      if (dir === dirname(dir)) throw new Error(`cannot find the drainguard repository above ${__dirname}`);
      dir = dirname(dir);
    }
    root = dir;
  }
  return resolve(root, ...segments);
}
