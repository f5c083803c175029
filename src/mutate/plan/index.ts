/**
 * Stage 3, plan: what drainguard does to the pod, decided from its facts and the configuration alone.
 * Each rule is a small function of the facts (and of what the rules before it decided), in the order
 * `planEnvoyPod` runs them; each value the timeline shows carries the trail its rule wrote of where it
 * came from, which `--explain` prints. The patch stage only writes the plan.
 */
import type { Config } from '../../config/types';
import type { LifecycleHandler, Probe } from '../../k8s';
import type { EnvoyPod, PodFacts } from '../facts';
import { PROTECTED_LABEL } from '../parse';
import { adminAddress, guessedAdminWarning } from './admin';
import { carriedSettings, undeterminedWarnings } from './carried';
import { drainHook, terminationMessagePath } from './drain';
import { DELIVERY_ACTIONS } from './changes';
import { safeToEvict, type SafeToEvictChange } from './evict';
import { envoyHook } from './hook';
import { installTarget, programPathInEnvoy } from './install';
import { installer, type PlannedInstaller } from './installer';
import { listenersNotCounted } from './listeners';
import { livenessProbes } from './liveness';
import { resourceRequests, type PlannedRequests } from './requests';
import { invalidAnnotations, optedOut, withoutEnvoy, type Deny, type Skip } from './scope';
import { sidecarHandling, type SidecarPlace } from './sidecars';
import { shutdownTimeline, type ShutdownTimeline } from './timeline';
import { drainTiming, gracePeriod } from './timing';

export type { MutationAction } from './changes';
export type { SafeToEvictChange } from './evict';
export type { PlannedInstaller, PlannedOwnVolume } from './installer';
export type { PlannedRequests } from './requests';
export type { Deny, Skip, SkipReason } from './scope';
export type { SidecarPlace } from './sidecars';
export type { AdminAddressSource, DeliveryReport, DrainSetting, DrainValueOrigin, DrainValueSource, ProbeSource, ShutdownTimeline } from './timeline';
export { optedOut };

/**
 * An Envoy pod whose drain cannot go in, left whole: without the drain, requests and probes alone
 * would have it reported as handled ("no half protection").
 */
export interface LeaveWhole {
  kind: 'leave-whole';
  message: string;
  /** A protected label it carries goes (a template copied from an injected one): nothing there drains. */
  removeProtectedLabel: boolean;
  warnings: string[];
}

/**
 * An Envoy pod whose drain goes in: every change, in the order the patch stage makes them (the pod is
 * also labelled protected, and the status annotation records what changed).
 */
export interface Protect {
  kind: 'protect';
  /** Envoy's place in `spec.containers`. */
  envoyIndex: number;
  /** Requests for Envoy and for every sidecar that stays, where some are missing. */
  requests: PlannedRequests[];
  /** A liveness probe for an Envoy without one, and the startup probe for one that had neither. */
  livenessProbe: Probe | undefined;
  startupProbe: Probe | undefined;
  installer: PlannedInstaller;
  preStop: LifecycleHandler;
  /** In disarm mode: the sidecars losing their preStop and liveness probe. */
  disarm: (SidecarPlace & { wholeLifecycle: boolean })[];
  /** The cluster autoscaler's list of evictable local volumes, with every emptyDir; undefined when it already lists them. */
  safeToEvict: SafeToEvictChange;
  /** The opt-in grace period floor, when it raises the grace period. */
  gracePeriodSeconds: number | undefined;
  /** In remove mode: the sidecars to remove, in an order that shifts no index under a later removal. */
  removals: SidecarPlace[];
  /**
   * What the status annotation says an earlier pass did, less the other delivery mode's change: a pod
   * rewritten in copy mode and admitted again under image-volume (or the reverse) records only the mode
   * that holds now.
   */
  previousActions: readonly string[];
  timeline: ShutdownTimeline;
  warnings: string[];
}

export type Plan = Skip | Deny | LeaveWhole | Protect;

function leaveWhole(pod: EnvoyPod, blocked: string): LeaveWhole {
  const message = `${blocked}: the drain cannot be installed, so drainguard leaves the pod whole (no drain, probes, requests or installer; a shutdown-manager stays as it is)`;
  const warnings = pod.annotations.warnings.concat(message);
  const removeProtectedLabel = pod.protectedLabel !== undefined;
  if (removeProtectedLabel) warnings.push(`label ${PROTECTED_LABEL} removed: the drain was not installed, so this pod is not protected`);
  return { kind: 'leave-whole', message, removeProtectedLabel, warnings };
}

/** The rules for an Envoy pod, in the order they decide. */
function planEnvoyPod(pod: EnvoyPod, config: Config): Plan {
  const { envoy } = pod;
  const { overrides } = pod.annotations;
  // 1. Envoy's preStop: drainguard's own or the shutdown-manager's is replaced, a user's is kept.
  const hook = envoyHook(pod);
  if ('blocked' in hook) return leaveWhole(pod, hook.blocked);
  // 2. Where the program goes: the bootstrap volume, drainguard's own emptyDir or image volume, or nowhere.
  const target = installTarget(pod, config);
  if (target.kind === 'impossible') return leaveWhole(pod, target.reason);
  // 3. The sidecars: removed or disarmed.
  const sidecars = sidecarHandling(pod, config);
  // 4. What the replaced commands gave the drain: their flags, else their components' defaults.
  const carried = carriedSettings(pod.shutdownCommands, sidecars.mode);
  // 5. The grace period, and the drain's timing inside it.
  const grace = gracePeriod(pod.gracePeriodSeconds, config);
  const timing = drainTiming(grace.effectiveSeconds, { overrides, previous: hook.previous, sidecar: carried.values }, config);
  // 6. The admin address the drain talks to.
  const { admin, warnings: adminWarnings } = adminAddress(pod);
  // 7. The listeners the drain does not count.
  const excluded = listenersNotCounted(pod, hook.previous, admin.address.kind === 'tcp' ? admin.address.port : undefined);
  // 8. Where the drain writes its record.
  const record = terminationMessagePath(envoy);
  // 9. The drain hook itself.
  const program = programPathInEnvoy(target, config);
  const preStop = drainHook(program, { admin, timing, excluded, recordPath: record.path });
  // 10. Requests, for Envoy and for the sidecars that stay.
  const requests = resourceRequests(pod, config, sidecars.mode === 'disarm');
  // 11. The liveness and startup probes.
  const probes = livenessProbes(envoy, admin, config);
  // 12. The installer init container and drainguard's own emptyDir, or the image volume.
  const planned = installer(pod, target, config);
  // 13. The emptyDirs the cluster autoscaler may evict, the installer's own among them.
  const evictable = safeToEvict(pod, planned.installer);
  // (The protected label is no rule: the patch stage labels exactly the pods whose drain goes in.)

  // The warnings in the order the user reads them (the goldens record it): what the drain's numbers
  // and admin address became, what a later change undid of an earlier pass (restored now), what the
  // replaced sidecar's flags and defaults became, then what the changes themselves need.
  const warnings = joined(
    pod.annotations.warnings,
    timing.warnings,
    adminWarnings,
    hook.undoneSinceLastPass,
    planned.undoneSinceLastPass,
    sidecars.undoneSinceLastPass,
    carried.warnings,
    undeterminedWarnings(carried, overrides, hook.previous !== undefined, config),
    sidecars.warnings,
    hook.unreadable,
    record.warnings,
    // A guessed address is a warning: nothing in the pod confirms it.
    admin.guessed ? [guessedAdminWarning(envoy.name, admin)] : [],
    requests.warnings,
    probes.warnings,
    planned.warnings,
  );
  return {
    kind: 'protect',
    envoyIndex: envoy.index,
    requests: requests.requests,
    livenessProbe: probes.addLiveness,
    startupProbe: probes.addStartup,
    installer: planned.installer,
    preStop,
    disarm: sidecars.disarm,
    safeToEvict: evictable,
    gracePeriodSeconds: grace.raise ? grace.effectiveSeconds : undefined,
    removals: sidecars.removals,
    previousActions: (pod.status?.actions ?? []).filter((action) => action !== DELIVERY_ACTIONS[otherDelivery(config)]),
    timeline: shutdownTimeline({
      envoy,
      grace,
      timing,
      admin,
      probes,
      excludedListeners: excluded,
      replaces: carried.releases,
      droppedFlags: carried.dropped,
      delivery: { mode: config.installer.delivery, program, image: config.installer.image, volume: planned.installer.own?.volume.name },
    }),
    warnings,
  };
}

/**
 * The lists in order, in one new list: a loop, where `concat` of fifteen lists, almost all empty, goes
 * through the runtime for each (and checks each for Symbol.isConcatSpreadable).
 */
function joined(...lists: readonly (readonly string[])[]): string[] {
  const all: string[] = [];
  for (const list of lists) for (const item of list) all.push(item);
  return all;
}

function otherDelivery(config: Config): Config['installer']['delivery'] {
  return config.installer.delivery === 'copy' ? 'image-volume' : 'copy';
}

/** The plan for a pod: skip it, deny it, leave it whole, or protect it. */
export function planPod(pod: PodFacts, config: Config): Plan {
  if (pod.kind === 'without-envoy') return withoutEnvoy(pod, config);
  return invalidAnnotations(pod) ?? planEnvoyPod(pod, config);
}
