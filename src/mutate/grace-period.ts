/** The pod's effective grace period, and whether the opt-in floor raises it. */
import type { Config } from '../config/types';
import type { Pod } from './k8s';
import type { ShutdownTimeline } from './result';

/** What Kubernetes uses when terminationGracePeriodSeconds is unset. */
export const KUBERNETES_DEFAULT_GRACE_SECONDS = 30;

export interface GracePeriod {
  effectiveSeconds: number;
  source: ShutdownTimeline['gracePeriodSource'];
  /** The floor applies: terminationGracePeriodSeconds must be set to effectiveSeconds. */
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
