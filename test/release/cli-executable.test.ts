/**
 * The single executables of `npm run release`, run as a user runs them: by themselves, with no Node on
 * PATH, natively (amd64) and under qemu-user (arm64). Each does what `node dist/cli/main.js` does, byte
 * for byte: `version`, `inject` on Contour's own manifest, a usage error. `check` and `version` against
 * the real API server are test/kube/release-cli.test.ts's (the kube lane runs the cluster).
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { VERSION } from '../../src/version';
import { RELEASE_ARCHES, type ReleaseArch } from '../../release/pinned-node';
import { checkExecutable } from '../../release/cli-executable';
import { executableName } from '../../release/release';
import { assertDistBuilt } from '../support/build';
import { assertReleaseBuilt, releasePath } from '../support/release';
import { CONTOUR_FIXTURES } from '../support/repo';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { emulatorsOnlyPath, runDistCli, runExecutable, type Finished } from './processes';

const directory = temporaryDirectory();
/** The only directory on PATH: qemu-user and nothing else, so no `node` can be found. */
let bin: string;

beforeAll(() => {
  assertDistBuilt();
  assertReleaseBuilt();
  bin = emulatorsOnlyPath(directory.path);
});
afterAll(() => directory.remove());

const where = () => ({ bin, directory: directory.path });
const executable = (arch: ReleaseArch, args: readonly string[], env: NodeJS.ProcessEnv = {}) => runExecutable(arch, args, where(), env);
const distCli = (args: readonly string[], env: NodeJS.ProcessEnv = {}) => runDistCli(args, where(), env);

/** The built CLI's result for `args`, run once and shared by both architectures' tests. */
const expectedResults = new Map<string, Promise<Finished>>();
function expectedFor(args: readonly string[]): Promise<Finished> {
  const key = JSON.stringify(args);
  if (!expectedResults.has(key)) expectedResults.set(key, distCli(args));
  return expectedResults.get(key)!;
}

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
