/**
 * The installer init container, which copies the drain program into a volume Envoy mounts
 * (no image is rebuilt). Hardened: non-root, read-only root filesystem, no privilege escalation,
 * no capabilities. It runs as Envoy's user so the files it leaves are Envoy's to execute.
 */
import type { Config } from '../../config/types';
import type { Container, SecurityContext, VolumeMount } from '../../k8s';
import type { EnvoyPod, InstallMount } from '../facts';
import { RECORDED, recorded } from './changes';
import { installDirectory, type InstallTarget } from './install';

/** Used only when Envoy runs as root: runAsNonRoot forbids inheriting uid 0 (distroless `nonroot`). */
export const NON_ROOT_FALLBACK_UID = 65532;

/** The installer, and for the fallback target the volume it needs and Envoy's read-only mount of it. */
export interface PlannedInstaller {
  container: Container;
  /** drainguard's own emptyDir, when the program cannot go into the bootstrap volume. */
  fallback?: { volumeName: string; envoyMount: VolumeMount };
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
 * The installer init container for `target`, which copies the program into the volume Envoy mounts;
 * `undoneSinceLastPass` when an earlier pass installed it and it is gone.
 */
export function installer(
  pod: EnvoyPod,
  target: Exclude<InstallTarget, { kind: 'impossible' }>,
  config: Config,
): { installer: PlannedInstaller; warnings: string[]; undoneSinceLastPass: string[] } {
  const warnings: string[] = [];
  const { mount } = target;
  const settings = config.installer;
  const container: Container = {
    name: settings.containerName,
    image: settings.image,
    imagePullPolicy: settings.imagePullPolicy,
    command: [settings.programPath, 'install', '--to', installDirectory(mount, config)],
    resources: { requests: { ...config.requests.installer } },
    securityContext: installerSecurityContext(pod, warnings),
    volumeMounts: [mountFor(mount, false)],
  };
  const planned: PlannedInstaller = { container };
  if (target.kind === 'fallback') planned.fallback = { volumeName: mount.volumeName, envoyMount: mountFor(mount, true) };
  const gone = recorded(pod.status?.actions, 'installer') && !pod.initContainerNames.has(settings.containerName);
  return { installer: planned, warnings, undoneSinceLastPass: gone ? [`init container ${settings.containerName}, ${RECORDED}, is gone; added again`] : [] };
}
