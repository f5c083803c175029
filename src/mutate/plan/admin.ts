/**
 * Which admin address the drain program talks to, read from the pod itself (docs/design.md, "The admin
 * address"). First usable source wins:
 *
 *  1. the `drainguard.io/admin-address` annotation;
 *  2. an admin address in Envoy's own arguments (`--config-yaml`);
 *  3. drainguard's own hook from a previous run (so a second run, with the sidecar gone, computes the
 *     same hook);
 *  4. the sidecar's `--admin-address` (its args, or its `contour envoy shutdown` preStop);
 *  5. the sidecar's `--admin-port` (Contour v1.15 to v1.18.0: TCP 127.0.0.1:PORT);
 *  6. `contour bootstrap --admin-address/--admin-port` in the init container;
 *  7. Contour's shape: an emptyDir mounted at /admin in Envoy is the admin socket's directory; a Contour
 *     pod without one runs a release from before the socket, with the admin on 127.0.0.1:9001;
 *  8. Envoy Gateway's shutdown-manager: its admin is always 127.0.0.1:19000;
 *  9. the last resort, Envoy's conventional 127.0.0.1:9901: a guess, reported as one.
 *
 * Every candidate goes through the drain contract's strict check. A port flag is never used on a pod
 * with the /admin emptyDir: from the socket on, Contour ignores it, and 127.0.0.1:9001 is then Contour's
 * read-only admin proxy listener, where the drain's POSTs do not exist.
 */
import { readAdminAddress, type AdminAddress } from '../../drain-contract';
import { CONTOUR_TCP_ADMIN_PORT, type BootstrapCommand, type EnvoyPod, type ShutdownCommand } from '../facts';
import { Annotations } from '../parse';

/** Where the drain program's admin address came from, highest precedence first. */
export type AdminAddressSource =
  | 'annotation'
  | 'envoy-args'
  | 'drainguard-hook'
  | 'sidecar-admin-address'
  | 'sidecar-admin-port'
  | 'bootstrap-flag'
  | 'admin-volume'
  | 'contour-tcp'
  | 'envoy-gateway-default'
  | 'default';

export const CONTOUR_ADMIN_SOCKET = 'unix:/admin/admin.sock';
export const ENVOY_GATEWAY_ADMIN_ADDRESS = 'http://127.0.0.1:19000';
export const DEFAULT_ADMIN_ADDRESS = 'http://127.0.0.1:9901';

export interface ResolvedAdmin {
  address: AdminAddress;
  source: AdminAddressSource;
  /** Where the address came from, in words (`--explain`, logs). */
  reason: string;
  /** Nothing in the pod confirms it: the last resort. A warning says what to set. */
  guessed: boolean;
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
  value: string;
  source: AdminAddressSource;
  reason: string;
}

/** The candidates of one kind of command (sidecar shutdown commands, or `contour bootstrap`). */
function flagCandidates(
  commands: readonly (ShutdownCommand | BootstrapCommand)[],
  socketVolume: boolean,
  sources: { address: AdminAddressSource; port: AdminAddressSource },
  warnings: string[],
): { address: Candidate[]; port: Candidate[] } {
  const address: Candidate[] = [];
  const port: Candidate[] = [];
  for (const command of commands) {
    const { admin } = command;
    if (admin.address !== undefined) {
      address.push({ value: admin.address.value, source: sources.address, reason: `${admin.address.text} of ${command.where}` });
      continue;
    }
    if (admin.port === undefined || command.program !== 'contour') continue;
    if (socketVolume) {
      warnings.push(
        `${admin.port.text} of ${command.where} ignored: Envoy has the /admin emptyDir of Contour's admin socket, ` +
          'and from the socket on Contour ignores this deprecated flag',
      );
      continue;
    }
    port.push({ value: `http://127.0.0.1:${admin.port.value}`, source: sources.port, reason: `${admin.port.text} of ${command.where}` });
  }
  return { address, port };
}

/** The admin address the drain program talks to, and the warnings about the candidates passed over. */
export function adminAddress(pod: EnvoyPod): { admin: ResolvedAdmin; warnings: string[] } {
  const warnings: string[] = [];
  const { envoy } = pod;
  const fromArgs = envoy.configYamlAdmin;
  if (fromArgs?.kind === 'unusable') {
    warnings.push(`Envoy's --config-yaml admin address (${fromArgs.description}) is not reachable from inside the pod; ignored`);
  }
  const socketVolume = envoy.adminSocketVolume;
  const sidecarFlags = flagCandidates(pod.shutdownCommands, socketVolume, { address: 'sidecar-admin-address', port: 'sidecar-admin-port' }, warnings);
  const bootstrapFlags = flagCandidates(pod.bootstrapCommands, socketVolume, { address: 'bootstrap-flag', port: 'bootstrap-flag' }, warnings);

  const candidates: Candidate[] = [];
  const annotationValue = pod.annotations.overrides.adminAddress;
  if (annotationValue !== undefined) candidates.push({ value: annotationValue, source: 'annotation', reason: `the ${Annotations.adminAddress} annotation` });
  if (fromArgs !== undefined && fromArgs.kind !== 'unusable') {
    candidates.push({ value: fromArgs.address, source: 'envoy-args', reason: "admin.address in Envoy's --config-yaml" });
  }
  const previous = envoy.preStop.kind === 'drainguard' ? envoy.preStop.admin : undefined;
  if (previous !== undefined) candidates.push({ value: previous, source: 'drainguard-hook', reason: "drainguard's own preStop from an earlier run" });
  candidates.push(...sidecarFlags.address, ...sidecarFlags.port, ...bootstrapFlags.address, ...bootstrapFlags.port);
  if (socketVolume) {
    candidates.push({ value: CONTOUR_ADMIN_SOCKET, source: 'admin-volume', reason: "Contour's admin socket: an emptyDir mounted at /admin in Envoy" });
  } else if (pod.contourShape) {
    candidates.push({
      value: `http://127.0.0.1:${CONTOUR_TCP_ADMIN_PORT}`,
      source: 'contour-tcp',
      reason: `Contour release without the admin socket: no /admin emptyDir (up to v1.18.0 Contour's admin listens on 127.0.0.1:${CONTOUR_TCP_ADMIN_PORT})`,
    });
  }
  if (pod.envoyGatewaySidecar) {
    candidates.push({ value: ENVOY_GATEWAY_ADMIN_ADDRESS, source: 'envoy-gateway-default', reason: "Envoy Gateway's shutdown-manager: its admin is always 127.0.0.1:19000" });
  }

  const bind: ResolvedAdmin['bind'] =
    fromArgs?.kind !== 'tcp' ? 'unknown' : ['0.0.0.0', '::', '[::]'].includes(fromArgs.bindHost) ? 'wildcard' : 'loopback';
  for (const candidate of candidates) {
    const reading = readAdminAddress(candidate.value);
    if (reading.ok) return { admin: { address: reading.address, source: candidate.source, reason: candidate.reason, guessed: false, bind }, warnings };
    warnings.push(`admin address ${JSON.stringify(candidate.value)} (from ${candidate.reason}) is not a unix socket or loopback address; ignored`);
  }
  const fallback = readAdminAddress(DEFAULT_ADMIN_ADDRESS);
  if (!fallback.ok) throw new Error(`drainguard bug: the default admin address is refused: ${fallback.problem}`);
  const reason = "Envoy's conventional admin port; nothing in the pod shows where Envoy's admin listens";
  return { admin: { address: fallback.address, source: 'default', reason, guessed: true, bind }, warnings };
}

/** The warning for a guessed admin address: what drainguard used, and what to set instead. */
export function guessedAdminWarning(envoyName: string, admin: ResolvedAdmin): string {
  return (
    `container ${envoyName}: the drain's admin address ${admin.address.text} is a guess (Envoy's usual admin port; nothing in ` +
    `the pod shows where the admin listens): set the ${Annotations.adminAddress} annotation if it listens elsewhere`
  );
}
