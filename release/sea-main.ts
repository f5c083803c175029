/**
 * The entry of the single executables (`drainguard`, `kubectl drainguard`): the CLI of src/cli/main.ts,
 * bundled whole, less `serve`. The webhook server decides reviews in worker threads it starts from
 * dist/server/decision-worker.js, a file a single executable does not carry; the server ships as the
 * container image the chart runs. Kept out of src/cli so the CLI itself does not know how it is packaged.
 */
import { EXIT_USAGE } from '../src/cli/errors';

const [command] = process.argv.slice(2);
if (command === 'serve') {
  process.stderr.write(
    'drainguard serve: the webhook server is not part of this executable; it runs from the container image ' +
      '(ghcr.io/drainguard/drainguard) that the Helm chart installs. This executable runs inject, check and version.\n',
  );
  // As for any command this program does not have.
  process.exitCode = EXIT_USAGE;
} else {
  require('../src/cli/main');
}
