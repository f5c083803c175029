/**
 * Where the installer puts the drain program so that Envoy can execute it: the bootstrap volume
 * (the volume Envoy mounts at the directory of its `-c` file), at the same mountPath and subPath,
 * when it is a plain disk emptyDir; otherwise a dedicated emptyDir mounted read-only into Envoy.
 */
import type { Config } from '../../config/types';
import type { Container, Pod, Volume } from '../../k8s';
import { PROGRAM_NAME } from '../../drain-contract';
import { configPath } from './args';
import { compareExact, parseQuantity, type ExactQuantity } from '../../k8s/quantity';

export interface InstallMount {
  volumeName: string;
  mountPath: string;
  subPath?: string;
  subPathExpr?: string;
}

export type InstallTarget =
  | { kind: 'bootstrap-volume'; mount: InstallMount }
  | { kind: 'fallback'; mount: InstallMount }
  | { kind: 'impossible'; reason: string };

/** `/config/` and `/config` are the same mount path. */
export function normalizeMountPath(path: string): string {
  // A loop, not /\/+$/: that regex retries from every slash of a long run of slashes (quadratic).
  let end = path.length;
  while (end > 1 && path[end - 1] === '/') end -= 1;
  return path.slice(0, end);
}

/** Envoy's mount that holds its bootstrap file: the deepest mountPath containing it. */
function bootstrapMount(envoy: Container): InstallMount | undefined {
  const file = configPath(envoy);
  if (file === undefined) return undefined;
  let best: InstallMount | undefined;
  for (const mount of envoy.volumeMounts ?? []) {
    const mountPath = normalizeMountPath(mount.mountPath);
    const contains = mountPath === '/' ? file.length > 1 : file.startsWith(mountPath) && file[mountPath.length] === '/';
    if (contains && (best === undefined || mountPath.length > best.mountPath.length)) {
      best = { volumeName: mount.name, mountPath, subPath: mount.subPath, subPathExpr: mount.subPathExpr };
    }
  }
  return best;
}

/**
 * Room the installed program takes in a volume, with a wide margin: the static executable is under
 * 1 MB on every architecture (docs/envoy-shutdown.md), and must stay under 4 MB.
 */
export const PROGRAM_ROOM = '4Mi';

/**
 * Any writable emptyDir takes the program, on disk or in memory (under 1 MB charged to the pod is
 * nothing next to Envoy), unless its sizeLimit leaves no room for it: exceeding a sizeLimit gets the pod
 * evicted. A ConfigMap, Secret or other volume cannot be written; those get drainguard's own volume.
 */
function canHoldProgram(volume: Volume | undefined): boolean {
  const emptyDir = volume?.emptyDir;
  if (emptyDir === undefined) return false;
  if (emptyDir.sizeLimit === undefined) return true;
  const limit = parseQuantity(emptyDir.sizeLimit);
  return limit !== undefined && compareExact(limit, parseQuantity(PROGRAM_ROOM) as ExactQuantity) >= 0;
}

export function findInstallTarget(pod: Pod, envoy: Container, config: Config): InstallTarget {
  const { installer } = config;
  const named = (c: Container): boolean => c.name === installer.containerName;
  if (pod.spec.containers.some(named) || (pod.spec.ephemeralContainers ?? []).some(named)) {
    return { kind: 'impossible', reason: `a container named ${installer.containerName} already exists and is not an init container` };
  }

  const volumes = pod.spec.volumes ?? [];
  const bootstrap = bootstrapMount(envoy);
  const bootstrapVolume = bootstrap && volumes.find((v) => v.name === bootstrap.volumeName);
  if (bootstrap !== undefined && canHoldProgram(bootstrapVolume) && bootstrap.mountPath !== '/') {
    return { kind: 'bootstrap-volume', mount: bootstrap };
  }

  const existing = volumes.find((v) => v.name === installer.fallbackVolumeName);
  if (existing !== undefined && existing.emptyDir === undefined) {
    return { kind: 'impossible', reason: `volume ${installer.fallbackVolumeName} already exists and is not an emptyDir` };
  }
  const mountPath = normalizeMountPath(installer.fallbackMountPath);
  const occupied = (envoy.volumeMounts ?? []).find(
    (m) => normalizeMountPath(m.mountPath) === mountPath && m.name !== installer.fallbackVolumeName,
  );
  if (occupied !== undefined) {
    return { kind: 'impossible', reason: `Envoy already mounts volume ${occupied.name} at ${mountPath}` };
  }
  return { kind: 'fallback', mount: { volumeName: installer.fallbackVolumeName, mountPath } };
}

/** The directory the installer writes to (identical path in the installer and in Envoy). */
export function installDirectory(mount: InstallMount, config: Config): string {
  return `${mount.mountPath}/${config.installer.installDirectory}`;
}

/** The program's path as Envoy's preStop sees it. */
export function installedProgramPath(mount: InstallMount, config: Config): string {
  return `${installDirectory(mount, config)}/${PROGRAM_NAME}`;
}
