/**
 * The images the kubelet stand-in can "run", and what each holds. There is no container runtime here,
 * so an image is described by the files of this machine that make it up:
 *
 * - drainguard's own image (the Dockerfile's runtime stage: distroless Node, the server in
 *   /opt/drainguard, user 65532), made of this checkout's build: the webhook, the reporter and the helm
 *   test hook run as the chart describes them;
 * - the drain program's image (the Dockerfile's `envoy-shutdown` stage: `/envoy-shutdown` alone, user
 *   65532): the installer init container the webhook writes runs it, and an image volume of it holds it;
 * - Envoy's images: no Envoy here, so the container is the Envoy admin simulator, started when
 *   something needs Envoy's admin API (the preStop hook drainguard wrote);
 * - anything else is opaque: reported running, never executed (its hooks are skipped and logged).
 */
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { shutdownExecutable } from '../drain-executables';
import { DRAIN_IMAGE_PROGRAM_PATH, DRAIN_IMAGE_REPOSITORY } from '../../../src/config/defaults';
import { NODE, REPO_ROOT } from '../repo';

export interface FileImage {
  kind: 'files';
  /** Each path inside the image and the file or directory of this machine that provides it (bind-mounted read-only). */
  files: Record<string, string>;
  /** The image carries a libc and tools: this machine's /usr is its /usr (the distroless base's part). */
  hostUsr: boolean;
  entrypoint: string[];
  cmd: string[];
  workingDir?: string;
  env: Record<string, string>;
  user: { uid: number; gid: number };
  /** The home directory of each user of the image's /etc/passwd (the runtime sets HOME from it). */
  homes: Record<number, string>;
}

export type ImageContent = FileImage | { kind: 'envoy' } | { kind: 'opaque' };

/** The repository the chart names by default (values.yaml `image.repository`): this checkout's build plays it. */
export const DRAINGUARD_IMAGE_REPOSITORY = 'ghcr.io/drainguard/drainguard';

/** `registry/path/name` of a reference `registry/path/name[:tag][@digest]`. */
export function imageRepository(reference: string): string {
  const withoutDigest = reference.split('@')[0]!;
  const lastSlash = withoutDigest.lastIndexOf('/');
  const colon = withoutDigest.lastIndexOf(':');
  return colon > lastSlash ? withoutDigest.slice(0, colon) : withoutDigest;
}

function drainguardImage(arch: 'amd64' | 'arm64'): FileImage {
  return {
    kind: 'files',
    files: {
      '/opt/drainguard/package.json': join(REPO_ROOT, 'package.json'),
      '/opt/drainguard/node_modules': join(REPO_ROOT, 'node_modules'),
      '/opt/drainguard/dist': join(REPO_ROOT, 'dist'),
      '/nodejs/bin/node': realpathSync(NODE),
    },
    hostUsr: true,
    entrypoint: ['/nodejs/bin/node', '/opt/drainguard/dist/cli/main.js'],
    cmd: ['serve'],
    workingDir: '/opt/drainguard',
    env: { NODE_ENV: 'production' },
    user: { uid: 65532, gid: 65532 },
    // The distroless base's /etc/passwd (GoogleContainerTools/distroless common/BUILD.bazel).
    homes: { 0: '/root', 65532: '/home/nonroot', 65534: '/nonexistent' },
  };
}

/** The drain program's image: the static executable alone, at the root (FROM scratch: no /etc/passwd). */
function drainImage(arch: 'amd64' | 'arm64'): FileImage {
  return {
    kind: 'files',
    files: { [DRAIN_IMAGE_PROGRAM_PATH]: shutdownExecutable(arch) },
    hostUsr: false,
    entrypoint: [DRAIN_IMAGE_PROGRAM_PATH],
    cmd: ['version'],
    env: {},
    user: { uid: 65532, gid: 65532 },
    homes: {},
  };
}

/** Envoy's own images and the usual re-packagings of it (`envoyproxy/envoy`, `…/envoy-distroless`, `bitnami/envoy`). */
function isEnvoyImage(repository: string): boolean {
  const name = repository.slice(repository.lastIndexOf('/') + 1);
  return /^envoy(-distroless|-dev|-contrib)?$/.test(name);
}

export type ImageCatalog = (reference: string) => ImageContent;

export function defaultImageCatalog(arch: 'amd64' | 'arm64' = process.arch === 'arm64' ? 'arm64' : 'amd64'): ImageCatalog {
  return (reference) => {
    const repository = imageRepository(reference);
    if (repository === DRAINGUARD_IMAGE_REPOSITORY) return drainguardImage(arch);
    if (repository === DRAIN_IMAGE_REPOSITORY) return drainImage(arch);
    if (isEnvoyImage(repository)) return { kind: 'envoy' };
    return { kind: 'opaque' };
  };
}
