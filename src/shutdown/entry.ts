/** Process entry of the bundled executable; `main.ts` stays importable by tests without side effects. */
import { main } from './main';
import { platform } from './platform/current';

main(platform.args, platform).then(
  (code) => platform.exit(code),
  (error: unknown) => {
    platform.print('stderr', `envoy-shutdown: ${(error as Error).stack ?? String(error)}\n`);
    platform.exit(1);
  },
);
