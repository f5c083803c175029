/**
 * The shutdown plan as `inject --explain` and logs show it: the rules' own values and the trail each
 * rule wrote of where they came from, copied out of the plan.
 */
import type { ComponentRelease } from '../facts';
import type { AdminAddressSource, ResolvedAdmin } from './admin';
import type { DroppedFlag } from './carried';
import type { ExcludedListener } from './listeners';
import { probeBudgetSeconds, type EndingProbe, type ProbeSource } from './liveness';
import type { DrainSetting, DrainTiming, DrainValueSource, GracePeriod } from './timing';

export type { AdminAddressSource, ProbeSource };
export type { DrainSetting, DrainValueOrigin, DrainValueSource } from './timing';

/** The shutdown plan drainguard computed for an Envoy pod (`inject --explain`, logs). */
export interface ShutdownTimeline {
  /** Effective terminationGracePeriodSeconds (30 when unset). */
  gracePeriodSeconds: number;
  gracePeriodSource: 'pod' | 'kubernetes-default' | 'floor';
  drainDelaySeconds: number;
  minDrainSeconds: number;
  /** `--deadline` given to the drain program: grace period minus the configured margin. */
  deadlineSeconds: number;
  minConnections: number;
  adminAddress: string;
  /**
   * periodSeconds × failureThreshold of Envoy's liveness probe, if any: how long a stuck running Envoy
   * lasts before the kubelet restarts it (initialDelaySeconds only delays the first probe).
   */
  livenessBudgetSeconds: number | null;
  livenessSource: ProbeSource;
  // The three fields below are for `--explain` and logs. `mutate` always fills them; they are
  // optional only so that code building a timeline by hand keeps compiling.
  /** The drain program's poll interval (`--poll-interval`). */
  pollIntervalSeconds?: number;
  /** Where each drain value came from: annotation, an earlier hook, a sidecar flag, the configuration, the grace period. */
  drainSources?: Record<DrainSetting, DrainValueSource>;
  /** Where `adminAddress` came from (docs/design.md, "The admin address"). */
  adminAddressSource?: AdminAddressSource;
  /** The same, in words: the flag, the pod's shape, or why it is a guess. */
  adminAddressReason?: string;
  /** Nothing in the pod confirms the address (the last resort): a warning says what to set. */
  adminAddressGuessed?: boolean;
  /** Listener ports the drain ignores (probe and metrics traffic). */
  excludedListenerPorts?: number[];
  /** The same with why each is not traffic (probe, metrics port, the project's admin or readiness listener). */
  excludedListeners?: { port: number; reasons: string[] }[];
  /** The Envoy container, and what shows that it runs Envoy. */
  envoyContainer?: string;
  envoyEvidence?: string;
  /** The replaced components whose defaults the drain keeps, and the release read for each. */
  replaces?: { name: string; release: string; how: string }[];
  /** Flags of the replaced sidecar whose loss changes nothing, with why. */
  droppedFlags?: { container: string; flag: string; reason: string }[];
  /** False when Envoy keeps an unrecognised user preStop (or no install location exists): no drain hook. */
  drainInstalled?: boolean;
  /** periodSeconds × failureThreshold of Envoy's startup probe, if any: how long Envoy may take to become ready. */
  startupBudgetSeconds?: number | null;
  startupSource?: ProbeSource;
  /** How the drain program reaches Envoy (`installer.delivery`), where the preStop finds it, and from which image. */
  delivery?: DeliveryReport;
}

/** How the drain program reaches Envoy. */
export interface DeliveryReport {
  mode: 'copy' | 'image-volume';
  /** The program's path in Envoy, as the preStop runs it. */
  program: string;
  /** The drain program's image: the installer's image (copy) or the image volume's reference. */
  image: string;
  /** drainguard's own volume, when the pod gets one (the emptyDir or the image volume). */
  volume: string | undefined;
}

/** The rules' decisions the timeline reports. */
export interface TimelineDecisions {
  envoy: { name: string; evidence: string };
  grace: GracePeriod;
  timing: DrainTiming;
  admin: ResolvedAdmin;
  probes: { liveness: EndingProbe; startup: EndingProbe };
  excludedListeners: readonly ExcludedListener[];
  replaces: readonly ComponentRelease[];
  droppedFlags: readonly DroppedFlag[];
  delivery: DeliveryReport;
}

function budget(probe: EndingProbe): number | null {
  return probe.probe === undefined ? null : probeBudgetSeconds(probe.probe);
}

/** The timeline of a pod whose drain drainguard installs. */
export function shutdownTimeline(plan: TimelineDecisions): ShutdownTimeline {
  const { grace, timing, admin, probes } = plan;
  return {
    gracePeriodSeconds: grace.effectiveSeconds,
    gracePeriodSource: grace.source,
    drainDelaySeconds: timing.drainDelaySeconds,
    minDrainSeconds: timing.minDrainSeconds,
    deadlineSeconds: timing.deadlineSeconds,
    minConnections: timing.minConnections,
    adminAddress: admin.address.text,
    livenessBudgetSeconds: budget(probes.liveness),
    livenessSource: probes.liveness.source,
    pollIntervalSeconds: timing.pollIntervalSeconds,
    // Copies: a caller may keep or change the timeline without touching the plan.
    drainSources: {
      deadline: { ...timing.sources.deadline },
      drainDelay: { ...timing.sources.drainDelay },
      minDrain: { ...timing.sources.minDrain },
      minConnections: { ...timing.sources.minConnections },
      pollInterval: { ...timing.sources.pollInterval },
    },
    adminAddressSource: admin.source,
    adminAddressReason: admin.reason,
    adminAddressGuessed: admin.guessed,
    excludedListenerPorts: plan.excludedListeners.map((listener) => listener.port),
    excludedListeners: plan.excludedListeners.map((listener) => ({ port: listener.port, reasons: [...listener.reasons] })),
    envoyContainer: plan.envoy.name,
    envoyEvidence: plan.envoy.evidence,
    replaces: plan.replaces.map((component) => ({ ...component })),
    droppedFlags: plan.droppedFlags.map((flag) => ({ ...flag })),
    drainInstalled: true,
    startupBudgetSeconds: budget(probes.startup),
    startupSource: probes.startup.source,
    delivery: { ...plan.delivery },
  };
}
