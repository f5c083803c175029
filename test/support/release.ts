/**
 * The release folder (`npm run release`, release/release.ts) that the release lane's suites test: the
 * single executables, natively and under qemu-user, the archives, the chart package, the krew manifest
 * and SHA256SUMS. Only the release jest project builds it (its globalSetup, once per run, each executable
 * only when its inputs changed); test/unit/test-lanes.test.ts keeps the unit lane from reaching this module.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { buildRelease, DEFAULT_RELEASE_DIR, releaseFiles } from '../../release/release';

export const RELEASE_DIR = DEFAULT_RELEASE_DIR;
export const releasePath = (name: string) => join(RELEASE_DIR, name);

/** `npm run release -- --if-changed`, in this process. */
export async function buildReleaseIfStale(log: (line: string) => void): Promise<void> {
  await buildRelease({ ifChanged: true, log: (line) => log(`release: ${line}`) });
}

/** For suites: fail with a clear message instead of a confusing ENOENT when run without globalSetup. */
export function assertReleaseBuilt(): void {
  const missing = releaseFiles().filter((name) => !existsSync(releasePath(name)));
  if (missing.length > 0) {
    throw new Error(`${RELEASE_DIR} lacks ${missing.join(', ')}: run the tests through jest's release project (its globalSetup builds) or \`npm run release\``);
  }
}

