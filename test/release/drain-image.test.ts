/**
 * The drain program's own image as a cluster meets it: the release's OCI layout pushed with crane to a
 * real registry (Debian's docker-registry), then read back through the registry's HTTP API, the OCI
 * distribution API a node's runtime pulls with. An index of linux/amd64 and linux/arm64, each image one
 * layer holding the static executable alone (the bytes `npm run build:shutdown` made, runnable), run as
 * the Dockerfile's envoy-shutdown stage says, and the index's digest is the one the packaged chart pins.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse, parseAllDocuments } from 'yaml';
import { DRAIN_IMAGE_REPOSITORY, defaultConfig } from '../../src/config/defaults';
import { VERSION } from '../../src/version';
import { buildDrainImage, craneBinary, DRAIN_IMAGE_LAYOUT, drainImageSettings, readDrainImageLayout, type Descriptor } from '../../release/drain-image';
import { sourceDateEpoch } from '../../release/files';
import { launcherFor, RELEASE_ARCHES, type ReleaseArch } from '../../release/pinned-node';
import { chartPackageName } from '../../release/release';
import { shutdownExecutable } from '../support/drain-executables';
import { helm } from '../support/helm';
import { assertReleaseBuilt, releasePath } from '../support/release';
import { temporaryDirectory } from '../integration/server/webhook-test-kit';
import { startRegistry } from './registry';

const INDEX = 'application/vnd.oci.image.index.v1+json';
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const REPOSITORY = 'drainguard/envoy-shutdown';

interface ImageConfig {
  os: string;
  architecture: string;
  created: string;
  config: { User: string; Entrypoint: string[]; Cmd: string[]; Labels: Record<string, string> };
  rootfs: { type: string; diff_ids: string[] };
}

const directory = temporaryDirectory();
let registry: { host: string; stop: () => Promise<void> } | undefined;
let pushed: string;

beforeAll(async () => {
  assertReleaseBuilt();
  registry = await startRegistry(directory.path);
  pushed = execFileSync(craneBinary(), ['push', releasePath(DRAIN_IMAGE_LAYOUT), `${registry.host}/${REPOSITORY}:${VERSION}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
});
afterAll(async () => {
  await registry?.stop();
  directory.remove();
});

/** GET of the registry API (`/v2/<repository>/…`), failing on anything but 200. */
async function get(path: string, accept?: string): Promise<{ body: Buffer; digest: string | null }> {
  const response = await fetch(`http://${registry!.host}/v2/${REPOSITORY}/${path}`, accept === undefined ? {} : { headers: { Accept: accept } });
  if (response.status !== 200) throw new Error(`GET ${path}: HTTP ${response.status} ${await response.text()}`);
  return { body: Buffer.from(await response.arrayBuffer()), digest: response.headers.get('docker-content-digest') };
}

/** A blob, checked against its digest. */
async function blob(digest: string): Promise<Buffer> {
  const { body } = await get(`blobs/${digest}`);
  expect(`sha256:${createHash('sha256').update(body).digest('hex')}`).toBe(digest);
  return body;
}

async function index(): Promise<{ manifests: Descriptor[]; digest: string | null; mediaType: string }> {
  const { body, digest } = await get(`manifests/${VERSION}`, INDEX);
  const parsed = JSON.parse(body.toString('utf8')) as { mediaType: string; manifests: Descriptor[] };
  return { ...parsed, digest };
}

async function image(arch: ReleaseArch): Promise<{ layers: Descriptor[]; config: ImageConfig; configDescriptor: Descriptor }> {
  const entry = (await index()).manifests.find((m) => m.platform?.architecture === arch)!;
  const manifest = JSON.parse((await get(`manifests/${entry.digest}`, MANIFEST)).body.toString('utf8')) as { layers: Descriptor[]; config: Descriptor };
  return { layers: manifest.layers, configDescriptor: manifest.config, config: JSON.parse((await blob(manifest.config.digest)).toString('utf8')) as ImageConfig };
}

test('crane push publishes the index the layout holds, and the packaged chart pins it by tag and digest', async () => {
  const { digest } = readDrainImageLayout(releasePath(DRAIN_IMAGE_LAYOUT));
  expect(pushed.trim()).toBe(`${registry!.host}/${REPOSITORY}@${digest}`);
  const served = await index();
  expect(served.mediaType).toBe(INDEX);
  expect(served.digest).toBe(digest);

  const values = parse(helm(['show', 'values', releasePath(chartPackageName())]).stdout) as { drainImage: { digest: string } };
  expect(values.drainImage.digest).toBe(digest);
  const rendered = helm(['template', 'drainguard', releasePath(chartPackageName()), '--namespace', 'drainguard-system']);
  expect(rendered.status).toBe(0);
  const configMap = parseAllDocuments(rendered.stdout)
    .map((document) => document.toJS() as { kind?: string; data?: Record<string, string> } | null)
    .find((object) => object?.kind === 'ConfigMap' && object.data?.['config.yaml'] !== undefined)!;
  const config = parse(configMap.data!['config.yaml']!) as { installer: { image: string } };
  expect(config.installer.image).toBe(`${DRAIN_IMAGE_REPOSITORY}:${VERSION}@${digest}`);
});

test('the index holds one image manifest for linux/amd64 and one for linux/arm64', async () => {
  const { manifests } = await index();
  expect(manifests.map((m) => [m.mediaType, m.platform?.os, m.platform?.architecture])).toEqual([
    [MANIFEST, 'linux', 'amd64'],
    [MANIFEST, 'linux', 'arm64'],
  ]);
});

describe.each(RELEASE_ARCHES.map((arch) => [arch] as const))('linux/%s', (arch) => {
  test("its config runs the Dockerfile's envoy-shutdown stage: the numeric non-root user, the program, its labels; a fixed creation time", async () => {
    const { config } = await image(arch);
    const settings = drainImageSettings();
    expect(config).toMatchObject({ os: 'linux', architecture: arch, created: '0001-01-01T00:00:00Z' });
    expect(config.config).toEqual({ User: settings.user, Entrypoint: settings.entrypoint, Cmd: settings.cmd, Labels: settings.labels });
    expect(config.config.User).toMatch(/^[1-9][0-9]*:[1-9][0-9]*$/);
    // Where the webhook's configuration runs it from, in the installer and through the image volume.
    expect(settings.programPath).toBe(defaultConfig().installer.programPath);
  });

  test('one layer: the executable alone, root-owned 0755, with the release time, the bytes the build made, and it runs', async () => {
    const { layers, config } = await image(arch);
    expect(layers.map((layer) => layer.mediaType)).toEqual(['application/vnd.oci.image.layer.v1.tar+gzip']);
    const compressed = await blob(layers[0]!.digest);
    expect(compressed.length).toBe(layers[0]!.size);
    // A few hundred KB: the drain program is under 1 MB uncompressed (docs/envoy-shutdown.md).
    expect(layers[0]!.size).toBeLessThan(1024 * 1024);
    const tar = gunzipSync(compressed);
    expect(`sha256:${createHash('sha256').update(tar).digest('hex')}`).toBe(config.rootfs.diff_ids[0]);

    const file = join(directory.path, `layer-${arch}.tar`);
    writeFileSync(file, tar);
    const listing = execFileSync('tar', ['-tvf', file, '--numeric-owner', '--full-time'], { encoding: 'utf8', env: { ...process.env, TZ: 'UTC' } });
    const when = new Date(Number(sourceDateEpoch()) * 1000).toISOString().replace('T', ' ').slice(0, 19);
    const size = readFileSync(shutdownExecutable(arch)).length;
    expect(listing.trimEnd().split('\n').map((line) => line.split(/\s+/))).toEqual([['-rwxr-xr-x', '0/0', String(size), ...when.split(' '), 'envoy-shutdown']]);

    const unpacked = join(directory.path, `unpacked-${arch}`);
    execFileSync('mkdir', ['-p', unpacked]);
    execFileSync('tar', ['-xf', file, '-C', unpacked]);
    expect(readFileSync(join(unpacked, 'envoy-shutdown')).equals(readFileSync(shutdownExecutable(arch)))).toBe(true);
    const { command, env } = launcherFor(arch);
    const program = [...command, join(unpacked, 'envoy-shutdown'), ...drainImageSettings().cmd];
    expect(execFileSync(program[0]!, program.slice(1), { encoding: 'utf8', env: { ...process.env, ...env } })).toBe(`envoy-shutdown ${VERSION}\n`);
  });
});

test('reproducible: the same executables and commit build the same image, byte for byte', async () => {
  const again = await buildDrainImage({
    out: join(directory.path, 'again'),
    executables: Object.fromEntries(RELEASE_ARCHES.map((arch) => [arch, shutdownExecutable(arch)])) as Record<ReleaseArch, string>,
    epoch: sourceDateEpoch(),
    ifChanged: false,
    log: () => undefined,
  });
  const first = readDrainImageLayout(releasePath(DRAIN_IMAGE_LAYOUT));
  expect(again.digest).toBe(first.digest);
  expect(again.manifests).toEqual(first.manifests);
});
