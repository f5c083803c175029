/**
 * Where the installer puts the drain program so that Envoy can execute it: the bootstrap volume
 * (the volume Envoy mounts at the directory of its `-c` file), at the same mountPath and subPath,
 * when it is a writable emptyDir with room; otherwise a dedicated emptyDir mounted read-only into Envoy.
 */
import type { Config } from '../../config/types';
import { PROGRAM_NAME } from '../../drain-contract';
import { normalizeMountPath, type EnvoyPod, type InstallMount } from '../facts';

export type InstallTarget =
  | { kind: 'bootstrap-volume'; mount: InstallMount }
  | { kind: 'fallback'; mount: InstallMount }
  | { kind: 'impossible'; reason: string };

export function installTarget(pod: EnvoyPod, config: Config): InstallTarget {
  const { installer } = config;
  if (pod.nonInitContainerNames.has(installer.containerName)) {
    return { kind: 'impossible', reason: `a container named ${installer.containerName} already exists and is not an init container` };
  }

  const bootstrap = pod.envoy.bootstrapMount;
  if (bootstrap !== undefined && pod.volumes.get(bootstrap.volumeName)?.holdsProgram === true && bootstrap.mountPath !== '/') {
    return { kind: 'bootstrap-volume', mount: bootstrap };
  }

  const existing = pod.volumes.get(installer.fallbackVolumeName);
  if (existing !== undefined && !existing.emptyDir) {
    return { kind: 'impossible', reason: `volume ${installer.fallbackVolumeName} already exists and is not an emptyDir` };
  }
  const mountPath = normalizeMountPath(installer.fallbackMountPath);
  const occupied = pod.envoy.mounts.find((m) => m.path === mountPath && m.name !== installer.fallbackVolumeName);
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
