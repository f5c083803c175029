import { buildAll } from './support/build';

/** Runs once before any test worker: builds what the end-to-end suites execute. */
export default function globalSetup(): void {
  buildAll((line) => process.stderr.write(`\n[global-setup] ${line}\n`));
}
