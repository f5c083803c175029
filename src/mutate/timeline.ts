/** The shutdown plan as `inject --explain` and logs show it, read from the resulting pod. */
import { jsonEqual } from './json-value';
import type { Config } from '../config/types';
import type { DrainTiming } from './drain-timing';
import type { GracePeriod } from './grace-period';
import type { Container } from './k8s';
import type { ResolvedAdmin } from './resolve-admin';
import type { ShutdownTimeline } from './result';
import { desiredLivenessProbe, livenessBudgetSeconds } from './mutations/liveness-probe';
import { excludedPortsFor } from './mutations/prestop';

export function shutdownTimeline(
  envoy: Container,
  grace: GracePeriod,
  timing: DrainTiming,
  admin: ResolvedAdmin,
  drainInstalled: boolean,
  config: Config,
): ShutdownTimeline {
  const probe = envoy.livenessProbe;
  let livenessSource: ShutdownTimeline['livenessSource'] = 'none';
  if (probe !== undefined) {
    const ours = desiredLivenessProbe(envoy, admin, grace.effectiveSeconds, config);
    livenessSource = 'probe' in ours && jsonEqual(ours.probe, probe) ? 'drainguard' : 'user';
  }
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
    excludedListenerPorts: excludedPortsFor(envoy, admin),
    drainInstalled,
  };
}
