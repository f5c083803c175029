/**
 * The pod's effective grace period, and the drain's time budget derived from it. The kubelet kills
 * Envoy when the grace period ends whatever the hook is doing, so the drain must finish a margin
 * earlier, and the drain delay plus the minimum drain must fit inside that deadline.
 */
import type { Config } from '../../config/types';
import { MAX_DEADLINE_SECONDS } from '../../drain-contract';
import type { Pod } from '../k8s';
import type { Overrides } from './annotations';

/** What Kubernetes uses when terminationGracePeriodSeconds is unset. */
export const KUBERNETES_DEFAULT_GRACE_SECONDS = 30;

export interface GracePeriod {
  effectiveSeconds: number;
  source: 'pod' | 'kubernetes-default' | 'floor';
  /** The opt-in floor applies: terminationGracePeriodSeconds must be raised to effectiveSeconds. */
  raise: boolean;
}

export function gracePeriod(pod: Pod, config: Config): GracePeriod {
  const declared = pod.spec.terminationGracePeriodSeconds;
  const current = typeof declared === 'number' ? declared : KUBERNETES_DEFAULT_GRACE_SECONDS;
  const source = typeof declared === 'number' ? 'pod' : 'kubernetes-default';
  const floor = config.gracePeriodFloor;
  if (floor.enabled && current < floor.minimumSeconds) {
    return { effectiveSeconds: floor.minimumSeconds, source: 'floor', raise: true };
  }
  return { effectiveSeconds: current, source, raise: false };
}

/** Below this, a drain cannot achieve anything useful; the grace period is too short. */
export const MIN_DEADLINE_SECONDS = 5;

export interface DrainTiming {
  deadlineSeconds: number;
  drainDelaySeconds: number;
  minDrainSeconds: number;
  minConnections: number;
  pollIntervalSeconds: number;
  warnings: string[];
}

export function drainTiming(graceSeconds: number, overrides: Overrides, config: Config): DrainTiming {
  const warnings: string[] = [];
  let deadline = graceSeconds - config.drain.deadlineMarginSeconds;
  if (deadline > MAX_DEADLINE_SECONDS) {
    deadline = MAX_DEADLINE_SECONDS;
    warnings.push(
      `terminationGracePeriodSeconds ${graceSeconds}: the drain deadline is capped at ${MAX_DEADLINE_SECONDS}s, ` +
        'the longest the drain program accepts',
    );
  } else if (deadline < MIN_DEADLINE_SECONDS) {
    // Never a zero or negative deadline; within the grace period when at all possible.
    deadline = Math.max(1, Math.min(graceSeconds, MIN_DEADLINE_SECONDS));
    warnings.push(
      `terminationGracePeriodSeconds ${graceSeconds} leaves no room for a drain after the ${config.drain.deadlineMarginSeconds}s margin: ` +
        `the drain deadline is ${deadline}s; raise the grace period (or enable gracePeriodFloor)`,
    );
  }

  let drainDelay = overrides.drainDelaySeconds ?? config.drain.drainDelaySeconds;
  let minDrain = overrides.minDrainSeconds ?? config.drain.minDrainSeconds;
  if (drainDelay + minDrain > deadline) {
    const wanted = `drain delay ${drainDelay}s + minimum drain ${minDrain}s`;
    // Load balancer deregistration (the delay) matters more than a minimum drain time.
    drainDelay = Math.min(drainDelay, deadline);
    minDrain = Math.max(0, Math.min(minDrain, deadline - drainDelay));
    warnings.push(
      `${wanted} do not fit in the ${deadline}s drain deadline: shortened to drain delay ${drainDelay}s and minimum drain ${minDrain}s`,
    );
  }

  return {
    deadlineSeconds: deadline,
    drainDelaySeconds: drainDelay,
    minDrainSeconds: minDrain,
    minConnections: overrides.minConnections ?? config.drain.minConnections,
    pollIntervalSeconds: config.drain.pollIntervalSeconds,
    warnings,
  };
}
