import { buildDist } from './support/build';
import { ensureShutdownToolchain } from './support/drain-executables';
import { buildReleaseIfStale } from './support/release';
import { ensureSystemPackages } from './support/system-packages';

/**
 * The release project's: the Debian packages it runs, the drain program's toolchain (the release holds
 * the drain program's image; binutils and qemu-user), dist/ (the suites compare the executables with
 * `node dist/cli/main.js`) and the release folder, once before any of its workers.
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`\n[global-setup] ${line}\n`);
  ensureSystemPackages('release', log);
  ensureShutdownToolchain(log);
  buildDist(log);
  await buildReleaseIfStale(log);
}
