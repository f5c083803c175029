/** Process entry of the bundled executable; `main.ts` stays importable by tests without side effects. */
import { main } from './main';

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`envoy-shutdown: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
