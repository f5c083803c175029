/**
 * The release's single executables against the real API server: `check` and `version` print exactly what
 * `node dist/cli/main.js` prints (client-node, an ES module, bundled into the executable; natively and
 * under qemu-user), and, as a kubectl plugin run by the machine's real kubectl, `kubectl drainguard
 * check` gets its flags and $KUBECONFIG as when run by itself. The release folder is built by the kube
 * lane's globalSetup (`npm run release -- --if-changed`, as the release lane's), since only this lane
 * has a cluster; test/release holds the executables' other tests.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { hostArch, RELEASE_ARCHES } from '../../release/pinned-node';
import { templates } from '../support/check-pods';
import { assertDistBuilt } from '../support/build';
import { assertReleaseBuilt } from '../support/release';
import { adminApi, clusterInfo, createNamespace, deleteNamespace, eventually, installDrainguard, uninstallDrainguard, type DrainguardRelease } from '../support/cluster/lane';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { emulatorsOnlyPath, installPlugin, kubectlWithPlugins, runDistCli, runExecutable, type Finished } from '../release/processes';
import { createWorkload, podsOf, prepareNamespace } from './check-workloads';

const directory = temporaryDirectory();
let bin: string;
let release: DrainguardRelease;
/** One namespace opted in (its Envoy pods protected), one not. */
let namespaces: [string, string];
const cleanup: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  assertDistBuilt();
  assertReleaseBuilt();
  bin = emulatorsOnlyPath(directory.path);
  release = await installDrainguard('release-cli');
  cleanup.push(() => uninstallDrainguard(release));
  namespaces = await Promise.all([createNamespace('release-cli-protected', release.optIn), createNamespace('release-cli-unprotected')]);
  cleanup.push(...namespaces.map((namespace) => () => deleteNamespace(namespace)));
  for (const namespace of namespaces) {
    await prepareNamespace(adminApi(), namespace);
    await createWorkload(adminApi(), namespace, 'DaemonSet', 'envoy', templates.contour(), { gated: true });
  }
  await eventually('each DaemonSet made its two pods', async () => {
    const counts = await Promise.all(namespaces.map(async (namespace) => (await podsOf(adminApi(), namespace)).size));
    return counts.join() === '2,2' ? true : undefined;
  });
}, 240_000);

afterAll(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  directory.remove();
});

const where = () => ({ bin, directory: directory.path });

/** The built CLI's result for `args`, run once and shared by both architectures' tests. */
const expectedResults = new Map<string, Promise<Finished>>();
function expectedFor(args: readonly string[]): Promise<Finished> {
  const key = JSON.stringify(args);
  if (!expectedResults.has(key)) expectedResults.set(key, runDistCli(args, where()));
  return expectedResults.get(key)!;
}

/** `check` of this suite's two namespaces only: other suites' pods come and go meanwhile. */
const scoped = (namespace: string) => ['check', '-n', namespace, '--kubeconfig', clusterInfo().adminKubeconfig, '--release', release.release, '--drainguard-namespace', release.namespace];

describe.each(RELEASE_ARCHES)('linux/%s', (arch) => {
  test("check against the API server: exactly the built CLI's output (client-node, ESM, bundled in)", async () => {
    for (const [namespace, status] of [
      [namespaces[0], 0],
      [namespaces[1], 1],
    ] as const) {
      const expected = await expectedFor(scoped(namespace));
      expect(expected.status).toBe(status);
      expect(expected.stdout.split('\n')[0]).toBe(`drainguard check: context drainguard-test (${clusterInfo().server})`);
      expect(await runExecutable(arch, scoped(namespace), where())).toEqual(expected);
    }
    expect((await expectedFor(scoped(namespaces[1]))).stdout).toContain(`× namespace ${namespaces[1]} is not opted in`);
  });
});

// On this machine's architecture only: under qemu-user it repeats what `check` shows at several seconds a run.
test(`linux/${hostArch()}: version with a cluster: the server's Kubernetes and drainguard versions, exactly the built CLI's output`, async () => {
  const args = ['version', '--kubeconfig', clusterInfo().adminKubeconfig, '--release', release.release, '--drainguard-namespace', release.namespace];
  const expected = await expectedFor(args);
  expect(expected.status).toBe(0);
  expect(expected.stdout).toContain(`  kubernetes  ${clusterInfo().kubernetesVersion}\n`);
  expect(expected.stdout).toContain(`(Deployment ${release.namespace}/`);
  expect(await runExecutable(hostArch(), args, where())).toEqual(expected);
});

test('kubectl drainguard check: --kubeconfig passes through as an argument, $KUBECONFIG through the environment kubectl relays', async () => {
  const pluginDir = installPlugin(directory.path);
  const home = join(directory.path, 'home');
  mkdirSync(home);
  const args = scoped(namespaces[0]);
  const expected = await runExecutable(hostArch(), args, where());
  expect(expected.status).toBe(0);
  expect(await kubectlWithPlugins(['drainguard', ...args], pluginDir, { home, directory: directory.path })).toEqual(expected);
  const withoutFlag = args.filter((arg, index) => arg !== '--kubeconfig' && args[index - 1] !== '--kubeconfig');
  expect(await kubectlWithPlugins(['drainguard', ...withoutFlag], pluginDir, { home, directory: directory.path }, { KUBECONFIG: clusterInfo().adminKubeconfig })).toEqual(expected);
});
