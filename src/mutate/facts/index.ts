/**
 * Stage 2, facts: the pod read once into a typed snapshot of every fact the plan's rules need. Which
 * container is Envoy and what shows it, the shutdown-manager sidecars and whose they are, each upstream
 * command parsed once (subcommand, flags, durations, addresses) with its component's release and
 * defaults, Envoy's hook classified, its mounts, probes, ports and resources, the pod's volumes, and the
 * annotations parse/ read. Nothing after this stage reads the pod itself: the plan decides from these
 * facts and the configuration, and the patch stage writes the plan.
 */
import type { Config } from '../../config/types';
import type { Container, HTTPGetAction, Probe, ResourceRequirements } from '../../k8s';
import { PROTECTED_LABEL, SAFE_TO_EVICT_LOCAL_VOLUMES, type OverridesReading, type ParsedPod, type StatusRecord } from '../parse';
import { readComponents, type CommandComponent } from './components';
import { bootstrapAdmin, readEnvoyArgs, type BootstrapAdmin } from './envoy-args';
import { describeHandler, readEnvoyPreStop, type EnvoyPreStop } from './hooks';
import { findEnvoy, type EnvoyDetection } from './identity';
import { nonTrafficPorts, type PortHint } from './ports';
import { shutdownManagerCandidates, sidecarsBeside, type SidecarFlavor } from './sidecars';
import { contourBootstrapCommands, shutdownCommands, type BootstrapCommand, type ShutdownCommand } from './upstream-commands';
import { bootstrapMount, hasAdminSocketVolume, normalizeMountPath, readVolumes, type InstallMount, type VolumeFacts } from './volumes';

export type { CarriedValue, CommandComponent, ComponentDefault, ComponentRelease, UndeterminedDefault } from './components';
export type { BootstrapAdmin } from './envoy-args';
export { isDrainguardHook, type EnvoyPreStop } from './hooks';
export { findEnvoy, imageRepository, isEnvoyImage, lookedFor, SUPERVISORS, type EnvoyDetection, type Supervisor } from './identity';
export type { PortHint } from './ports';
export { findShutdownManagers, type SidecarFlavor, type SidecarRef } from './sidecars';
export { CONTOUR_TCP_ADMIN_PORT, type AdminFlags, type BootstrapCommand, type ShutdownCommand, type ShutdownFlag, type UpstreamFlag } from './upstream-commands';
export type { CarriedSetting, FlagMeaning, ShutdownSubcommand, UpstreamProgram } from './upstream-flags';
export { normalizeMountPath, PROGRAM_ROOM, type InstallMount, type VolumeFacts } from './volumes';

/** Envoy's container, as the rules need it. */
export interface EnvoyContainer {
  readonly index: number;
  readonly name: string;
  /** What shows that this container is Envoy, after its name: `runs the envoy binary`. */
  readonly evidence: string;
  readonly preStop: EnvoyPreStop;
  /** The mount that holds its bootstrap file (`-c`), when there is one. */
  readonly bootstrapMount: InstallMount | undefined;
  /** The admin listener of an inline bootstrap (`--config-yaml`). */
  readonly configYamlAdmin: BootstrapAdmin | undefined;
  /** An emptyDir mounted at /admin: Contour's admin socket directory. */
  readonly adminSocketVolume: boolean;
  /** Its volume mounts, paths normalised (`/config/` is `/config`). */
  readonly mounts: readonly { name: string; path: string }[];
  readonly readinessHttpGet: HTTPGetAction | undefined;
  readonly livenessProbe: Probe | undefined;
  readonly startupProbe: Probe | undefined;
  /** What the pod shows of Envoy's non-traffic ports (probes, metrics, the scrape annotation). */
  readonly nonTrafficPorts: readonly PortHint[];
  readonly resources: ResourceRequirements | undefined;
  readonly runAsUser: number | undefined;
  readonly runAsGroup: number | undefined;
  readonly terminationMessagePath: string | undefined;
}

/** A shutdown-manager sidecar, as the rules need it. */
export interface Sidecar {
  readonly list: 'containers' | 'initContainers';
  readonly index: number;
  readonly name: string;
  readonly flavor: SidecarFlavor;
  /** Its preStop, described, when it is not a shutdown command drainguard reads drain settings from. */
  readonly unreadPreStop: string | undefined;
  /** Its lifecycle holds its preStop and nothing else. */
  readonly lifecycleOnlyPreStop: boolean;
  readonly resources: ResourceRequirements | undefined;
}

/** A shutdown command, with the replaced component it belongs to (when that component has defaults for it). */
export interface ShutdownCommandFacts extends ShutdownCommand {
  readonly component: CommandComponent | undefined;
}

/** A pod drainguard found Envoy in. */
export interface EnvoyPod {
  readonly kind: 'envoy';
  readonly annotations: OverridesReading;
  /** drainguard's status annotation: what an earlier pass did. */
  readonly status: StatusRecord | undefined;
  /** The `drainguard.io/protected` label's value, when the pod has one. */
  readonly protectedLabel: string | undefined;
  /** The cluster autoscaler's `safe-to-evict-local-volumes` annotation, as written. */
  readonly safeToEvictVolumes: string | undefined;
  readonly gracePeriodSeconds: number | undefined;
  readonly podRunAsUser: number | undefined;
  readonly envoy: EnvoyContainer;
  readonly sidecars: readonly Sidecar[];
  /** The sidecars' shutdown commands (preStop, then command line, sidecar by sidecar), then Envoy's own. */
  readonly shutdownCommands: readonly ShutdownCommandFacts[];
  /** `contour bootstrap` in the init containers. */
  readonly bootstrapCommands: readonly BootstrapCommand[];
  /** A Contour pod: a Contour sidecar, a `contour envoy shutdown` hook, or `contour bootstrap`. */
  readonly contourShape: boolean;
  /** An Envoy Gateway shutdown-manager sidecar. */
  readonly envoyGatewaySidecar: boolean;
  readonly volumes: ReadonlyMap<string, VolumeFacts>;
  /** The names of the pod's emptyDir volumes, in the pod's order. */
  readonly emptyDirVolumes: readonly string[];
  /** The names of the regular and ephemeral containers. */
  readonly nonInitContainerNames: ReadonlySet<string>;
  readonly initContainerNames: ReadonlySet<string>;
}

/** A pod with no Envoy drainguard would act on, and what was found instead. */
export interface PodWithoutEnvoy {
  readonly kind: 'without-envoy';
  readonly annotations: OverridesReading;
  readonly detection: { found: false; kind: 'no-containers' } | Exclude<EnvoyDetection, { found: true }>;
  /** The regular containers' names, for a message naming them. */
  readonly containerNames: readonly string[];
}

export type PodFacts = EnvoyPod | PodWithoutEnvoy;

export function readFacts(parsed: Extract<ParsedPod, { kind: 'parsed' }>, config: Config): PodFacts {
  const { pod, annotations } = parsed;
  if (!Array.isArray(pod.spec?.containers) || pod.spec.containers.length === 0) {
    return { kind: 'without-envoy', annotations, detection: { found: false, kind: 'no-containers' }, containerNames: [] };
  }
  let candidates: ReturnType<typeof shutdownManagerCandidates> | undefined;
  const readCandidates = () => (candidates ??= shutdownManagerCandidates(pod, config));
  const detection = findEnvoy(pod, config, annotations.overrides.envoyContainer, readCandidates);
  if (!detection.found) return { kind: 'without-envoy', annotations, detection, containerNames: pod.spec.containers.map((c) => c.name) };
  return readEnvoyPod(parsed, detection, sidecarsBeside(readCandidates(), detection.index));
}

function readEnvoyPod(
  { pod, annotations, status }: Extract<ParsedPod, { kind: 'parsed' }>,
  detection: Extract<EnvoyDetection, { found: true }>,
  sidecarRefs: ReturnType<typeof sidecarsBeside>,
): EnvoyPod {
  const container = pod.spec.containers[detection.index] as Container;
  const volumes = readVolumes(pod);
  const args = readEnvoyArgs(container);
  const commands = shutdownCommands(container, sidecarRefs);
  const components = readComponents(pod, args, commands);
  const bootstrapCommands = contourBootstrapCommands(pod);
  const readPreStops = new Set<string>();
  for (const command of commands) if (command.place === 'preStop') readPreStops.add(command.containerName);
  const sidecars = sidecarRefs.map(({ list, index, container: sidecar, flavor }): Sidecar => {
    const lifecycle = sidecar.lifecycle;
    const preStop = lifecycle?.preStop;
    return {
      list,
      index,
      name: sidecar.name,
      flavor,
      unreadPreStop: preStop === undefined || readPreStops.has(sidecar.name) ? undefined : describeHandler(preStop),
      lifecycleOnlyPreStop: lifecycle !== undefined && preStop !== undefined && Object.keys(lifecycle).length === 1,
      resources: sidecar.resources,
    };
  });
  const envoy: EnvoyContainer = {
    index: detection.index,
    name: container.name,
    evidence: detection.evidence,
    preStop: readEnvoyPreStop(container.lifecycle?.preStop, sidecarRefs),
    bootstrapMount: bootstrapMount(container, args),
    configYamlAdmin: bootstrapAdmin(args.configYaml),
    adminSocketVolume: hasAdminSocketVolume(volumes, container),
    mounts: (container.volumeMounts ?? []).map((mount) => ({ name: mount.name, path: normalizeMountPath(mount.mountPath) })),
    readinessHttpGet: container.readinessProbe?.httpGet,
    livenessProbe: container.livenessProbe,
    startupProbe: container.startupProbe,
    nonTrafficPorts: nonTrafficPorts(pod, container),
    resources: container.resources,
    runAsUser: container.securityContext?.runAsUser,
    runAsGroup: container.securityContext?.runAsGroup,
    terminationMessagePath: container.terminationMessagePath,
  };
  const grace = pod.spec.terminationGracePeriodSeconds;
  return {
    kind: 'envoy',
    annotations,
    status,
    protectedLabel: pod.metadata?.labels?.[PROTECTED_LABEL],
    safeToEvictVolumes: pod.metadata?.annotations?.[SAFE_TO_EVICT_LOCAL_VOLUMES],
    gracePeriodSeconds: typeof grace === 'number' ? grace : undefined,
    podRunAsUser: pod.spec.securityContext?.runAsUser,
    envoy,
    sidecars,
    shutdownCommands: commands.map((command, i) => ({ ...command, component: components[i] })),
    bootstrapCommands,
    contourShape: sidecars.some((s) => s.flavor === 'contour') || commands.some((c) => c.program === 'contour') || bootstrapCommands.length > 0,
    envoyGatewaySidecar: sidecars.some((s) => s.flavor === 'envoy-gateway'),
    volumes,
    emptyDirVolumes: (pod.spec.volumes ?? []).filter((v) => v.emptyDir !== undefined).map((v) => v.name),
    nonInitContainerNames: containerNames(pod.spec.containers, pod.spec.ephemeralContainers),
    initContainerNames: containerNames(pod.spec.initContainers),
  };
}

/** The names of the containers of `lists`, in order, added straight to the set (no joined or mapped copies). */
function containerNames(...lists: (readonly { name: string }[] | undefined)[]): Set<string> {
  const names = new Set<string>();
  for (const list of lists) if (list !== undefined) for (const container of list) names.add(container.name);
  return names;
}
