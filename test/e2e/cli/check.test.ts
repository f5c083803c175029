/**
 * The built CLI, `node dist/cli/main.js check`, as its own process, for what needs no cluster: its help,
 * flag mistakes, and a user with no home directory. Against the real API server it runs in
 * test/kube/check-cli.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assertDistBuilt, CLI_MAIN } from '../../support/build';
import { NODE } from '../../support/repo';
import { spawnDrainguard, stopAll } from './spawn-cli';

const directory = mkdtempSync(join(tmpdir(), 'drainguard-check-cli-'));
beforeAll(() => assertDistBuilt());
afterEach(() => stopAll());
afterAll(() => rmSync(directory, { recursive: true, force: true }));

test('help, and flag mistakes exit 2', async () => {
  const help = await spawnDrainguard(['help', 'check'], { env: { HOME: directory } });
  expect(help.status).toBe(0);
  expect(help.stdout).toMatch(/^Usage: drainguard check \[-n NAMESPACE \| -A\]/);
  expect(help.stdout).toContain('--drainguard-namespace NAMESPACE');

  const both = await spawnDrainguard(['check', '-n', 'x', '-A', '--kubeconfig', join(directory, 'unused')], { env: { HOME: directory } });
  expect(both.status).toBe(2);
  expect(both.stderr).toBe("drainguard check: -n/--namespace and -A/--all-namespaces exclude each other (see 'drainguard check --help')\n");
});

test('a user with no HOME and no passwd entry (a container of an image that does not list its user) gets the error that says what to pass, not a crash', async () => {
  // 4242 is in no /etc/passwd here; os.homedir() throws for it when HOME is unset. The checkout may sit
  // under a directory only root can enter (/root, or CI's mktemp -d): the process keeps DAC override as
  // an ambient capability so it can reach Node and dist/, which has nothing to do with what is tested.
  const unprivileged = ['setpriv', '--reuid=4242', '--regid=4242', '--clear-groups', '--inh-caps=+dac_override', '--ambient-caps=+dac_override', '--'] as const;
  const run = await spawnDrainguard([], {
    command: [...unprivileged, 'env', '-i', NODE, CLI_MAIN, 'check'],
    cwd: directory,
  });
  expect(run.status).toBe(3);
  expect(run.stderr).toBe(
    'error: drainguard check: no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG (there is no home directory for ~/.kube/config: HOME is unset and this user has no passwd entry)\n',
  );
});
