/**
 * Which container is Envoy, and which are shutdown-manager sidecars.
 */
import type { Config } from '../../config/types';
import type { Container, Pod } from '../k8s';

/** `registry.example.com:5000/envoyproxy/envoy:v1.33@sha256:…` → `envoyproxy/envoy`. */
export function imageRepository(image: string): string {
  let rest = image.split('@')[0] ?? '';
  const lastSlash = rest.lastIndexOf('/');
  const tagColon = rest.indexOf(':', lastSlash + 1);
  if (tagColon !== -1) rest = rest.slice(0, tagColon);
  const parts = rest.split('/');
  // A first component with a dot, a port or `localhost` is a registry host, not a namespace.
  const first = parts[0] ?? '';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) parts.shift();
  return parts.join('/');
}

/** True when the image's repository is one of `repositories`, at any registry or mirror path prefix. */
export function isEnvoyImage(image: string | undefined, repositories: readonly string[]): boolean {
  if (image === undefined) return false;
  const repository = imageRepository(image);
  return repositories.some((wanted) => repository === wanted || repository.endsWith(`/${wanted}`));
}

export type EnvoyDetection =
  | { found: true; index: number }
  | { found: false; missingOverride?: string };

export function findEnvoy(pod: Pod, config: Config, overrideName: string | undefined): EnvoyDetection {
  const containers = pod.spec.containers;
  if (overrideName !== undefined) {
    const index = containers.findIndex((c) => c.name === overrideName);
    return index === -1 ? { found: false, missingOverride: overrideName } : { found: true, index };
  }
  const byName = containers.findIndex((c) => c.name === config.envoyContainerName);
  if (byName !== -1) return { found: true, index: byName };
  const byImage = containers.findIndex((c) => isEnvoyImage(c.image, config.envoyImageRepositories));
  return byImage === -1 ? { found: false } : { found: true, index: byImage };
}

/** Which project's shutdown-manager this is: each has a known admin address default. */
export type SidecarFlavor = 'contour' | 'envoy-gateway' | 'unknown';

export interface SidecarRef {
  list: 'containers' | 'initContainers';
  index: number;
  container: Container;
  flavor: SidecarFlavor;
}

/** Where the sidecar is in the pod, as a patch path. */
export function sidecarPath(sidecar: SidecarRef): ['spec', SidecarRef['list'], number] {
  return ['spec', sidecar.list, sidecar.index];
}

function commandLine(container: Container): string {
  return [...(container.command ?? []), ...(container.args ?? [])].join(' ');
}

/** The last path segment: `/bin/contour` → `contour`. */
export function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

const WHITESPACE = /\s/;
const WHITESPACE_RUN = /\s+/;

/**
 * The words of the container's command line: its elements, each split at whitespace (one element may
 * hold several words). Most elements hold one, and are taken without a split.
 */
function commandWords(container: Container): string[] {
  const words: string[] = [];
  for (const list of [container.command ?? [], container.args ?? []]) {
    for (const element of list) {
      if (!WHITESPACE.test(element)) {
        if (element !== '') words.push(element);
        continue;
      }
      for (const word of element.split(WHITESPACE_RUN)) if (word !== '') words.push(word);
    }
  }
  return words;
}

function sidecarFlavor(container: Container): SidecarFlavor {
  const words = commandWords(container);
  for (let i = 0; i + 2 < words.length; i += 1) {
    if (words[i + 1] === 'envoy' && words[i + 2] === 'shutdown-manager') {
      const program = basename(words[i] as string);
      if (program === 'envoy-gateway') return 'envoy-gateway';
      if (program === 'contour') return 'contour';
    }
  }
  return 'unknown';
}

function isShutdownManager(container: Container, config: Config): boolean {
  return container.name === config.shutdownManagerContainerName || commandLine(container).includes('envoy shutdown-manager');
}

/** Shutdown-manager sidecars: regular containers, and native sidecars (init containers with restartPolicy Always). */
export function findShutdownManagers(pod: Pod, config: Config, envoyIndex: number): SidecarRef[] {
  const found: SidecarRef[] = [];
  pod.spec.containers.forEach((container, index) => {
    if (index !== envoyIndex && isShutdownManager(container, config)) {
      found.push({ list: 'containers', index, container, flavor: sidecarFlavor(container) });
    }
  });
  (pod.spec.initContainers ?? []).forEach((container, index) => {
    if (container.restartPolicy === 'Always' && isShutdownManager(container, config)) {
      found.push({ list: 'initContainers', index, container, flavor: sidecarFlavor(container) });
    }
  });
  return found;
}
