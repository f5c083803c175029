/**
 * How the drain program gets into Envoy's pod, as the patch writes it (no image is rebuilt):
 * - copy: the installer init container copies it into a volume Envoy mounts. Hardened: non-root,
 *   read-only root filesystem, no privilege escalation, no capabilities. It runs as Envoy's user so the
 *   files it leaves are Envoy's to execute.
 * - image-volume: the drain program's image is a volume Envoy mounts read-only; nothing runs before
 *   Envoy and nothing is written.
 * Whatever the other mode left in a pod rewritten before the mode changed goes, so that a pod ends the
 * same whichever mode rewrote it first.
 */
import type { Config } from '../../config/types';
import type { Container, SecurityContext, Volume, VolumeMount } from '../../k8s';
import type { EnvoyPod, InstallMount } from '../facts';
import { RECORDED, recorded } from './changes';
import { installDirectory, ownVolume, type InstallTarget } from './install';

/** Used only when Envoy runs as root: runAsNonRoot forbids inheriting uid 0 (the drain image's user, as distroless `nonroot`). */
export const NON_ROOT_FALLBACK_UID = 65532;

/** drainguard's own volume as the pod must have it, and Envoy's read-only mount of it. */
export interface PlannedOwnVolume {
  /** The volume as drainguard writes it. An emptyDir already there is kept as it is (its medium, its sizeLimit). */
  volume: Volume;
  envoyMount: VolumeMount;
}

/** The drain program's way into the pod. */
export interface PlannedInstaller {
  delivery: Config['installer']['delivery'];
  /** The installer init container (copy). In image-volume mode, one left from copy mode is removed. */
  container: Container | undefined;
  /** The name the installer goes by: an init container of that name is drainguard's. */
  containerName: string;
  /** drainguard's own volume: the emptyDir (copy, when the bootstrap volume cannot take the program) or the image volume. */
  own: PlannedOwnVolume | undefined;
  /** drainguard's own volume from the other mode goes, with Envoy's mounts of it (copy into the bootstrap volume). */
  removeOwnVolume: string | undefined;
  /** drainguard's emptyDir becomes the image volume: its name leaves the autoscaler's list of local volumes. */
  ownEmptyDirReplaced: string | undefined;
}

function mountFor(mount: InstallMount, readOnly: boolean): VolumeMount {
  const volumeMount: VolumeMount = { name: mount.volumeName, mountPath: mount.mountPath };
  if (mount.subPath !== undefined) volumeMount.subPath = mount.subPath;
  if (mount.subPathExpr !== undefined) volumeMount.subPathExpr = mount.subPathExpr;
  if (readOnly) volumeMount.readOnly = true;
  return volumeMount;
}

function installerSecurityContext(pod: EnvoyPod, warnings: string[]): SecurityContext {
  const context: SecurityContext = {
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
  const { runAsUser: envoyUser, runAsGroup: envoyGroup } = pod.envoy;
  const effectiveUser = envoyUser ?? pod.podRunAsUser;
  if (effectiveUser === 0) {
    context.runAsUser = NON_ROOT_FALLBACK_UID;
    warnings.push(
      `container ${pod.envoy.name} runs as root; the installer runs as uid ${NON_ROOT_FALLBACK_UID} instead ` +
        '(it fails if the install directory is not writable by that user)',
    );
  } else if (envoyUser !== undefined) context.runAsUser = envoyUser;
  if (envoyGroup !== undefined) context.runAsGroup = envoyGroup;
  return context;
}

/**
 * The drain program's way into the pod for `target`; `undoneSinceLastPass` when an earlier pass put it
 * there and it is gone.
 */
export function installer(
  pod: EnvoyPod,
  target: Exclude<InstallTarget, { kind: 'impossible' }>,
  config: Config,
): { installer: PlannedInstaller; warnings: string[]; undoneSinceLastPass: string[] } {
  const warnings: string[] = [];
  const settings = config.installer;
  const existing = ownVolume(pod, config);
  const planned: PlannedInstaller = {
    delivery: settings.delivery,
    container: undefined,
    containerName: settings.containerName,
    own: undefined,
    removeOwnVolume: undefined,
    ownEmptyDirReplaced: undefined,
  };
  const undoneSinceLastPass: string[] = [];

  if (target.kind === 'image-volume') {
    planned.own = {
      volume: { name: target.mount.volumeName, image: { reference: settings.image, pullPolicy: settings.imagePullPolicy } },
      envoyMount: mountFor(target.mount, true),
    };
    if (existing === 'emptyDir') planned.ownEmptyDirReplaced = target.mount.volumeName;
    if (recorded(pod.status?.actions, 'image-volume') && existing === 'absent') {
      undoneSinceLastPass.push(`image volume ${target.mount.volumeName}, ${RECORDED}, is gone; added again`);
    }
    return { installer: planned, warnings, undoneSinceLastPass };
  }

  const { mount } = target;
  planned.container = {
    name: settings.containerName,
    image: settings.image,
    imagePullPolicy: settings.imagePullPolicy,
    command: [settings.programPath, 'install', '--to', installDirectory(mount, config)],
    resources: { requests: { ...config.requests.installer } },
    securityContext: installerSecurityContext(pod, warnings),
    volumeMounts: [mountFor(mount, false)],
  };
  if (target.kind === 'own-volume') {
    planned.own = { volume: { name: mount.volumeName, emptyDir: {} }, envoyMount: mountFor(mount, true) };
  } else if (existing === 'image-volume') {
    planned.removeOwnVolume = settings.volumeName;
  }
  if (recorded(pod.status?.actions, 'installer') && !pod.initContainerNames.has(settings.containerName)) {
    undoneSinceLastPass.push(`init container ${settings.containerName}, ${RECORDED}, is gone; added again`);
  }
  return { installer: planned, warnings, undoneSinceLastPass };
}
