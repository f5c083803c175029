/**
 * The drain program's own image (docs/development.md, "The drain image"): the static `envoy-shutdown`
 * executables of both architectures, each alone in the one layer of a linux/amd64 or linux/arm64 image,
 * under an OCI image index, written as an OCI image layout into the release folder. The webhook writes
 * the image into Envoy pods: the installer init container runs it (`install --to DIR`), or Envoy mounts
 * it as an image volume and its preStop runs the executable from there.
 *
 * Built without a Docker engine by go-containerregistry's `crane`, pinned in release/crane/go.mod and
 * built from the Go module proxy with `go build` into node_modules/.cache (keyed by that module's go.mod
 * and go.sum, built when missing). crane assembles images in a registry, so the build runs crane's own
 * in-memory registry on a loopback port for as long as it takes, then pulls the index from it into the
 * layout. The image's settings (the executable's path, USER, ENTRYPOINT, CMD, LABELs) are read from the
 * Dockerfile's envoy-shutdown stage, so `docker build --target envoy-shutdown` makes the same image.
 *
 * Reproducible: the layer is a tar of the one file (owner 0, mode 0755, mtime SOURCE_DATE_EPOCH or the
 * last commit's, as the archives), crane compresses it the same way every time and leaves the config's
 * creation time at its zero value, so the same executables and commit give the same digest.
 */
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { VERSION } from '../src/version';
import { DRAIN_IMAGE_STAGE, parseDockerfile, stageImageConfig } from '../test/support/dockerfile-lint';
import { REPO_ROOT } from '../test/support/repo';
import { reproducibleTarFlags, run, sha256File, startServer } from './files';
import { CACHE, RELEASE_ARCHES, type ReleaseArch } from './pinned-node';

/** The layout's directory in the release folder. */
export const DRAIN_IMAGE_LAYOUT = 'envoy-shutdown-image';
/** The Go module that pins crane. */
export const CRANE_MODULE = join(REPO_ROOT, 'release/crane');
const CRANE_PACKAGE = 'github.com/google/go-containerregistry/cmd/crane';

/** What the Dockerfile's envoy-shutdown stage says the image is. */
export interface DrainImageSettings {
  /** The executable's path in the image (the stage's one COPY destination). */
  programPath: string;
  user: string;
  entrypoint: string[];
  cmd: string[];
  labels: Record<string, string>;
}

export function drainImageSettings(): DrainImageSettings {
  const stage = parseDockerfile(readFileSync(join(REPO_ROOT, 'Dockerfile'), 'utf8')).stages.find((s) => s.name === DRAIN_IMAGE_STAGE);
  if (stage === undefined) throw new Error(`the Dockerfile has no ${DRAIN_IMAGE_STAGE} stage to read the drain image's settings from`);
  const copies = stage.instructions.filter((i) => i.keyword === 'COPY');
  const programPath = copies.length === 1 ? copies[0]!.args.split(/\s+/).pop() : undefined;
  const { user, entrypoint, cmd, labels } = stageImageConfig(stage);
  if (programPath === undefined || !programPath.startsWith('/') || user === undefined || entrypoint === undefined || cmd === undefined) {
    throw new Error(`the Dockerfile's ${DRAIN_IMAGE_STAGE} stage must COPY one file and set USER, ENTRYPOINT and CMD (exec form)`);
  }
  // crane's flags take lists separated by commas.
  for (const value of [...entrypoint, ...cmd, ...Object.values(labels)]) {
    if (value.includes(',')) throw new Error(`the ${DRAIN_IMAGE_STAGE} stage's ${JSON.stringify(value)} holds a comma, which crane's flags would split`);
  }
  return { programPath, user, entrypoint, cmd, labels };
}

/** `go`: on PATH, else where Go's own installer puts it. */
function goBinary(): string {
  for (const dir of [...(process.env.PATH ?? '').split(delimiter), '/usr/local/go/bin']) {
    if (dir !== '' && existsSync(join(dir, 'go'))) return join(dir, 'go');
  }
  throw new Error('the drain image is built with crane, which `go build` builds: install Go (the version release/crane/go.mod names, or newer) on PATH or in /usr/local/go');
}

/** The pinned crane, built when the cache lacks it. */
export function craneBinary(log: (line: string) => void = () => undefined): string {
  const pins = ['go.mod', 'go.sum'].map((name) => readFileSync(join(CRANE_MODULE, name)));
  const key = createHash('sha256').update(Buffer.concat(pins)).digest('hex').slice(0, 16);
  const target = join(CACHE, `crane-${key}`, 'crane');
  if (existsSync(target)) return target;
  log(`crane: go build ${CRANE_PACKAGE} (release/crane/go.mod)`);
  mkdirSync(dirname(target), { recursive: true });
  const building = `${target}.${process.pid}`;
  // -mod=readonly: go.sum must already hold every module; GOTOOLCHAIN=local: no Go download.
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOTOOLCHAIN: 'local' };
  run([goBinary(), 'build', '-trimpath', '-o', building, CRANE_PACKAGE], { cwd: CRANE_MODULE, env });
  renameSync(building, target);
  return target;
}

/** The image as its layout holds it. */
export interface DrainImage {
  /** The layout's directory. */
  layout: string;
  /** The image index's digest: what the chart pins and `crane push` publishes. */
  digest: string;
  /** Each platform's image manifest. */
  manifests: { platform: string; digest: string }[];
}

/** An OCI content descriptor, as an index or a manifest lists one. */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  platform?: { os: string; architecture: string };
}

export function readDrainImageLayout(layout: string): DrainImage {
  const top = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  const [index] = top.manifests;
  if (top.manifests.length !== 1 || index === undefined || !index.mediaType.endsWith('image.index.v1+json')) {
    throw new Error(`${layout}/index.json must point at exactly one image index`);
  }
  const blob = (digest: string) => join(layout, 'blobs', ...digest.split(':'));
  const manifests = (JSON.parse(readFileSync(blob(index.digest), 'utf8')) as { manifests: Descriptor[] }).manifests;
  return {
    layout,
    digest: index.digest,
    manifests: manifests.map((m) => ({ platform: `${m.platform?.os ?? '?'}/${m.platform?.architecture ?? '?'}`, digest: m.digest })),
  };
}

export interface DrainImageOptions {
  /** The release folder: the layout goes into DRAIN_IMAGE_LAYOUT in it. */
  out: string;
  executables: Record<ReleaseArch, string>;
  /** Seconds since the epoch that the layer's file carries. */
  epoch: string;
  ifChanged: boolean;
  log: (line: string) => void;
}

/** Builds the layout (with `ifChanged`, only when an input changed); returns what it holds. */
export async function buildDrainImage(options: DrainImageOptions): Promise<DrainImage> {
  const { out, executables, epoch, ifChanged, log } = options;
  const target = join(out, DRAIN_IMAGE_LAYOUT);
  const settings = drainImageSettings();
  const crane = craneBinary(log);
  const tarFlags = reproducibleTarFlags(epoch);
  const inputs = JSON.stringify({
    crane: sha256File(crane),
    settings,
    version: VERSION,
    tarFlags,
    executables: RELEASE_ARCHES.map((arch) => [arch, sha256File(executables[arch])]),
  });
  const stamp = join(CACHE, 'stamps', `${createHash('sha256').update(target).digest('hex').slice(0, 16)}.inputs`);
  if (ifChanged && existsSync(join(target, 'index.json')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === inputs) return readDrainImageLayout(target);

  log(`${DRAIN_IMAGE_LAYOUT}: the drain image (crane)`);
  const staging = join(CACHE, `${DRAIN_IMAGE_LAYOUT}.staging-${process.pid}`);
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    const entry = settings.programPath.slice(1);
    const layers = RELEASE_ARCHES.map((arch) => {
      const tree = join(staging, `tree-${arch}`);
      mkdirSync(dirname(join(tree, entry)), { recursive: true });
      copyFileSync(executables[arch], join(tree, entry));
      chmodSync(join(tree, entry), 0o755);
      const layer = join(staging, `layer-${arch}.tar`);
      run(['tar', ...tarFlags, '--sort=name', '-cf', layer, '-C', tree, entry.split('/')[0]!]);
      return { arch, layer };
    });
    // crane's in-memory registry, on a loopback port of its choosing.
    const registry = await startServer(crane, ['registry', 'serve', '--address', '127.0.0.1:0'], /serving on port (\d+)/);
    try {
      const repository = `127.0.0.1:${registry.address}/envoy-shutdown`;
      for (const { arch, layer } of layers) {
        const tag = `${repository}:${arch}`;
        run([crane, 'append', '--oci-empty-base', '-f', layer, '-t', tag]);
        const labels = Object.entries(settings.labels).flatMap(([key, value]) => ['--label', `${key}=${value}`]);
        run([crane, 'mutate', tag, '--set-platform', `linux/${arch}`, '--user', settings.user, '--entrypoint', settings.entrypoint.join(','), '--cmd', settings.cmd.join(','), ...labels, '-t', tag]);
      }
      run([crane, 'index', 'append', ...RELEASE_ARCHES.flatMap((arch) => ['-m', `${repository}:${arch}`]), '-t', `${repository}:${VERSION}`]);
      run([crane, 'pull', '--format=oci', `${repository}:${VERSION}`, join(staging, 'layout')]);
    } finally {
      await registry.stop();
    }
    rmSync(target, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    renameSync(join(staging, 'layout'), target);
    mkdirSync(dirname(stamp), { recursive: true });
    writeFileSync(stamp, inputs);
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return readDrainImageLayout(target);
}
