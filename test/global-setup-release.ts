import { buildDist } from './support/build';
import { ensureShutdownToolchain } from './support/drain-executables';
import { buildReleaseIfStale } from './support/release';

/**
 * The release project's: dist/ (the suites compare the executables with `node dist/cli/main.js`) and the
 * release folder, once before any of its workers. The release holds the drain program's image, so its
 * toolchain must be there (what is missing is installed, as the system lane does).
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`\n[global-setup] ${line}\n`);
  buildDist(log);
  ensureShutdownToolchain(log);
  await buildReleaseIfStale(log);
}
