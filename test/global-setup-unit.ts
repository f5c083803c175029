import { buildDist } from './support/build';

/** The unit project's: dist/ only (plain tsc), for the golden suite's `drainguard inject` processes. */
export default function globalSetup(): void {
  buildDist((line) => process.stderr.write(`\n[global-setup] ${line}\n`));
}
