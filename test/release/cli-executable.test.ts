/**
 * The single executables of `npm run release`, run as a user runs them: by themselves, with no Node on
 * PATH, natively (amd64) and under qemu-user (arm64). Each does what `node dist/cli/main.js` does, byte
 * for byte: `version`, `inject` on Contour's own manifest, and `check` against the Kubernetes API double.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { VERSION } from '../../src/version';
import { hostArch, launcherFor, RELEASE_ARCHES, type ReleaseArch } from '../../release/pinned-node';
import { checkExecutable } from '../../release/cli-executable';
import { executableName } from '../../release/release';
import { assertDistBuilt, CLI_MAIN } from '../support/build';
import { KubeApiDouble } from '../support/kube-api-double';
import { assertReleaseBuilt, releasePath } from '../support/release';
import { CONTOUR_FIXTURES, NODE } from '../support/repo';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { installDrainguard, namespace, OPT_IN, pod, templates } from '../integration/check/cluster-scenario';
import { run, type Finished } from './processes';

const directory = temporaryDirectory();
/** The only directory on PATH: qemu-user and nothing else, so no `node` can be found. */
const bin = join(directory.path, 'bin');

beforeAll(() => {
  assertDistBuilt();
  assertReleaseBuilt();
  mkdirSync(bin);
  for (const arch of RELEASE_ARCHES) {
    const [emulator] = launcherFor(arch).command;
    if (emulator !== undefined) symlinkSync(execFileSync('sh', ['-c', `command -v ${emulator}`], { encoding: 'utf8' }).trim(), join(bin, emulator));
  }
});
afterAll(() => directory.remove());

function executable(arch: ReleaseArch, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  const launcher = launcherFor(arch);
  const [command, ...prefix] = [...launcher.command, releasePath(executableName(arch))];
  return run(command!, [...prefix, ...args], { cwd: directory.path, env: { PATH: bin, HOME: directory.path, ...launcher.env, ...env } });
}

/** The same command through the built CLI on the pinned Node: what the executable must equal. */
function distCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return run(NODE, [CLI_MAIN, ...args], { cwd: directory.path, env: { PATH: bin, HOME: directory.path, ...env } });
}

/** The built CLI's result for `args`, run once and shared by both architectures' tests. */
const expectedResults = new Map<string, Promise<Finished>>();
function expectedFor(args: readonly string[]): Promise<Finished> {
  const key = JSON.stringify(args);
  if (!expectedResults.has(key)) expectedResults.set(key, distCli(args));
  return expectedResults.get(key)!;
}

/** The cluster `check` reads: drainguard installed, one protected Envoy pod, one in a namespace not opted in. */
let double: KubeApiDouble;
let kubeconfig: string;
beforeAll(async () => {
  double = await KubeApiDouble.start();
  await installDrainguard(double);
  double.put(namespace('projectcontour', OPT_IN));
  double.put(pod(templates.contour(), { name: 'envoy-protected', namespace: 'projectcontour', owner: { kind: 'DaemonSet', name: 'envoy' }, state: 'protected' }));
  double.put(namespace('gateway'));
  double.put(pod(templates.contour(), { name: 'envoy-x1', namespace: 'gateway', owner: { kind: 'DaemonSet', name: 'envoy' } }));
  kubeconfig = join(directory.path, 'kubeconfig');
  writeFileSync(kubeconfig, double.kubeconfigYaml());
});
afterAll(async () => {
  await double.close();
});

test('an executable needs no Node, only glibc and libstdc++: its dynamic section names nothing else', () => {
  for (const arch of RELEASE_ARCHES) {
    checkExecutable(releasePath(executableName(arch)), arch);
    const dynamic = execFileSync('readelf', ['--dynamic', releasePath(executableName(arch))], { encoding: 'utf8' });
    const needed = [...dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[(.+)\]/g)].map((match) => match[1]).sort();
    const loader = { amd64: 'ld-linux-x86-64.so.2', arm64: 'ld-linux-aarch64.so.1' }[arch];
    expect(needed.filter((library) => library !== loader)).toEqual(['libc.so.6', 'libdl.so.2', 'libgcc_s.so.1', 'libm.so.6', 'libpthread.so.0', 'libstdc++.so.6']);
  }
});

test('the premise of the NODE_OPTIONS test: plain Node does load what NODE_OPTIONS requires', async () => {
  const result = await distCli(['version', '--client'], { NODE_OPTIONS: `--require ${join(directory.path, 'missing.js')}` });
  expect(result.status).toBe(1);
  expect(result.stderr).toContain('missing.js');
});

describe.each(RELEASE_ARCHES)('linux/%s', (arch) => {
  test("version, with the user's NODE_OPTIONS (meant for their own Node programs) not reaching it; nothing on stderr, where a rejected code cache would warn", async () => {
    const env = { NODE_OPTIONS: `--require ${join(directory.path, 'missing.js')}` };
    expect(await executable(arch, ['version', '--client'], env)).toEqual({ status: 0, stdout: `drainguard ${VERSION}\n`, stderr: '' });
  });

  test("inject on Contour's Envoy DaemonSet: exactly the built CLI's output", async () => {
    const args = ['inject', '-f', CONTOUR_FIXTURES[0]!, '--diff'];
    const expected = await expectedFor(args);
    expect(expected.status).toBe(1); // differences found
    expect(expected.stdout).toContain('+        drainguard.io/protected: "true"');
    expect(await executable(arch, args)).toEqual(expected);
  });

  test("check against the API server: exactly the built CLI's output (client-node, ESM, bundled in)", async () => {
    const args = ['check', '-A', '--kubeconfig', kubeconfig];
    const expected = await expectedFor(args);
    expect(expected.status).toBe(1); // the unprotected pod in gateway is a finding
    expect(expected.stdout.split('\n')[0]).toBe(`drainguard check: context double (${double.url})`);
    expect(expected.stdout).toContain('× namespace gateway is not opted in');
    expect(await executable(arch, args)).toEqual(expected);
  });

  test('a usage error reads as the built CLI\'s', async () => {
    const expected = await expectedFor(['chek']);
    expect(expected.status).toBe(2);
    expect(await executable(arch, ['chek'])).toEqual(expected);
  });

  test('serve says where the webhook server is, exit 2 (its decision workers are files this executable lacks)', async () => {
    const result = await executable(arch, ['serve', '--dev']);
    expect(result).toEqual({ status: 2, stdout: '', stderr: expect.stringContaining('drainguard serve: the webhook server is not part of this executable') });
    expect(result.stderr).toContain('ghcr.io/drainguard/drainguard');
  });
});

// On this machine's architecture only: under qemu-user it repeats what `check` shows (client-node bundled,
// the API server reached) at several seconds a run.
test(`linux/${hostArch()}: version with a cluster: the server's Kubernetes and drainguard versions, exactly the built CLI's output`, async () => {
  const args = ['version', '--kubeconfig', kubeconfig];
  const expected = await expectedFor(args);
  expect(expected.status).toBe(0);
  expect(expected.stdout).toMatch(new RegExp(`^drainguard ${VERSION}\\nserver \\(context double, `));
  expect(expected.stdout).toContain('  kubernetes  v');
  expect(await executable(hostArch(), args)).toEqual(expected);
});
