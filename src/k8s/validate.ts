/**
 * The subset of Kubernetes pod validation that drainguard's mutations could break (docs/design.md,
 * "The patch"). The core runs it on its own output; the API server remains the real authority.
 */
import type { Container, LifecycleHandler, Pod, Probe, Quantity } from './index';
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

type ContainerList = 'containers' | 'initContainers' | 'ephemeralContainers';
const CONTAINER_LISTS: readonly ContainerList[] = ['containers', 'initContainers', 'ephemeralContainers'];
const HOOKS = ['preStop', 'postStart'] as const;
const PROBES = ['livenessProbe', 'readinessProbe', 'startupProbe'] as const;

/**
 * Where a problem is, named rather than indexed: the same problem keeps the same text when a removal
 * shifts indices. Built only for a problem (the validation runs on every admitted pod, and almost
 * every container has none).
 */
function where(list: ContainerList, container: Container): string {
  return `spec.${list}[name=${String(container?.name)}]`;
}

function handlerCount(handler: LifecycleHandler | Probe, kinds: readonly string[]): number {
  let count = 0;
  for (const kind of kinds) if ((handler as Record<string, unknown>)[kind] !== undefined) count += 1;
  return count;
}

function containerProblems(list: ContainerList, container: Container, volumeNames: ReadonlySet<string>, problems: string[]): void {
  const mountPaths = new Set<string>();
  for (const mount of container.volumeMounts ?? []) {
    if (!volumeNames.has(mount.name)) problems.push(`${where(list, container)}: volumeMount ${mount.mountPath} names missing volume ${mount.name}`);
    if (mountPaths.has(mount.mountPath)) problems.push(`${where(list, container)}: mountPath ${mount.mountPath} is mounted twice`);
    mountPaths.add(mount.mountPath);
  }

  for (const hook of HOOKS) {
    const handler = container.lifecycle?.[hook];
    if (handler !== undefined && handlerCount(handler, HOOK_HANDLERS) !== 1) {
      problems.push(`${where(list, container)}: lifecycle.${hook} must have exactly one handler`);
    }
  }
  for (const probeName of PROBES) {
    const probe = container[probeName];
    if (probe !== undefined && handlerCount(probe, PROBE_HANDLERS) !== 1) {
      problems.push(`${where(list, container)}: ${probeName} must have exactly one handler`);
    }
  }

  const requests = container.resources?.requests;
  const limits = container.resources?.limits;
  // Both are needed for a comparison: skip the loop (and its key list) when either is missing.
  if (requests != null && limits != null) {
    for (const resource in requests) {
      const request = requests[resource] as Quantity;
      const limit = limits[resource];
      if (limit === undefined) continue;
      const comparison = compareQuantities(request, limit);
      if (comparison === undefined) problems.push(`${where(list, container)}: ${resource} request or limit is not a valid quantity`);
      else if (comparison > 0) problems.push(`${where(list, container)}: ${resource} request ${String(request)} exceeds limit ${String(limit)}`);
    }
  }

  for (const port of container.ports ?? []) {
    if (port.name === undefined) continue;
    const problem = portNameProblem(port.name);
    if (problem !== undefined) problems.push(`${where(list, container)}: port name ${JSON.stringify(port.name)} ${problem}`);
  }
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

  // Every duplicate name first, in list order, then each container's own problems, in list order.
  const containerNames = new Set<string>();
  for (const list of CONTAINER_LISTS) {
    for (const container of pod.spec[list] ?? []) {
      const name = container?.name;
      if (containerNames.has(name)) problems.push(`${where(list, container)}: duplicate container name ${name}`);
      containerNames.add(name);
    }
  }
  for (const list of CONTAINER_LISTS) {
    for (const container of pod.spec[list] ?? []) containerProblems(list, container, volumeNames, problems);
  }
  return problems;
}
