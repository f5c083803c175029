/**
 * Which containers are shutdown-manager sidecars, and whose: regular containers, and native sidecars
 * (init containers with restartPolicy Always).
 */
import type { Config } from '../../config/types';
import type { Container, Pod } from '../../k8s';
import { commandWords, isProgram } from './words';

/** Which project's shutdown-manager this is: each has a known admin address default. */
export type SidecarFlavor = 'contour' | 'envoy-gateway' | 'unknown';

export interface SidecarRef {
  list: 'containers' | 'initContainers';
  index: number;
  container: Container;
  flavor: SidecarFlavor;
}

function commandLine(container: Container): string {
  const { command, args } = container;
  // Joined list by list (no spread of both into a third array); an empty or missing list adds no space.
  if (command === undefined || command.length === 0) return args === undefined ? '' : args.join(' ');
  if (args === undefined || args.length === 0) return command.join(' ');
  return `${command.join(' ')} ${args.join(' ')}`;
}

function sidecarFlavor(container: Container): SidecarFlavor {
  const words = commandWords(container);
  for (let i = 0; i + 2 < words.length; i += 1) {
    if (words[i + 1] === 'envoy' && words[i + 2] === 'shutdown-manager') {
      const program = words[i] as string;
      if (isProgram(program, 'envoy-gateway')) return 'envoy-gateway';
      if (isProgram(program, 'contour')) return 'contour';
    }
  }
  return 'unknown';
}

/**
 * Whether a string element of `list` holds `shutdown-manager`, or `list` has an element that is no
 * string. The joined command line can only hold `envoy shutdown-manager` when one element holds
 * `shutdown-manager` (the join adds nothing but spaces), so most containers are answered unjoined.
 */
function mayMentionShutdownManager(list: readonly unknown[] | undefined): boolean {
  if (list === undefined) return false;
  for (const element of list) if (typeof element !== 'string' || element.includes('shutdown-manager')) return true;
  return false;
}

function isShutdownManager(container: Container, config: Config): boolean {
  if (container.name === config.shutdownManagerContainerName) return true;
  if (!mayMentionShutdownManager(container.command) && !mayMentionShutdownManager(container.args)) return false;
  return commandLine(container).includes('envoy shutdown-manager');
}

/** Every container that is a shutdown-manager unless it is Envoy itself, containers first. */
export function shutdownManagerCandidates(pod: Pod, config: Config): SidecarRef[] {
  const found: SidecarRef[] = [];
  pod.spec.containers.forEach((container, index) => {
    if (isShutdownManager(container, config)) found.push({ list: 'containers', index, container, flavor: sidecarFlavor(container) });
  });
  (pod.spec.initContainers ?? []).forEach((container, index) => {
    if (container.restartPolicy === 'Always' && isShutdownManager(container, config)) {
      found.push({ list: 'initContainers', index, container, flavor: sidecarFlavor(container) });
    }
  });
  return found;
}

/** The shutdown-manager candidates without Envoy's own container. */
export function sidecarsBeside(candidates: readonly SidecarRef[], envoyIndex: number): SidecarRef[] {
  return candidates.filter((sidecar) => !(sidecar.list === 'containers' && sidecar.index === envoyIndex));
}

/** Shutdown-manager sidecars of the pod whose Envoy is `spec.containers[envoyIndex]`. */
export function findShutdownManagers(pod: Pod, config: Config, envoyIndex: number): SidecarRef[] {
  return sidecarsBeside(shutdownManagerCandidates(pod, config), envoyIndex);
}
