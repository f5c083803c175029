import { buildDist } from './support/build';
import { buildShutdownIfStale, ensureShutdownToolchain } from './support/drain-executables';

/** The system project's: runs once before any of its workers and builds what its suites execute. */
export default function globalSetup(): void {
  const log = (line: string) => process.stderr.write(`\n[global-setup] ${line}\n`);
  buildDist(log);
  ensureShutdownToolchain(log);
  buildShutdownIfStale(log);
}
