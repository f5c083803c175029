/**
 * Where the drain program reaches Envoy (docs/pod-changes.md, "How the drain program reaches Envoy").
 *
 * `copy`: the installer puts it into the bootstrap volume (the volume Envoy mounts at the directory of
 * its `-c` file), at the same mountPath and subPath, when that is a writable emptyDir with room;
 * otherwise into drainguard's own emptyDir, mounted read-only into Envoy.
 * `image-volume`: drainguard's own volume is the drain program's image, mounted read-only into Envoy.
 *
 * drainguard's own volume is the configuration's `installer.volumeName`. One the other mode left (a pod
 * rewritten before the mode changed) is drainguard's to replace or remove; any other volume of that
 * name is the user's, and keeps the drain out.
 */
import type { Config } from '../../config/types';
import { PROGRAM_NAME } from '../../drain-contract';
import { normalizeMountPath, type EnvoyPod, type InstallMount, type VolumeFacts } from '../facts';
import { recorded } from './changes';

export type InstallTarget =
  | { kind: 'bootstrap-volume'; mount: InstallMount }
  | { kind: 'own-volume'; mount: InstallMount }
  | { kind: 'image-volume'; mount: InstallMount }
  | { kind: 'impossible'; reason: string };

/** What a volume of drainguard's own volume's name is. */
export type OwnVolume = 'absent' | 'emptyDir' | 'image-volume';

/**
 * drainguard's own volume as the pod has it, when it is drainguard's: an emptyDir (copy mode keeps using
 * one of that name, as it always did; image-volume mode takes over only the one its copy mode added,
 * which the status annotation records), or an image volume of the configured image or one the status
 * annotation records. Undefined: a volume of that name that is the user's.
 */
export function ownVolume(pod: EnvoyPod, config: Config): OwnVolume | undefined {
  const volume: VolumeFacts | undefined = pod.volumes.get(config.installer.volumeName);
  if (volume === undefined) return 'absent';
  if (volume.emptyDir) return config.installer.delivery === 'copy' || recorded(pod.status?.actions, 'installer') ? 'emptyDir' : undefined;
  if (volume.image !== undefined) {
    return recorded(pod.status?.actions, 'image-volume') || volume.image.reference === config.installer.image ? 'image-volume' : undefined;
  }
  return undefined;
}

function ownVolumeTaken(config: Config): string {
  const { volumeName, delivery } = config.installer;
  return delivery === 'copy'
    ? `volume ${volumeName} already exists and is not an emptyDir`
    : `volume ${volumeName} already exists and is not drainguard's (neither the drain program's image nor drainguard's emptyDir)`;
}

/** drainguard's own volume, mounted read-only into Envoy at the configured path, if nothing else is there. */
function ownMount(pod: EnvoyPod, config: Config): InstallMount | { reason: string } {
  const { volumeName } = config.installer;
  const mountPath = normalizeMountPath(config.installer.mountPath);
  const occupied = pod.envoy.mounts.find((m) => m.path === mountPath && m.name !== volumeName);
  if (occupied !== undefined) return { reason: `Envoy already mounts volume ${occupied.name} at ${mountPath}` };
  return { volumeName, mountPath };
}

export function installTarget(pod: EnvoyPod, config: Config): InstallTarget {
  const { installer } = config;
  const own = ownVolume(pod, config);
  if (installer.delivery === 'image-volume') {
    if (own === undefined) return { kind: 'impossible', reason: ownVolumeTaken(config) };
    const mount = ownMount(pod, config);
    return 'reason' in mount ? { kind: 'impossible', ...mount } : { kind: 'image-volume', mount };
  }

  if (pod.nonInitContainerNames.has(installer.containerName)) {
    return { kind: 'impossible', reason: `a container named ${installer.containerName} already exists and is not an init container` };
  }
  const bootstrap = pod.envoy.bootstrapMount;
  if (bootstrap !== undefined && pod.volumes.get(bootstrap.volumeName)?.holdsProgram === true && bootstrap.mountPath !== '/') {
    return { kind: 'bootstrap-volume', mount: bootstrap };
  }
  if (own === undefined) return { kind: 'impossible', reason: ownVolumeTaken(config) };
  const mount = ownMount(pod, config);
  return 'reason' in mount ? { kind: 'impossible', ...mount } : { kind: 'own-volume', mount };
}

/** The directory the installer writes to (identical path in the installer and in Envoy). */
export function installDirectory(mount: InstallMount, config: Config): string {
  return `${mount.mountPath}/${config.installer.installDirectory}`;
}

/** The program's path as Envoy's preStop sees it: copied into the install directory, or where the image volume shows it. */
export function programPathInEnvoy(target: Exclude<InstallTarget, { kind: 'impossible' }>, config: Config): string {
  if (target.kind === 'image-volume') return `${target.mount.mountPath}${config.installer.programPath}`;
  return `${installDirectory(target.mount, config)}/${PROGRAM_NAME}`;
}
