/**
 * The plan: everything decided from the input pod before any change is made. The steps only carry
 * it out, and the timeline reports it, so both describe the same decisions.
 */
import type { Config, SidecarMode } from '../../config/types';
import { drainCommand, terminationMessagePathProblem } from '../../drain-contract';
import { guessedAdminWarning, hasAdminSocketVolume, isContourPod, resolveAdminAddress, type ResolvedAdmin } from '../envoy/admin';
import { findShutdownManagers, type SidecarRef } from '../envoy/detect';
import { classifyPreStop, describeHandler, drainguardHookSettings, isDrainguardHook, type PreStopKind } from '../envoy/hooks';
import { readSidecarDrainSettings, type CarriedSetting, type DroppedFlag } from '../envoy/sidecar-drain';
import { componentDefaults, type ComponentRelease, type UndeterminedDefault } from '../envoy/upstream-defaults';
import { contourBootstrapCommands, shutdownCommands, type UpstreamCommand } from '../envoy/upstream-commands';
import { findInstallTarget, installedProgramPath, type InstallTarget } from '../envoy/install-target';
import { contourListeners, ENVOY_GATEWAY_LISTENERS, excludedListeners, listenerExclusionPattern, listenerExclusionPort, type ExcludedListener, type ShapeListener } from '../envoy/ports';
import type { Container, Pod } from '../../k8s';
import type { PathSegment } from '../patch/builder';
import type { Overrides } from './annotations';
import { desiredProbes, type DesiredProbes } from './liveness';
import { readStatus, type StatusRecord } from './status';
import { drainTiming, gracePeriod, type DrainTiming, type GracePeriod } from './timing';

/** Where the drain program is installed and the preStop command that runs it. */
export interface PlannedDrain {
  target: Exclude<InstallTarget, { kind: 'impossible' }>;
  command: string[];
}

export interface Plan {
  readonly config: Config;
  readonly overrides: Overrides;
  readonly envoyIndex: number;
  /** What shows that this container is Envoy (`--explain`). */
  readonly envoyEvidence: string;
  readonly envoyPath: readonly PathSegment[];
  readonly sidecars: readonly SidecarRef[];
  readonly sidecarMode: SidecarMode;
  readonly grace: GracePeriod;
  readonly timing: DrainTiming;
  readonly admin: ResolvedAdmin;
  readonly preStopKind: PreStopKind;
  /** The liveness (and startup) probe Envoy gets when it has no liveness probe (or why it gets none). */
  readonly probes: DesiredProbes;
  /** Listeners the drain does not count (probes, metrics, the project's admin and readiness listeners), each with why. */
  readonly excludedListeners: readonly ExcludedListener[];
  /** Flags of the replaced sidecar whose loss changes nothing: `--explain` lists them. */
  readonly droppedFlags: readonly DroppedFlag[];
  /** The replaced components whose defaults were read, and their releases. */
  readonly replaces: readonly ComponentRelease[];
  /**
   * The drain hook goes in: Envoy's preStop is replaceable and the program has somewhere to live.
   * Undefined otherwise, and then the pod is left whole (`drainBlocked` says why).
   */
  readonly drain: PlannedDrain | undefined;
  /** Why the drain cannot go in, when it cannot. */
  readonly drainBlocked: string | undefined;
  /** drainguard's status annotation on the input pod: what an earlier pass did. */
  readonly status: StatusRecord | undefined;
  /** Warnings about the decisions above, in the order they were made. */
  readonly warnings: string[];
}

const RECORDED = 'installed earlier (drainguard.io/status)';

/**
 * What a later change undid of drainguard's earlier pass, as the status annotation records it; the
 * steps restore each (docs/design.md, "The status annotation and re-invocation").
 */
function changesUndoneSinceLastPass(pod: Pod, envoy: Container, sidecars: readonly SidecarRef[], mode: SidecarMode, status: StatusRecord | undefined, config: Config): string[] {
  if (status === undefined) return [];
  const found: string[] = [];
  const preStop = envoy.lifecycle?.preStop;
  if (status.actions.includes('prestop') && !isDrainguardHook(preStop)) {
    found.push(
      preStop === undefined
        ? `container ${envoy.name}: drainguard's drain preStop, ${RECORDED}, is gone; restored`
        : `container ${envoy.name}: drainguard's drain preStop, ${RECORDED}, was replaced by ${describeHandler(preStop)} (a later webhook?); restored`,
    );
  }
  const installer = config.installer.containerName;
  if (status.actions.includes('installer') && !(pod.spec.initContainers ?? []).some((c) => c.name === installer)) {
    found.push(`init container ${installer}, ${RECORDED}, is gone; added again`);
  }
  if (status.actions.includes('sidecar-removed') && mode === 'remove') {
    for (const { container } of sidecars) {
      found.push(`container ${container.name}: the shutdown-manager came back after drainguard removed it (drainguard.io/status); removed again`);
    }
  }
  return found;
}

/** Sidecar preStops that go with the drain's installation although no drain setting could be read from them. */
function unreadableSidecarHooks(sidecars: readonly SidecarRef[], commands: readonly UpstreamCommand[]): string[] {
  const found: string[] = [];
  const read = new Set(commands.filter((command) => command.place === 'preStop').map((command) => command.containerName));
  for (const { container } of sidecars) {
    const hook = container.lifecycle?.preStop;
    if (hook === undefined || read.has(container.name)) continue;
    found.push(
      `container ${container.name}: its preStop (${describeHandler(hook)}) goes with the sidecar and is not a command drainguard ` +
        "can read drain settings from; drainguard's configured defaults apply",
    );
  }
  return found;
}

/** The API server's default terminationMessagePath, which a pod read before defaulting may lack. */
export const DEFAULT_TERMINATION_MESSAGE_PATH = '/dev/termination-log';

/**
 * Where the drain writes its record: Envoy's own terminationMessagePath, so that the kubelet reports it
 * (docs/envoy-shutdown.md, "The drain record"). A path the drain contract refuses is not written: the
 * drain runs without a record rather than not at all.
 */
function drainRecordPath(envoy: Container): { path?: string; warning?: string } {
  // Empty is what the API server defaults, as it does a missing one.
  const path = envoy.terminationMessagePath || DEFAULT_TERMINATION_MESSAGE_PATH;
  const problem = terminationMessagePathProblem(path);
  if (problem === undefined) return { path };
  return {
    warning: `container ${envoy.name}: terminationMessagePath ${JSON.stringify(path.length > 64 ? `${path.slice(0, 61)}...` : path)} cannot take the drain record (${problem}); the drain runs without writing one, and drainguard report will see its terminations as unreported`,
  };
}

/**
 * What applies instead of a component default that cannot be told, and the annotation that sets it:
 * first in the warning, which the API server cuts after 256 characters.
 */
const FALLBACKS: Readonly<Record<CarriedSetting, string>> = {
  drainDelaySeconds: "the drain delay is drainguard's drain.drainDelaySeconds (set drainguard.io/drain-delay to choose)",
  minDrainSeconds: "the minimum drain is drainguard's drain.minDrainSeconds (set drainguard.io/min-drain to choose)",
  minConnections: "the connection threshold is drainguard's drain.minConnections (set drainguard.io/min-connections to choose)",
  pollIntervalSeconds: "the poll interval is drainguard's drain.pollIntervalSeconds",
  drainTimeoutSeconds: 'the drain deadline follows the grace period alone',
  readyTimeoutSeconds: 'the drain deadline follows the grace period alone',
};

function undeterminedWarning(undetermined: UndeterminedDefault): string {
  return (
    `container ${undetermined.container}: ${FALLBACKS[undetermined.setting]}: the default of ${undetermined.what} ` +
    `(${undetermined.history}) depends on the release, and ${undetermined.why}`
  );
}

/** Whether a setting is decided before any default: by its annotation, or by drainguard's earlier hook. */
function decidedAhead(setting: CarriedSetting, overrides: Overrides, previousHook: boolean): boolean {
  if (previousHook) return true;
  if (setting === 'drainDelaySeconds') return overrides.drainDelaySeconds !== undefined;
  if (setting === 'minDrainSeconds') return overrides.minDrainSeconds !== undefined;
  if (setting === 'minConnections') return overrides.minConnections !== undefined;
  return false;
}

/** The non-traffic listeners of the project whose pod this is (docs/upstream-shapes.md). */
function shapeListeners(pod: Pod, envoy: Container, sidecars: readonly SidecarRef[], commands: readonly UpstreamCommand[]): ShapeListener[] {
  if (isContourPod(sidecars, commands, contourBootstrapCommands(pod))) return contourListeners(hasAdminSocketVolume(pod, envoy));
  if (sidecars.some((sidecar) => sidecar.flavor === 'envoy-gateway')) return [...ENVOY_GATEWAY_LISTENERS];
  return [];
}

export function makePlan(pod: Pod, config: Config, overrides: Overrides, envoyIndex: number, envoyEvidence: string): Plan {
  const envoy = pod.spec.containers[envoyIndex] as Container;
  const warnings: string[] = [];
  const sidecars = findShutdownManagers(pod, config, envoyIndex);
  const sidecarMode = overrides.sidecarMode ?? config.sidecarMode;
  const grace = gracePeriod(pod, config);
  const preStop = envoy.lifecycle?.preStop;
  const status = readStatus(pod);
  const installTarget = findInstallTarget(pod, envoy, config);
  // drainguard installed its drain here before: whatever took its place since is a later change to undo.
  const drainWasInstalled = status?.actions.includes('prestop') === true;
  const classified = classifyPreStop(preStop, sidecars);
  const preStopKind: PreStopKind = classified === 'user' && drainWasInstalled ? 'replaced-drain' : classified;
  let drainBlocked: string | undefined;
  if (preStopKind === 'user' && preStop !== undefined) {
    drainBlocked =
      `container ${envoy.name}: its preStop hook (${describeHandler(preStop)}) is not a recognised shutdown-manager hook and is kept ` +
      '(remove it from the pod template for drainguard to drain Envoy)';
  } else if (installTarget.kind === 'impossible') {
    drainBlocked = installTarget.reason;
  }

  // The sidecar's drain flags stop applying with its preStop (and, in remove mode, with the sidecar):
  // carried over into the drain, or reported. What it gives no flag for is its release's default.
  const commands = shutdownCommands(envoy, sidecars);
  const replaced = (command: UpstreamCommand) => command.place === 'preStop' || sidecarMode === 'remove';
  const carried = readSidecarDrainSettings(commands, replaced);
  const previousHook = drainguardHookSettings(preStop);
  const previous = previousHook !== undefined && 'settings' in previousHook ? previousHook.settings : undefined;
  const defaults = componentDefaults(pod, envoy, commands.filter(replaced), new Set(Object.keys(carried.values) as CarriedSetting[]));
  const timing = drainTiming(grace.effectiveSeconds, { overrides, previous, sidecar: { ...defaults.values, ...carried.values } }, config);
  for (const warning of timing.warnings) warnings.push(warning);
  const { admin, warnings: adminWarnings } = resolveAdminAddress(pod, envoy, sidecars, commands, overrides.adminAddress);
  for (const warning of adminWarnings) warnings.push(warning);
  if (drainBlocked === undefined) {
    for (const warning of changesUndoneSinceLastPass(pod, envoy, sidecars, sidecarMode, status, config)) warnings.push(warning);
    for (const warning of carried.warnings) warnings.push(warning);
    for (const undetermined of defaults.undetermined) {
      if (!decidedAhead(undetermined.setting, overrides, previous !== undefined)) warnings.push(undeterminedWarning(undetermined));
    }
    for (const warning of unreadableSidecarHooks(sidecars, commands)) warnings.push(warning);
    if (previousHook !== undefined && 'unreadable' in previousHook) {
      warnings.push(`container ${envoy.name}: drainguard's own preStop from an earlier run cannot be read (${previousHook.unreadable}); it is planned afresh`);
    }
  }

  const recordPath = drainRecordPath(envoy);
  // drainguard's earlier hook keeps the project's listeners it found: what showed the project (the
  // sidecar) may be gone or changed since, and the hook must come out the same.
  const shape =
    previous === undefined
      ? shapeListeners(pod, envoy, sidecars, commands)
      : previous.excludeListeners.flatMap((pattern) => {
          const port = listenerExclusionPort(pattern);
          return port === undefined ? [] : [{ port, reason: "drainguard's own preStop from an earlier run" }];
        });
  const excluded = excludedListeners(pod, envoy, shape, admin.address.kind === 'tcp' ? admin.address.port : undefined);
  const drain: PlannedDrain | undefined =
    drainBlocked !== undefined || installTarget.kind === 'impossible'
      ? undefined
      : {
          target: installTarget,
          command: drainCommand(installedProgramPath(installTarget.mount, config), {
            admin: admin.address,
            deadlineMs: timing.deadlineSeconds * 1000,
            drainDelayMs: timing.drainDelaySeconds * 1000,
            minDrainMs: timing.minDrainSeconds * 1000,
            minConnections: timing.minConnections,
            pollIntervalMs: timing.pollIntervalSeconds * 1000,
            excludeListeners: excluded.map((listener) => listenerExclusionPattern(listener.port)),
            ...(recordPath.path === undefined ? {} : { terminationMessagePath: recordPath.path }),
          }),
        };
  if (drain !== undefined && recordPath.warning !== undefined) warnings.push(recordPath.warning);

  // A guessed address matters only to a drain that uses it.
  if (drain !== undefined && admin.guessed) warnings.push(guessedAdminWarning(envoy, admin));

  return {
    config,
    overrides,
    envoyIndex,
    envoyEvidence,
    envoyPath: ['spec', 'containers', envoyIndex],
    sidecars,
    sidecarMode,
    grace,
    timing,
    admin,
    preStopKind,
    status,
    probes: desiredProbes(envoy, admin, config),
    excludedListeners: excluded,
    droppedFlags: carried.dropped,
    replaces: defaults.releases,
    drain,
    drainBlocked,
    warnings,
  };
}
