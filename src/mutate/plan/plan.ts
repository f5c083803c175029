/**
 * The plan: everything decided from the input pod before any change is made. The steps only carry
 * it out, and the timeline reports it, so both describe the same decisions.
 */
import type { Config, SidecarMode } from '../../config/types';
import { drainCommand, terminationMessagePathProblem } from '../../drain-contract';
import type { CarriedSetting, EnvoyContainer, EnvoyPod, Sidecar, UndeterminedDefault } from '../facts';
import type { PathSegment } from '../patch/builder';
import type { Overrides, StatusRecord } from '../parse';
import { adminAddress, guessedAdminWarning, type ResolvedAdmin } from './admin';
import { carriedSettings, type DroppedFlag } from './carried';
import { installedProgramPath, installTarget, type InstallTarget } from './install';
import { contourListeners, ENVOY_GATEWAY_LISTENERS, excludedListeners, listenerExclusionPattern, listenerExclusionPort, type ExcludedListener, type ShapeListener } from './listeners';
import { desiredProbes, type DesiredProbes } from './liveness';
import { drainTiming, gracePeriod, type DrainTiming, type GracePeriod } from './timing';
import type { ComponentRelease } from '../facts';

export type PreStopKind =
  /** No preStop at all. */
  | 'none'
  /** drainguard's own exec hook (a previous run). */
  | 'drainguard'
  /** A shutdown-manager handshake or a stand-in for one: replaced. */
  | 'shutdown-manager'
  /** Something else: kept, and the drain is not installed. */
  | 'user'
  /**
   * Something else that replaced drainguard's drain after it was installed (the status annotation
   * records the preStop): a later webhook's doing on re-invocation. Replaced back, with a warning.
   */
  | 'replaced-drain';

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
  readonly sidecars: readonly Sidecar[];
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
function changesUndoneSinceLastPass(pod: EnvoyPod, mode: SidecarMode, config: Config): string[] {
  const { status, envoy } = pod;
  if (status === undefined) return [];
  const found: string[] = [];
  const { preStop } = envoy;
  if (status.actions.includes('prestop') && preStop.kind !== 'drainguard') {
    found.push(
      preStop.kind === 'none'
        ? `container ${envoy.name}: drainguard's drain preStop, ${RECORDED}, is gone; restored`
        : `container ${envoy.name}: drainguard's drain preStop, ${RECORDED}, was replaced by ${preStop.description} (a later webhook?); restored`,
    );
  }
  const installer = config.installer.containerName;
  if (status.actions.includes('installer') && !pod.initContainerNames.has(installer)) {
    found.push(`init container ${installer}, ${RECORDED}, is gone; added again`);
  }
  if (status.actions.includes('sidecar-removed') && mode === 'remove') {
    for (const sidecar of pod.sidecars) {
      found.push(`container ${sidecar.name}: the shutdown-manager came back after drainguard removed it (drainguard.io/status); removed again`);
    }
  }
  return found;
}

/** Sidecar preStops that go with the drain's installation although no drain setting could be read from them. */
function unreadableSidecarHooks(sidecars: readonly Sidecar[]): string[] {
  const found: string[] = [];
  for (const sidecar of sidecars) {
    if (sidecar.unreadPreStop === undefined) continue;
    found.push(
      `container ${sidecar.name}: its preStop (${sidecar.unreadPreStop}) goes with the sidecar and is not a command drainguard ` +
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
function drainRecordPath(envoy: EnvoyContainer): { path?: string; warning?: string } {
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
function shapeListeners(pod: EnvoyPod): ShapeListener[] {
  if (pod.contourShape) return contourListeners(pod.envoy.adminSocketVolume);
  if (pod.envoyGatewaySidecar) return [...ENVOY_GATEWAY_LISTENERS];
  return [];
}

export function makePlan(pod: EnvoyPod, config: Config): Plan {
  const { envoy, sidecars, status } = pod;
  const overrides = pod.annotations.overrides;
  const warnings: string[] = [];
  const sidecarMode = overrides.sidecarMode ?? config.sidecarMode;
  const grace = gracePeriod(pod.gracePeriodSeconds, config);
  const target = installTarget(pod, config);
  // drainguard installed its drain here before: whatever took its place since is a later change to undo.
  const drainWasInstalled = status?.actions.includes('prestop') === true;
  const classified = envoy.preStop.kind;
  const preStopKind: PreStopKind = classified === 'user' && drainWasInstalled ? 'replaced-drain' : classified;
  let drainBlocked: string | undefined;
  if (preStopKind === 'user' && envoy.preStop.kind === 'user') {
    drainBlocked =
      `container ${envoy.name}: its preStop hook (${envoy.preStop.description}) is not a recognised shutdown-manager hook and is kept ` +
      '(remove it from the pod template for drainguard to drain Envoy)';
  } else if (target.kind === 'impossible') {
    drainBlocked = target.reason;
  }

  // The sidecar's drain flags stop applying with its preStop (and, in remove mode, with the sidecar):
  // carried over into the drain, or reported. What it gives no flag for is its release's default.
  const carried = carriedSettings(pod.shutdownCommands, sidecarMode);
  const previousHook = envoy.preStop.kind === 'drainguard' ? envoy.preStop.reading : undefined;
  const previous = previousHook !== undefined && 'settings' in previousHook ? previousHook.settings : undefined;
  const timing = drainTiming(grace.effectiveSeconds, { overrides, previous, sidecar: carried.values }, config);
  for (const warning of timing.warnings) warnings.push(warning);
  const { admin, warnings: adminWarnings } = adminAddress(pod);
  for (const warning of adminWarnings) warnings.push(warning);
  if (drainBlocked === undefined) {
    for (const warning of changesUndoneSinceLastPass(pod, sidecarMode, config)) warnings.push(warning);
    for (const warning of carried.warnings) warnings.push(warning);
    for (const undetermined of carried.undetermined) {
      if (!decidedAhead(undetermined.setting, overrides, previous !== undefined)) warnings.push(undeterminedWarning(undetermined));
    }
    for (const warning of unreadableSidecarHooks(sidecars)) warnings.push(warning);
    if (previousHook !== undefined && 'unreadable' in previousHook) {
      warnings.push(`container ${envoy.name}: drainguard's own preStop from an earlier run cannot be read (${previousHook.unreadable}); it is planned afresh`);
    }
  }

  const recordPath = drainRecordPath(envoy);
  // drainguard's earlier hook keeps the project's listeners it found: what showed the project (the
  // sidecar) may be gone or changed since, and the hook must come out the same.
  const shape =
    previous === undefined
      ? shapeListeners(pod)
      : previous.excludeListeners.flatMap((pattern) => {
          const port = listenerExclusionPort(pattern);
          return port === undefined ? [] : [{ port, reason: "drainguard's own preStop from an earlier run" }];
        });
  const excluded = excludedListeners(envoy.nonTrafficPorts, shape, admin.address.kind === 'tcp' ? admin.address.port : undefined);
  const drain: PlannedDrain | undefined =
    drainBlocked !== undefined || target.kind === 'impossible'
      ? undefined
      : {
          target,
          command: drainCommand(installedProgramPath(target.mount, config), {
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
  if (drain !== undefined && admin.guessed) warnings.push(guessedAdminWarning(envoy.name, admin));

  return {
    config,
    overrides,
    envoyIndex: envoy.index,
    envoyEvidence: envoy.evidence,
    envoyPath: ['spec', 'containers', envoy.index],
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
    replaces: carried.releases,
    drain,
    drainBlocked,
    warnings,
  };
}
