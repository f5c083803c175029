/**
 * The pod's volumes and Envoy's mounts, as the install target and the admin address need them: which
 * volume holds Envoy's bootstrap file, which volumes the program could be written to, and whether Envoy
 * has Contour's admin socket directory.
 */
import type { Container, Pod, Volume } from '../../k8s';
import { compareExact, parseQuantity, type ExactQuantity } from '../../k8s/quantity';
import { configPath, type EnvoyArgs } from './envoy-args';

/** A mount of a volume in Envoy (or in the installer), as the install target names it. */
export interface InstallMount {
  volumeName: string;
  mountPath: string;
  subPath?: string;
  subPathExpr?: string;
}

/** What the plan needs to know of one volume. */
export interface VolumeFacts {
  emptyDir: boolean;
  /** A writable emptyDir with room for the drain program. */
  holdsProgram: boolean;
  /** An image volume's source, as written. */
  image: { reference: string | undefined; pullPolicy: string | undefined } | undefined;
}

/** `/config/` and `/config` are the same mount path. */
export function normalizeMountPath(path: string): string {
  // A loop, not /\/+$/: that regex retries from every slash of a long run of slashes (quadratic).
  let end = path.length;
  while (end > 1 && path[end - 1] === '/') end -= 1;
  return path.slice(0, end);
}

/** Envoy's mount that holds its bootstrap file (`-c`): the deepest mountPath containing it. */
export function bootstrapMount(envoy: Container, args: EnvoyArgs): InstallMount | undefined {
  const file = configPath(args);
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
function canHoldProgram(volume: Volume): boolean {
  const emptyDir = volume.emptyDir;
  if (emptyDir === undefined) return false;
  if (emptyDir.sizeLimit === undefined) return true;
  const limit = parseQuantity(emptyDir.sizeLimit);
  return limit !== undefined && compareExact(limit, parseQuantity(PROGRAM_ROOM) as ExactQuantity) >= 0;
}

/** The pod's volumes by name (the first of a name, as the API server would refuse a second). */
export function readVolumes(pod: Pod): Map<string, VolumeFacts> {
  const volumes = new Map<string, VolumeFacts>();
  for (const volume of pod.spec.volumes ?? []) {
    if (volumes.has(volume.name)) continue;
    const image = volume.image === undefined ? undefined : { reference: volume.image.reference, pullPolicy: volume.image.pullPolicy };
    volumes.set(volume.name, { emptyDir: volume.emptyDir !== undefined, holdsProgram: canHoldProgram(volume), image });
  }
  return volumes;
}

const ADMIN_SOCKET_DIRECTORY = '/admin';

/** Whether Envoy mounts an emptyDir at /admin: Contour's admin socket directory from the socket on. */
export function hasAdminSocketVolume(volumes: ReadonlyMap<string, VolumeFacts>, envoy: Container): boolean {
  const mount = (envoy.volumeMounts ?? []).find((m) => normalizeMountPath(m.mountPath) === ADMIN_SOCKET_DIRECTORY);
  return mount !== undefined && volumes.get(mount.name)?.emptyDir === true;
}
