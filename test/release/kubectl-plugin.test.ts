/**
 * The executable as a kubectl plugin, run by the machine's real kubectl. kubectl's plugin handler
 * (k8s.io/kubectl/pkg/cmd/cmd.go) takes the leading arguments that are not flags, joins them with `-`
 * (a `-` inside one becoming `_`), looks up `kubectl-<name>` on PATH, longest name first, and execs it
 * with every argument after the name, flags included, and kubectl's own environment; a flag before the
 * name stops the lookup. So the file must be called `kubectl-drainguard`, and `kubectl drainguard check
 * --kubeconfig F` hands `check --kubeconfig F` to drainguard, which reads its own flags and $KUBECONFIG.
 *
 * Two ways of getting that file: a link beside the executable (the README's PATH install) and krew's
 * install from the release's manifest and archive (krew's own steps: internal/installation/install.go).
 * `kubectl drainguard check` against the real API server is test/kube/release-cli.test.ts's.
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { VERSION } from '../../src/version';
import { hostArch } from '../../release/pinned-node';
import { ARCHIVED_EXECUTABLE, archiveName, executableName, KREW_MANIFEST } from '../../release/release';
import { assertReleaseBuilt, releasePath } from '../support/release';
import { CONTOUR_FIXTURES } from '../support/repo';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { installPlugin, kubectlWithPlugins, run, type Finished } from './processes';

const directory = temporaryDirectory();
const home = join(directory.path, 'home');

beforeAll(() => {
  assertReleaseBuilt();
  mkdirSync(home);
});
afterAll(() => directory.remove());

/** The executable of this machine's architecture: kubectl execs the plugin directly, no emulator between. */
const executable = releasePath(executableName(hostArch()));

function kubectl(args: readonly string[], pluginDir: string, env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return kubectlWithPlugins(args, pluginDir, { home, directory: directory.path }, env);
}

function direct(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  return run(executable, args, { cwd: directory.path, env: { PATH: '/usr/bin:/bin', HOME: home, ...env } });
}

describe('installed by hand: the executable, and kubectl-drainguard linked to it on PATH', () => {
  let pluginDir: string;
  beforeAll(() => {
    pluginDir = installPlugin(directory.path);
  });

  test('kubectl plugin list finds it, with no warning', async () => {
    const listed = await kubectl(['plugin', 'list'], pluginDir);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toContain(`${join(pluginDir, 'kubectl-drainguard')}\n`);
    expect(listed.stderr).not.toMatch(/warning/i);
  });

  test('kubectl drainguard version runs it as a separate process', async () => {
    expect(await kubectl(['drainguard', 'version', '--client'], pluginDir)).toEqual({ status: 0, stdout: `drainguard ${VERSION}\n`, stderr: '' });
    // No kubeconfig in this HOME: drainguard says so, as it does when run by itself.
    const expected = await direct(['version']);
    expect(expected.stdout.split('\n')[0]).toBe(`drainguard ${VERSION}`);
    expect(expected.stdout).toContain('no kubeconfig');
    expect(await kubectl(['drainguard', 'version'], pluginDir)).toEqual(expected);
  });

  test('every argument after the name reaches drainguard, flags and their values included', async () => {
    const args = ['inject', '-f', CONTOUR_FIXTURES[0]!, '--diff'];
    const expected = await direct(args);
    expect(expected.status).toBe(1);
    expect(await kubectl(['drainguard', ...args], pluginDir)).toEqual(expected);
  });

  test("a kubectl flag before the plugin's name is kubectl's error, as its handler says (the README puts flags after)", async () => {
    const result = await kubectl(['--kubeconfig', '/dev/null', 'drainguard', 'version'], pluginDir);
    expect(result.status).toBe(1);
    expect(result.stdout).not.toContain('drainguard 0');
    expect(result.stderr).toContain('flags cannot be placed before plugin name');
  });
});

interface KrewPlatform {
  selector: { matchLabels?: Record<string, string>; matchExpressions?: unknown[] };
  uri: string;
  sha256: string;
  files: { from: string; to: string }[];
  bin: string;
}
interface KrewPlugin {
  apiVersion: string;
  kind: string;
  metadata: { name: string };
  spec: { version: string; homepage: string; shortDescription: string; description: string; platforms: KrewPlatform[] };
}

describe("krew's install from the release's manifest and archive", () => {
  const manifest = () => parse(readFileSync(releasePath(KREW_MANIFEST), 'utf8')) as KrewPlugin;

  test("the manifest passes krew's validation (pkg/index/validation/validate.go)", () => {
    const plugin = manifest();
    expect(plugin.apiVersion).toBe('krew.googlecontainertools.github.com/v1alpha2');
    expect(plugin.kind).toBe('Plugin');
    expect(plugin.metadata.name).toMatch(/^[\w-]+$/);
    expect(`${plugin.metadata.name}.yaml`).toBe(KREW_MANIFEST); // the name must match the file name
    expect(plugin.spec.shortDescription).not.toBe('');
    expect(plugin.spec.version).toBe(`v${VERSION}`); // semver with the required v
    expect(plugin.spec.platforms.map((platform) => platform.selector)).toEqual([
      { matchLabels: { os: 'linux', arch: 'amd64' } },
      { matchLabels: { os: 'linux', arch: 'arm64' } },
    ]);
    for (const platform of plugin.spec.platforms) {
      expect(platform.sha256).toMatch(/^[a-f0-9]{64}$/);
      expect(platform.bin).not.toBe('');
      expect(platform.files.length).toBeGreaterThan(0);
      // No glob in `from`: what krew moves is exactly what is named.
      for (const file of platform.files) expect(file.from).toMatch(/^[\w.-]+$/);
    }
  });

  test('each platform names its own archive, by URI and SHA-256', () => {
    for (const platform of manifest().spec.platforms) {
      const arch = platform.selector.matchLabels!.arch as 'amd64' | 'arm64';
      expect(platform.uri).toBe(`https://github.com/drainguard/drainguard/releases/download/v${VERSION}/${archiveName(arch)}`);
      expect(platform.sha256).toBe(createHash('sha256').update(readFileSync(releasePath(archiveName(arch)))).digest('hex'));
    }
  });

  test('installed as krew installs it, kubectl finds and runs kubectl-drainguard', async () => {
    // krew: the platform whose selector matches this machine, the archive checked against sha256 and
    // unpacked into a staging directory, each `files` entry moved into store/<name>/<version>, and a
    // relative symlink bin/kubectl-<name> to the `bin` there.
    const platform = manifest().spec.platforms.find((candidate) => candidate.selector.matchLabels?.arch === hostArch())!;
    const archive = releasePath(archiveName(hostArch()));
    expect(createHash('sha256').update(readFileSync(archive)).digest('hex')).toBe(platform.sha256);
    const krewRoot = join(directory.path, 'krew');
    const staging = join(krewRoot, 'staging');
    const store = join(krewRoot, 'store', manifest().metadata.name, manifest().spec.version);
    const binDir = join(krewRoot, 'bin');
    for (const dir of [staging, store, binDir]) mkdirSync(dir, { recursive: true });
    execFileSync('tar', ['-xzf', archive, '-C', staging]);
    for (const file of platform.files) renameSync(join(staging, file.from), join(store, file.to, file.from));
    symlinkSync(relative(binDir, join(store, platform.bin)), join(binDir, `kubectl-${manifest().metadata.name}`));

    expect(platform.bin).toBe(ARCHIVED_EXECUTABLE);
    const listed = await kubectl(['plugin', 'list'], binDir);
    expect(listed.stdout).toContain(`${join(binDir, 'kubectl-drainguard')}\n`);
    expect(await kubectl(['drainguard', 'version', '--client'], binDir)).toEqual({ status: 0, stdout: `drainguard ${VERSION}\n`, stderr: '' });
  });
});
