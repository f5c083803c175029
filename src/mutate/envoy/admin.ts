/**
 * Which admin address the drain program talks to. Precedence (docs/design.md, "The admin address"), first usable wins:
 * the annotation > an admin address in Envoy's own arguments (`--config-yaml`) > drainguard's own
 * hook from a previous run (so a second run, with the sidecar gone, computes the same hook) > the
 * sidecar's `--admin-address` flag > the known sidecar defaults > a unix socket in an emptyDir
 * mounted at /admin > Envoy's conventional `http://127.0.0.1:9901`.
 */
import { readAdminAddress, type AdminAddress } from '../../drain-contract';
import type { Container, Pod } from '../k8s';
import { argvTokens, bootstrapAdmin, envoyTokens, flagValue, loopbackAddressFor } from './args';
import type { SidecarRef } from './detect';
import { drainguardHookAdmin } from './hooks';
import { normalizeMountPath } from './install-target';

/** Where the drain program's admin address came from, highest precedence first. */
export type AdminAddressSource =
  | 'annotation'
  | 'envoy-args'
  | 'drainguard-hook'
  | 'sidecar-flag'
  | 'contour-default'
  | 'envoy-gateway-default'
  | 'admin-volume'
  | 'default';

export const CONTOUR_ADMIN_ADDRESS = 'unix:/admin/admin.sock';
export const ENVOY_GATEWAY_ADMIN_ADDRESS = 'http://127.0.0.1:19000';
export const DEFAULT_ADMIN_ADDRESS = 'http://127.0.0.1:9901';
const ADMIN_SOCKET_DIRECTORY = '/admin';

export interface ResolvedAdmin {
  address: AdminAddress;
  source: AdminAddressSource;
  /**
   * Where Envoy's admin listener is bound, as far as Envoy's own arguments show: only a `wildcard`
   * bind is reachable by the kubelet and so usable as a probe target. `unknown` must be treated as
   * unreachable: a liveness probe on a loopback-only admin fails forever and restarts Envoy in a loop.
   * Only Envoy's arguments are trusted for this, because they survive the mutation (a second run
   * must decide the same).
   */
  bind: 'wildcard' | 'loopback' | 'unknown';
}

interface Candidate {
  value: string | undefined;
  source: AdminAddressSource;
}

/** Flag values such as Contour's `--admin-address=/admin/admin.sock` or `127.0.0.1:9001`. */
function adminAddressFromFlag(value: string): string | undefined {
  if (value.startsWith('/')) return `unix:${value}`;
  if (value.startsWith('unix:') || value.startsWith('http://')) return value;
  const hostPort = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(value);
  if (hostPort) return loopbackAddressFor(hostPort[1] as string, Number(hostPort[2]));
  return undefined;
}

function sidecarFlagAddress(sidecars: readonly SidecarRef[]): string | undefined {
  for (const { container } of sidecars) {
    // Contour's flag may sit on the sidecar itself or on its `contour envoy shutdown` preStop.
    for (const tokens of [envoyTokens(container), argvTokens(container.lifecycle?.preStop?.exec?.command ?? [])]) {
      const value = flagValue(tokens, ['--admin-address']);
      if (value !== undefined) return adminAddressFromFlag(value) ?? value;
    }
  }
  return undefined;
}

function sidecarDefault(sidecars: readonly SidecarRef[]): Candidate {
  if (sidecars.some((s) => s.flavor === 'contour')) return { value: CONTOUR_ADMIN_ADDRESS, source: 'contour-default' };
  if (sidecars.some((s) => s.flavor === 'envoy-gateway')) {
    return { value: ENVOY_GATEWAY_ADMIN_ADDRESS, source: 'envoy-gateway-default' };
  }
  return { value: undefined, source: 'contour-default' };
}

function adminVolumeSocket(pod: Pod, envoy: Container): string | undefined {
  const mount = (envoy.volumeMounts ?? []).find((m) => normalizeMountPath(m.mountPath) === ADMIN_SOCKET_DIRECTORY);
  const volume = mount && (pod.spec.volumes ?? []).find((v) => v.name === mount.name);
  return volume?.emptyDir !== undefined ? `unix:${ADMIN_SOCKET_DIRECTORY}/admin.sock` : undefined;
}

export function resolveAdminAddress(
  pod: Pod,
  envoy: Container,
  sidecars: readonly SidecarRef[],
  annotationValue: string | undefined,
): { admin: ResolvedAdmin; warnings: string[] } {
  const warnings: string[] = [];
  const fromArgs = bootstrapAdmin(envoy);
  if (fromArgs?.kind === 'unusable') {
    warnings.push(`Envoy's --config-yaml admin address (${fromArgs.description}) is not reachable from inside the pod; ignored`);
  }
  const candidates: Candidate[] = [
    { value: annotationValue, source: 'annotation' },
    {
      value: fromArgs !== undefined && fromArgs.kind !== 'unusable' ? fromArgs.address : undefined,
      source: 'envoy-args',
    },
    { value: drainguardHookAdmin(envoy.lifecycle?.preStop), source: 'drainguard-hook' },
    { value: sidecarFlagAddress(sidecars), source: 'sidecar-flag' },
    sidecarDefault(sidecars),
    { value: adminVolumeSocket(pod, envoy), source: 'admin-volume' },
  ];
  const bind: ResolvedAdmin['bind'] =
    fromArgs?.kind !== 'tcp' ? 'unknown' : ['0.0.0.0', '::', '[::]'].includes(fromArgs.bindHost) ? 'wildcard' : 'loopback';
  for (const candidate of candidates) {
    if (candidate.value === undefined) continue;
    const reading = readAdminAddress(candidate.value);
    if (reading.ok) return { admin: { address: reading.address, source: candidate.source, bind }, warnings };
    warnings.push(`admin address ${JSON.stringify(candidate.value)} (from ${candidate.source}) is not a unix socket or loopback address; ignored`);
  }
  const fallback = readAdminAddress(DEFAULT_ADMIN_ADDRESS);
  if (!fallback.ok) throw new Error(`drainguard bug: the default admin address is refused: ${fallback.problem}`);
  return { admin: { address: fallback.address, source: 'default', bind }, warnings };
}
