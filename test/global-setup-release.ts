import { buildDist } from './support/build';
import { buildReleaseIfStale } from './support/release';

/**
 * The release project's: dist/ (the suites compare the executables with `node dist/cli/main.js`) and the
 * release folder, once before any of its workers.
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`\n[global-setup] ${line}\n`);
  buildDist(log);
  await buildReleaseIfStale(log);
}
