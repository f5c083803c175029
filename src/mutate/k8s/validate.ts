/**
 * The subset of Kubernetes pod validation that drainguard's mutations could break (docs/design.md,
 * "The patch"). The core runs it on its own output; the API server remains the real authority.
 */
import type { Container, LifecycleHandler, Pod, Probe } from './index';
import { compareQuantities } from './quantity';

const HOOK_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'sleep'] as const;
const PROBE_HANDLERS = ['exec', 'httpGet', 'tcpSocket', 'grpc'] as const;
const MAX_PORT_NAME_LENGTH = 15;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** RFC 1123 label: container names, volume names. */
export function isDnsLabel(name: string): boolean {
  return DNS_LABEL.test(name);
}

/** Kubernetes IsValidPortName (IANA_SVC_NAME): 1-15 of [a-z0-9-], a letter, no edge or double hyphen. */
export function portNameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > MAX_PORT_NAME_LENGTH) return `must be 1-${MAX_PORT_NAME_LENGTH} characters`;
  if (!/^[-a-z0-9]+$/.test(name)) return 'must contain only lower-case letters, digits and "-"';
  if (!/[a-z]/.test(name)) return 'must contain at least one letter';
  if (name.startsWith('-') || name.endsWith('-')) return 'must not begin or end with "-"';
  if (name.includes('--')) return 'must not contain "--"';
  return undefined;
}

interface NamedContainer {
  container: Container;
  where: string;
}

function allContainers(pod: Pod): NamedContainer[] {
  const lists = [
    ['containers', pod.spec.containers ?? []],
    ['initContainers', pod.spec.initContainers ?? []],
    ['ephemeralContainers', pod.spec.ephemeralContainers ?? []],
  ] as const;
  return lists.flatMap(([list, containers]) =>
    // Named, not indexed: the same problem keeps the same text when a removal shifts indices.
    containers.map((container) => ({ container, where: `spec.${list}[name=${String(container?.name)}]` })),
  );
}

function handlerCount(handler: LifecycleHandler | Probe, kinds: readonly string[]): number {
  return kinds.filter((kind) => (handler as Record<string, unknown>)[kind] !== undefined).length;
}

function containerProblems({ container, where }: NamedContainer, volumeNames: ReadonlySet<string>): string[] {
  const problems: string[] = [];

  const mountPaths = new Set<string>();
  for (const mount of container.volumeMounts ?? []) {
    if (!volumeNames.has(mount.name)) problems.push(`${where}: volumeMount ${mount.mountPath} names missing volume ${mount.name}`);
    if (mountPaths.has(mount.mountPath)) problems.push(`${where}: mountPath ${mount.mountPath} is mounted twice`);
    mountPaths.add(mount.mountPath);
  }

  for (const hook of ['preStop', 'postStart'] as const) {
    const handler = container.lifecycle?.[hook];
    if (handler !== undefined && handlerCount(handler, HOOK_HANDLERS) !== 1) {
      problems.push(`${where}: lifecycle.${hook} must have exactly one handler`);
    }
  }
  for (const probeName of ['livenessProbe', 'readinessProbe', 'startupProbe'] as const) {
    const probe = container[probeName];
    if (probe !== undefined && handlerCount(probe, PROBE_HANDLERS) !== 1) {
      problems.push(`${where}: ${probeName} must have exactly one handler`);
    }
  }

  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  for (const [resource, request] of Object.entries(requests)) {
    const limit = limits[resource];
    if (limit === undefined) continue;
    const comparison = compareQuantities(request, limit);
    if (comparison === undefined) problems.push(`${where}: ${resource} request or limit is not a valid quantity`);
    else if (comparison > 0) problems.push(`${where}: ${resource} request ${String(request)} exceeds limit ${String(limit)}`);
  }

  for (const port of container.ports ?? []) {
    if (port.name === undefined) continue;
    const problem = portNameProblem(port.name);
    if (problem !== undefined) problems.push(`${where}: port name ${JSON.stringify(port.name)} ${problem}`);
  }
  return problems;
}

/** Every violation found, [] when the pod is valid by these rules. */
export function validatePod(pod: Pod): string[] {
  const problems: string[] = [];
  if (!Array.isArray(pod?.spec?.containers) || pod.spec.containers.length === 0) {
    return ['spec.containers must have at least one container'];
  }

  const volumeNames = new Set<string>();
  for (const volume of pod.spec.volumes ?? []) {
    if (volumeNames.has(volume.name)) problems.push(`spec.volumes: duplicate volume name ${volume.name}`);
    volumeNames.add(volume.name);
  }

  const containerNames = new Set<string>();
  const containers = allContainers(pod);
  for (const entry of containers) {
    const name = entry.container?.name;
    if (containerNames.has(name)) problems.push(`${entry.where}: duplicate container name ${name}`);
    containerNames.add(name);
  }
  for (const entry of containers) {
    // One by one, not push(...): a container may have more problems than a call takes arguments.
    for (const problem of containerProblems(entry, volumeNames)) problems.push(problem);
  }
  return problems;
}
