/**
 * What ends `drainguard check` before a report, on the client's side: a peer that accepts the connection
 * and never answers (the run ends at --request-timeout instead of hanging), a context the kubeconfig
 * lacks, no home directory to find ~/.kube/config in, flag mistakes. No API server is needed for any of
 * them; test/kube/check.test.ts runs the check against the real one (credentials it rejects included).
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { runCheckCommand } from '../../../src/cli/check';
import { InputError, UsageError } from '../../../src/cli/errors';
import { KubeconfigError, loadKubeconfig } from '../../../src/check/kubeconfig';
import { temporaryDirectory } from '../server/webhook-test-kit';

const directory = temporaryDirectory();
afterAll(() => directory.remove());

/** A kubeconfig with one context, `only`, for the cluster at `server`. */
function kubeconfigFor(server: string): string {
  const path = join(directory.path, `kubeconfig-${Math.random()}`);
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'only', cluster: { server } }],
      users: [{ name: 'only', user: { token: 'a-token' } }],
      contexts: [{ name: 'only', context: { cluster: 'only', user: 'only' } }],
      'current-context': 'only',
    }),
  );
  return path;
}

test('a server that never answers ends the run at --request-timeout, naming the request, instead of hanging', async () => {
  const held = new Set<Socket>();
  const silent = createServer((socket) => held.add(socket)).listen(0, '127.0.0.1');
  await once(silent, 'listening');
  const server = `https://127.0.0.1:${(silent.address() as { port: number }).port}`;
  try {
    const run = runCheckCommand(['--kubeconfig', kubeconfigFor(server), '--request-timeout', '300ms'], { stdout: () => undefined, env: {} });
    await expect(run).rejects.toThrow(InputError);
    await expect(run).rejects.toThrow(
      `drainguard check: the API server at ${server} did not answer get mutatingwebhookconfigurations.admissionregistration.k8s.io "drainguard-drainguard-system" within 0.3s (--request-timeout)`,
    );
    expect(held.size).toBeGreaterThan(0);
  } finally {
    for (const socket of held) socket.destroy();
    silent.close();
  }
});

test('an unknown --context names the contexts there are', async () => {
  const kubeconfig = kubeconfigFor('https://127.0.0.1:1');
  await expect(runCheckCommand(['--kubeconfig', kubeconfig, '--context', 'prod'], { stdout: () => undefined, env: {} })).rejects.toThrow(
    `drainguard check: context "prod" does not exist in ${kubeconfig} (contexts: only)`,
  );
});

test('with no home directory there is no ~/.kube/config to read: the error says what to pass instead', async () => {
  const load = loadKubeconfig({ env: {}, homeDirectory: undefined });
  await expect(load).rejects.toThrow(KubeconfigError);
  await expect(load).rejects.toThrow(
    'no kubeconfig: pass --kubeconfig FILE or set KUBECONFIG (there is no home directory for ~/.kube/config: HOME is unset and this user has no passwd entry)',
  );
});

test('flag mistakes are usage errors', async () => {
  const run = (args: string[]) => runCheckCommand(args, { stdout: () => undefined, env: {} });
  await expect(run(['-n', 'a', '-A'])).rejects.toThrow(UsageError);
  await expect(run(['-o', 'yaml'])).rejects.toThrow('-o/--output must be text or json, not "yaml"');
  await expect(run(['--request-timeout', '0s'])).rejects.toThrow('--request-timeout must be a duration');
  await expect(run(['--drainguard-namespace', 'Bad_Name'])).rejects.toThrow('is not a valid name');
});
