/**
 * The installer init container, which copies the drain program into a volume Envoy mounts
 * (no image is rebuilt). Hardened: non-root, read-only root filesystem, no privilege escalation,
 * no capabilities. It runs as Envoy's user so the files it leaves are Envoy's to execute.
 */
import type { Config } from '../../config/types';
import { normalizeMountPath, type InstallMount } from '../facts';
import { installDirectory } from '../plan/install';
import type { Container, Pod, SecurityContext, VolumeMount } from '../../k8s';
import { jsonEqual } from '../patch/json';
import { currentEnvoy, type StepContext } from './context';

/** Used only when Envoy runs as root: runAsNonRoot forbids inheriting uid 0 (distroless `nonroot`). */
export const NON_ROOT_FALLBACK_UID = 65532;

function mountFor(mount: InstallMount, readOnly: boolean): VolumeMount {
  const volumeMount: VolumeMount = { name: mount.volumeName, mountPath: mount.mountPath };
  if (mount.subPath !== undefined) volumeMount.subPath = mount.subPath;
  if (mount.subPathExpr !== undefined) volumeMount.subPathExpr = mount.subPathExpr;
  if (readOnly) volumeMount.readOnly = true;
  return volumeMount;
}

function installerSecurityContext(pod: Pod, envoy: Container, warn: (message: string) => void): SecurityContext {
  const context: SecurityContext = {
    runAsNonRoot: true,
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    seccompProfile: { type: 'RuntimeDefault' },
  };
  const envoyUser = envoy.securityContext?.runAsUser;
  const envoyGroup = envoy.securityContext?.runAsGroup;
  const effectiveUser = envoyUser ?? pod.spec.securityContext?.runAsUser;
  if (effectiveUser === 0) {
    context.runAsUser = NON_ROOT_FALLBACK_UID;
    warn(
      `container ${envoy.name} runs as root; the installer runs as uid ${NON_ROOT_FALLBACK_UID} instead ` +
        '(it fails if the install directory is not writable by that user)',
    );
  } else if (envoyUser !== undefined) context.runAsUser = envoyUser;
  if (envoyGroup !== undefined) context.runAsGroup = envoyGroup;
  return context;
}

export function installerContainer(pod: Pod, envoy: Container, mount: InstallMount, config: Config, warn: (m: string) => void): Container {
  const { installer } = config;
  return {
    name: installer.containerName,
    image: installer.image,
    imagePullPolicy: installer.imagePullPolicy,
    command: [installer.programPath, 'install', '--to', installDirectory(mount, config)],
    resources: { requests: { ...config.requests.installer } },
    securityContext: installerSecurityContext(pod, envoy, warn),
    volumeMounts: [mountFor(mount, false)],
  };
}

export function applyInstaller(context: StepContext): void {
  const { builder, config, drain } = context;
  if (drain === undefined) return;
  const { mount } = drain.target;

  if (drain.target.kind === 'fallback') {
    const volumes = builder.draft.spec.volumes ?? [];
    if (!volumes.some((v) => v.name === mount.volumeName)) {
      builder.append(['spec', 'volumes'], { name: mount.volumeName, emptyDir: {} });
    }
    const envoy = currentEnvoy(context);
    if (!(envoy.volumeMounts ?? []).some((m) => m.name === mount.volumeName && normalizeMountPath(m.mountPath) === mount.mountPath)) {
      builder.append([...context.envoyPath, 'volumeMounts'], mountFor(mount, true));
    }
  }

  const desired = installerContainer(builder.draft, currentEnvoy(context), mount, config, context.warn);
  const initContainers = builder.draft.spec.initContainers ?? [];
  // Keyed by name: an identical installer stays; an outdated one (another drainguard version's
  // image, a moved bootstrap volume) is replaced in place so it always matches Envoy's hook.
  const existing = initContainers.findIndex((c) => c.name === config.installer.containerName);
  if (existing === -1) builder.append(['spec', 'initContainers'], desired);
  else if (!jsonEqual(initContainers[existing], desired)) builder.set(['spec', 'initContainers', existing], desired);
}
