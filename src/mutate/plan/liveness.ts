/**
 * The grace-period-aware liveness probe drainguard gives an Envoy that has none.
 *
 * An Envoy stuck in DRAINING (its health check failed by a restarted sidecar) never recovers by
 * itself; a liveness probe on the readiness endpoint restarts it. But a legitimate drain also fails
 * readiness for up to the whole grace period, so the probe's failure budget
 * (initialDelaySeconds + periodSeconds × failureThreshold) must exceed the grace period plus a margin.
 */
import type { Config } from '../../config/types';
import type { ResolvedAdmin } from '../envoy/admin';
import type { Container, HTTPGetAction, Probe } from '../k8s';

/** Kubernetes defaults for unset probe fields. */
const DEFAULT_PERIOD_SECONDS = 10;
const DEFAULT_FAILURE_THRESHOLD = 3;
/** Probe thresholds are int32 in the Pod API. */
const MAX_FAILURE_THRESHOLD = 2 ** 31 - 1;

export function livenessBudgetSeconds(probe: Probe): number {
  return (
    (probe.initialDelaySeconds ?? 0) +
    (probe.periodSeconds ?? DEFAULT_PERIOD_SECONDS) * (probe.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD)
  );
}

export type DesiredProbe = { probe: Probe; capped?: string } | { skipped: string };

function probeTarget(envoy: Container, admin: ResolvedAdmin): HTTPGetAction | string {
  const readiness = envoy.readinessProbe?.httpGet;
  if (readiness !== undefined) {
    const target: HTTPGetAction = { port: readiness.port };
    if (readiness.path !== undefined) target.path = readiness.path;
    if (readiness.scheme !== undefined) target.scheme = readiness.scheme;
    return target;
  }
  if (admin.address.kind !== 'tcp') {
    return 'Envoy has no httpGet readiness probe to copy and its admin API is a unix socket the kubelet cannot probe';
  }
  if (admin.bind === 'loopback') {
    return `Envoy has no httpGet readiness probe to copy and its admin API (${admin.address.text}) listens on loopback only, which the kubelet cannot reach`;
  }
  if (admin.bind === 'unknown') {
    return (
      'Envoy has no httpGet readiness probe to copy and its arguments do not show the admin API listening beyond loopback ' +
      '(a probe on an unreachable admin would restart Envoy in a loop); add a readinessProbe on /ready to get one'
    );
  }
  return { path: '/ready', port: admin.address.port };
}

/** The probe drainguard would add for this Envoy and grace period. */
export function desiredLivenessProbe(envoy: Container, admin: ResolvedAdmin, graceSeconds: number, config: Config): DesiredProbe {
  const target = probeTarget(envoy, admin);
  if (typeof target === 'string') return { skipped: target };
  const { periodSeconds, timeoutSeconds, marginSeconds, terminationGracePeriodSeconds } = config.liveness;
  // The smallest threshold whose budget strictly exceeds grace + margin, within 1..int32.
  const wanted = Math.max(1, Math.floor((graceSeconds + marginSeconds) / periodSeconds) + 1);
  const failureThreshold = Math.min(wanted, MAX_FAILURE_THRESHOLD);
  const capped =
    wanted > MAX_FAILURE_THRESHOLD
      ? `its failureThreshold is capped at ${MAX_FAILURE_THRESHOLD} (int32), a budget of ${periodSeconds * failureThreshold}s, ` +
        `which does not outlast the ${graceSeconds}s grace period`
      : undefined;
  return {
    ...(capped !== undefined ? { capped } : {}),
    probe: {
      httpGet: target,
      periodSeconds,
      timeoutSeconds,
      successThreshold: 1,
      failureThreshold,
      terminationGracePeriodSeconds,
    },
  };
}
