import { buildDist } from './support/build';
import { buildShutdownIfStale, ensureShutdownToolchain } from './support/drain-executables';
import { ensureSystemPackages } from './support/system-packages';

/** The system project's: runs once before any of its workers and builds what its suites execute. */
export default function globalSetup(): void {
  const log = (line: string) => process.stderr.write(`\n[global-setup] ${line}\n`);
  ensureSystemPackages('system', log);
  buildDist(log);
  ensureShutdownToolchain(log);
  buildShutdownIfStale(log);
}
