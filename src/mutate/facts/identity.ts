/**
 * Which container is Envoy, and what shows it (docs/design.md, "Which pods").
 */
import type { Config } from '../../config/types';
import type { Container, Pod } from '../../k8s';
import { Annotations } from '../parse';
import { isDrainguardHook } from './hooks';
import { shutdownManagerCandidates, type SidecarRef } from './sidecars';
import { basename, commandWords, WHITESPACE } from './words';

/**
 * The repositories of the images seen lately: a pod's images are read several times (Envoy's evidence,
 * the supervisors, the replaced component's release), and the same few images come in review after
 * review. Bounded: emptied when full.
 */
const repositories = new Map<string, string>();
const REMEMBERED_IMAGES = 256;

/** `registry.example.com:5000/envoyproxy/envoy:v1.33@sha256:…` → `envoyproxy/envoy`. */
export function imageRepository(image: string): string {
  let repository = repositories.get(image);
  if (repository === undefined) {
    if (repositories.size >= REMEMBERED_IMAGES) repositories.clear();
    repository = readRepository(image);
    repositories.set(image, repository);
  }
  return repository;
}

function readRepository(image: string): string {
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

/**
 * How a pod's Envoy container was found, or why none was (docs/design.md, "Which pods"). A container is
 * Envoy by evidence, never by its name alone: its command (or, without one, its first argument) runs the
 * `envoy` binary, its image is one of `config.envoyImageRepositories`, or the pod has a known upstream
 * shape (a Contour or Envoy Gateway shutdown-manager, or `contour bootstrap`) and the container has the
 * name that shape gives Envoy (`config.envoyContainerName`). The `drainguard.io/envoy-container`
 * annotation names it outright. A container that runs Envoy under a supervisor that owns Envoy's
 * lifecycle (consul-dataplane, pilot-agent...) is never drainguard's, even when the annotation names it.
 */
export type EnvoyDetection =
  /** `evidence` says what shows it, after the container's name: `runs the envoy binary`. */
  | { found: true; index: number; evidence: string }
  /** The annotation names a container the pod does not have: the pod is denied. */
  | { found: false; kind: 'missing-override'; missingOverride: string }
  /** Envoy runs under another supervisor (`evidence` says what showed it): left alone. `forced` when the annotation named it. */
  | { found: false; kind: 'supervised'; container: string; supervisor: Supervisor; evidence: string; forced: boolean }
  /** No container shows Envoy. `namedOnly` is a container with Envoy's name but no evidence. */
  | { found: false; kind: 'none'; namedOnly: string | undefined };

/** A program that starts Envoy as its child and drains and stops it itself. */
export interface Supervisor {
  name: string;
  /** Why drainguard must not add a drain of its own. */
  why: string;
  /** The image repositories' last path segments that run it. */
  images: readonly string[];
  /** Its program names (the container command's, or without one the first argument's, last path segment). */
  programs: readonly string[];
  /** Or its first arguments, for images whose entrypoint is the supervisor (`pilot-agent proxy router`). */
  firstArguments?: readonly (readonly string[])[];
}

/**
 * Supervisors found in upstream manifests (docs/upstream-shapes.md, section 5). Matched by image or by
 * program, so a mirror or a renamed image still shows the program, and a renamed container its image.
 */
export const SUPERVISORS: readonly Supervisor[] = [
  {
    name: 'consul-dataplane',
    why: "consul-dataplane starts Envoy (admin on its -envoy-admin-bind-port) and drains and stops it on its own graceful shutdown",
    images: ['consul-dataplane'],
    programs: ['consul-dataplane', 'privileged-consul-dataplane'],
  },
  {
    name: "Istio's pilot-agent",
    why: 'pilot-agent starts Envoy and drains it itself when the pod terminates',
    images: ['proxyv2'],
    programs: ['pilot-agent'],
    firstArguments: [['proxy', 'router'], ['proxy', 'sidecar']],
  },
  {
    name: 'cilium-envoy',
    why: "Cilium's agent owns this Envoy (cilium-envoy-starter runs it); its lifecycle is Cilium's",
    images: ['cilium-envoy'],
    programs: ['cilium-envoy-starter', 'cilium-envoy'],
  },
  {
    name: 'kuma-dp',
    why: "Kuma's data plane (kuma-dp) starts Envoy and drains it itself",
    images: ['kuma-dp'],
    programs: ['kuma-dp'],
  },
  {
    name: 'envoyinit (Gloo, kgateway)',
    why: 'the envoyinit wrapper starts Envoy as its child; Gloo and kgateway manage its lifecycle',
    images: ['envoy-wrapper', 'gloo-envoy-wrapper'],
    programs: ['envoyinit'],
  },
  {
    name: 'Emissary-ingress (Ambassador)',
    why: "Ambassador's entrypoint starts Envoy as a child process with its own shutdown",
    images: ['emissary', 'ambassador'],
    programs: ['entrypoint', 'busyambassador'],
  },
];

/** What `findEnvoy` looks for, for skip messages (docs/design.md, "Which pods"). */
export function lookedFor(config: Config): string {
  return (
    `looked for a container whose command (or first argument) runs the envoy binary, an image of ${config.envoyImageRepositories.join(' or ')}, ` +
    `or a container named ${config.envoyContainerName} in a known upstream shape (a Contour or Envoy Gateway shutdown-manager, or contour bootstrap)`
  );
}

/** The container's program: its command's first word, or without a command its first argument (the image's entrypoint runs it). */
export function programOf(container: Container): string | undefined {
  const first = container.command !== undefined && container.command.length > 0 ? container.command[0] : container.args?.[0];
  if (typeof first !== 'string' || first === '' || first.startsWith('-')) return undefined;
  // `envoy -c x` as one element: the program is its first word (found in place, not split off).
  const space = first.search(WHITESPACE);
  return basename(space === -1 ? first : first.slice(0, space));
}

/** The image repository's last path segment: `docker.io/hashicorp/consul-dataplane:1.6` → `consul-dataplane`. */
export function imageName(image: string | undefined): string | undefined {
  if (image === undefined) return undefined;
  const repository = imageRepository(image);
  return repository.slice(repository.lastIndexOf('/') + 1);
}

/** Whether `args` begins with one of `prefixes`. Loops, not closures: it is asked of every container. */
function startsWithAny(args: readonly string[], prefixes: readonly (readonly string[])[]): boolean {
  for (const prefix of prefixes) {
    let matches = true;
    for (let i = 0; i < prefix.length && matches; i += 1) matches = args[i] === prefix[i];
    if (matches) return true;
  }
  return false;
}

function supervisorOf(container: Container, program: string | undefined): { supervisor: Supervisor; found: string } | undefined {
  const image = imageName(container.image);
  const args = container.command === undefined || container.command.length === 0 ? (container.args ?? []) : [];
  for (const supervisor of SUPERVISORS) {
    if (program !== undefined && supervisor.programs.includes(program)) return { supervisor, found: `container ${container.name} runs ${program}` };
    if (image !== undefined && supervisor.images.includes(image)) return { supervisor, found: `container ${container.name} runs the image ${container.image}` };
    if (supervisor.firstArguments !== undefined && startsWithAny(args, supervisor.firstArguments)) {
      return { supervisor, found: `container ${container.name} runs its image's entrypoint with ${args.slice(0, 2).join(' ')}` };
    }
  }
  return undefined;
}

/**
 * Whether the pod has the shape of a project whose Envoy container drainguard knows by name: a Contour
 * or Envoy Gateway shutdown-manager other than the container itself, or `contour bootstrap` in an init
 * container.
 */
function hasKnownShape(pod: Pod, candidates: readonly SidecarRef[], envoyIndex: number): string | undefined {
  const sidecar = candidates.find((s) => s.flavor !== 'unknown' && !(s.list === 'containers' && s.index === envoyIndex));
  if (sidecar !== undefined) return `the ${sidecar.flavor === 'contour' ? 'Contour' : 'Envoy Gateway'} shape (shutdown-manager sidecar ${sidecar.container.name})`;
  const bootstrap = (pod.spec.initContainers ?? []).find((c) => c.restartPolicy !== 'Always' && commandWords(c).some((w, i, all) => basename(w) === 'contour' && all[i + 1] === 'bootstrap'));
  return bootstrap === undefined ? undefined : `the Contour shape (init container ${bootstrap.name} runs contour bootstrap)`;
}

/** Why this container is Envoy (`runs the envoy binary`), or undefined when nothing says so. */
function envoyEvidence(pod: Pod, config: Config, container: Container, program: string | undefined, index: number, candidates: () => readonly SidecarRef[]): string | undefined {
  if (program === 'envoy') return 'runs the envoy binary';
  // An earlier pass found it by a shape whose sidecar it removed: its own drain still shows it.
  if (isDrainguardHook(container.lifecycle?.preStop)) return "has drainguard's drain preStop from an earlier run";
  if (isEnvoyImage(container.image, config.envoyImageRepositories)) return `runs the Envoy image ${container.image}`;
  if (container.name !== config.envoyContainerName) return undefined;
  const shape = hasKnownShape(pod, candidates(), index);
  return shape === undefined ? undefined : `has Envoy's name in ${shape}`;
}

/**
 * The pod's Envoy container. `candidates` gives the pod's shutdown-manager candidates
 * (`shutdownManagerCandidates`), asked for only when a container's name is all that could show Envoy:
 * at most once, for the one container with Envoy's configured name.
 */
export function findEnvoy(
  pod: Pod,
  config: Config,
  overrideName: string | undefined,
  candidates: () => readonly SidecarRef[] = () => shutdownManagerCandidates(pod, config),
): EnvoyDetection {
  const containers = pod.spec.containers;
  if (overrideName !== undefined) {
    const index = containers.findIndex((c) => c.name === overrideName);
    if (index === -1) return { found: false, kind: 'missing-override', missingOverride: overrideName };
    const container = containers[index] as Container;
    const supervised = supervisorOf(container, programOf(container));
    if (supervised !== undefined) {
      return { found: false, kind: 'supervised', container: overrideName, supervisor: supervised.supervisor, evidence: supervised.found, forced: true };
    }
    return { found: true, index, evidence: `named by the ${Annotations.envoyContainer} annotation` };
  }
  let chosen: { index: number; evidence: string } | undefined;
  let supervised: { container: string; supervisor: Supervisor; found: string } | undefined;
  // Indexed: an `entries()` iterator allocates a pair per container.
  for (let index = 0; index < containers.length; index += 1) {
    const container = containers[index] as Container;
    const program = programOf(container);
    const supervisor = supervisorOf(container, program);
    if (supervisor !== undefined) {
      supervised ??= { container: container.name, ...supervisor };
      continue;
    }
    const evidence = envoyEvidence(pod, config, container, program, index, candidates);
    // The container with Envoy's configured name wins over another that runs Envoy too.
    if (evidence !== undefined && (chosen === undefined || container.name === config.envoyContainerName)) chosen = { index, evidence };
  }
  if (chosen !== undefined) return { found: true, ...chosen };
  if (supervised !== undefined) {
    return { found: false, kind: 'supervised', container: supervised.container, supervisor: supervised.supervisor, evidence: supervised.found, forced: false };
  }
  const named = containers.find((c) => c.name === config.envoyContainerName);
  return { found: false, kind: 'none', namedOnly: named?.name };
}
