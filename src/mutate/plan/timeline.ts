/** The shutdown plan as `inject --explain` and logs show it, read from the plan and the resulting Envoy. */
import type { AdminAddressSource } from '../envoy/admin';
import type { Container } from '../k8s';
import { jsonEqual } from '../patch/json';
import { livenessBudgetSeconds } from './liveness';
import type { Plan } from './plan';

export type { AdminAddressSource };

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
  /** initialDelaySeconds + periodSeconds × failureThreshold of Envoy's liveness probe, if any. */
  livenessBudgetSeconds: number | null;
  livenessSource: 'drainguard' | 'user' | 'none';
  // The three fields below are for `--explain` and logs. `mutate` always fills them; they are
  // optional only so that code building a timeline by hand keeps compiling.
  /** Where `adminAddress` came from (docs/design.md, "The admin address"). */
  adminAddressSource?: AdminAddressSource;
  /** Listener ports the drain ignores (probe and metrics traffic). */
  excludedListenerPorts?: number[];
  /** False when Envoy keeps an unrecognised user preStop (or no install location exists): no drain hook. */
  drainInstalled?: boolean;
}

/** The timeline of `plan`, with the liveness probe as `envoy` (the resulting Envoy) has it. */
export function shutdownTimeline(plan: Plan, envoy: Container): ShutdownTimeline {
  const { grace, timing, admin, liveness } = plan;
  const probe = envoy.livenessProbe;
  let livenessSource: ShutdownTimeline['livenessSource'] = 'none';
  if (probe !== undefined) livenessSource = 'probe' in liveness && jsonEqual(liveness.probe, probe) ? 'drainguard' : 'user';
  return {
    gracePeriodSeconds: grace.effectiveSeconds,
    gracePeriodSource: grace.source,
    drainDelaySeconds: timing.drainDelaySeconds,
    minDrainSeconds: timing.minDrainSeconds,
    deadlineSeconds: timing.deadlineSeconds,
    minConnections: timing.minConnections,
    adminAddress: admin.address.text,
    livenessBudgetSeconds: probe === undefined ? null : livenessBudgetSeconds(probe),
    livenessSource,
    adminAddressSource: admin.source,
    excludedListenerPorts: [...plan.excludedListenerPorts],
    drainInstalled: plan.drain !== undefined,
  };
}
