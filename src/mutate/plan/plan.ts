/**
 * The plan: everything decided from the input pod before any change is made. The steps only carry
 * it out, and the timeline reports it, so both describe the same decisions.
 */
import type { Config, SidecarMode } from '../../config/types';
import { drainCommand, terminationMessagePathProblem } from '../../drain-contract';
import { guessedAdminWarning, resolveAdminAddress, type ResolvedAdmin } from '../envoy/admin';
import { findShutdownManagers, type SidecarRef } from '../envoy/detect';
import { classifyPreStop, describeHandler, drainguardHookSettings, isDrainguardHook, type PreStopKind } from '../envoy/hooks';
import { readSidecarDrainSettings } from '../envoy/sidecar-drain';
import { shutdownCommands, type UpstreamCommand } from '../envoy/upstream-commands';
import { findInstallTarget, installedProgramPath, type InstallTarget } from '../envoy/install-target';
import { excludedListenerPorts, listenerExclusionPattern } from '../envoy/ports';
import type { Container, Pod } from '../k8s';
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
  readonly envoyPath: readonly PathSegment[];
  readonly sidecars: readonly SidecarRef[];
  readonly sidecarMode: SidecarMode;
  readonly grace: GracePeriod;
  readonly timing: DrainTiming;
  readonly admin: ResolvedAdmin;
  readonly preStopKind: PreStopKind;
  /** The liveness (and startup) probe Envoy gets when it has no liveness probe (or why it gets none). */
  readonly probes: DesiredProbes;
  /** Listener ports the drain does not count (probe and metrics traffic). */
  readonly excludedListenerPorts: readonly number[];
  /**
   * The drain hook goes in: Envoy's preStop is replaceable and the program has somewhere to live.
   * Undefined otherwise, and then neither the installer nor a sidecar change is made.
   */
  readonly drain: PlannedDrain | undefined;
  /** drainguard's status annotation on the input pod: what an earlier pass did. */
  readonly status: StatusRecord | undefined;
  /** Warnings about the decisions above, in the order they were made. */
  readonly warnings: string[];
}

const NOT_INSTALLED = 'no installer was added and the shutdown-manager sidecar (if any) was neither removed nor disarmed';
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

export function makePlan(pod: Pod, config: Config, overrides: Overrides, envoyIndex: number): Plan {
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
  const installs = preStopKind !== 'user' && installTarget.kind !== 'impossible';

  // The sidecar's drain flags stop applying with its preStop (and, in remove mode, with the sidecar):
  // carried over into the drain, or reported.
  const commands = shutdownCommands(envoy, sidecars);
  const carried = readSidecarDrainSettings(commands, (command) => command.place === 'preStop' || sidecarMode === 'remove');
  const previousHook = drainguardHookSettings(preStop);
  const previous = previousHook !== undefined && 'settings' in previousHook ? previousHook.settings : undefined;
  const timing = drainTiming(grace.effectiveSeconds, { overrides, previous, sidecar: carried.values }, config);
  for (const warning of timing.warnings) warnings.push(warning);
  const { admin, warnings: adminWarnings } = resolveAdminAddress(pod, envoy, sidecars, commands, overrides.adminAddress);
  for (const warning of adminWarnings) warnings.push(warning);
  if (installs) {
    for (const warning of changesUndoneSinceLastPass(pod, envoy, sidecars, sidecarMode, status, config)) warnings.push(warning);
    for (const warning of carried.warnings) warnings.push(warning);
    for (const warning of unreadableSidecarHooks(sidecars, commands)) warnings.push(warning);
    if (previousHook !== undefined && 'unreadable' in previousHook) {
      warnings.push(`container ${envoy.name}: drainguard's own preStop from an earlier run cannot be read (${previousHook.unreadable}); it is planned afresh`);
    }
  }

  if (preStopKind === 'user' && preStop !== undefined) {
    warnings.push(
      `container ${envoy.name}: its preStop hook (${describeHandler(preStop)}) is not a recognised shutdown-manager hook and was kept: ` +
        `the drain was NOT installed; ${NOT_INSTALLED}`,
    );
  } else if (installTarget.kind === 'impossible') {
    warnings.push(`the drain was NOT installed: ${installTarget.reason}; ${NOT_INSTALLED}`);
  }

  const recordPath = drainRecordPath(envoy);
  // The admin port is left out: the program ignores the admin listener anyway, and leaving it out
  // keeps the hook identical when drainguard's own liveness probe targets the admin port.
  const excluded = excludedListenerPorts(envoy, admin.address.kind === 'tcp' ? admin.address.port : undefined);
  const drain: PlannedDrain | undefined =
    preStopKind === 'user' || installTarget.kind === 'impossible'
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
            excludeListeners: excluded.map(listenerExclusionPattern),
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
    envoyPath: ['spec', 'containers', envoyIndex],
    sidecars,
    sidecarMode,
    grace,
    timing,
    admin,
    preStopKind,
    status,
    probes: desiredProbes(envoy, admin, config),
    excludedListenerPorts: excluded,
    drain,
    warnings,
  };
}
