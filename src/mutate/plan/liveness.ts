/**
 * The liveness probe drainguard gives an Envoy that has none, and the startup probe that goes with it
 * (docs/design.md, "The liveness probe").
 *
 * An Envoy stuck in DRAINING (its health check failed by a stray `/healthcheck/fail`) or wedged never
 * recovers by itself; a liveness probe on its readiness endpoint restarts it. The kubelet stops
 * liveness and startup probes as soon as a pod starts terminating, before it runs preStop hooks, so a
 * legitimate drain (readiness failing for up to the grace period) can never trip the probe: it is
 * tuned for quick recovery, not to outlast the grace period. Envoy's `/ready` fails until its first
 * configuration arrives, so a startup probe on the same target holds the liveness probe back while a
 * slow control plane delivers it.
 */
import type { Config } from '../../config/types';
import type { HTTPGetAction, Probe } from '../../k8s';
import type { EnvoyContainer } from '../facts';
import { jsonCovers } from '../../json';
import type { ResolvedAdmin } from './admin';

/** Kubernetes defaults for unset probe fields. */
const DEFAULT_PERIOD_SECONDS = 10;
const DEFAULT_FAILURE_THRESHOLD = 3;

/**
 * How long a probe fails on a running container before the kubelet acts: periodSeconds ×
 * failureThreshold. initialDelaySeconds only delays the first probe after the container starts.
 */
export function probeBudgetSeconds(probe: Probe): number {
  return (probe.periodSeconds ?? DEFAULT_PERIOD_SECONDS) * (probe.failureThreshold ?? DEFAULT_FAILURE_THRESHOLD);
}

/**
 * The probes drainguard writes for this Envoy. The liveness probe is added only when Envoy has none
 * (a probe of Envoy's own is never touched); the startup probe only when `addStartup`, i.e. Envoy had
 * neither a liveness nor a startup probe of its own.
 */
type DesiredProbes = { liveness: Probe; startup: Probe; addStartup: boolean } | { skipped: string };

function probeTarget(envoy: EnvoyContainer, admin: ResolvedAdmin): HTTPGetAction | string {
  const readiness = envoy.readinessHttpGet;
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

function desiredProbes(envoy: EnvoyContainer, admin: ResolvedAdmin, config: Config): DesiredProbes {
  const target = probeTarget(envoy, admin);
  if (typeof target === 'string') return { skipped: target };
  const { periodSeconds, timeoutSeconds, failureThreshold, startupFailureThreshold, terminationGracePeriodSeconds } = config.liveness;
  const probe = (failures: number): Probe => ({
    httpGet: target,
    periodSeconds,
    timeoutSeconds,
    successThreshold: 1,
    failureThreshold: failures,
    // Also bounds the preStop (the drain) that a probe-triggered restart runs.
    terminationGracePeriodSeconds,
  });
  const addStartup = envoy.livenessProbe === undefined && envoy.startupProbe === undefined;
  return { liveness: probe(failureThreshold), startup: probe(startupFailureThreshold), addStartup };
}

/** Who wrote a probe Envoy ends up with. */
export type ProbeSource = 'drainguard' | 'user' | 'none';

/** A probe Envoy ends up with, and who wrote it (`--explain`). */
export interface EndingProbe {
  probe: Probe | undefined;
  source: ProbeSource;
}

export interface PlannedProbes {
  /** The liveness probe to add: Envoy has none of its own. */
  addLiveness: Probe | undefined;
  /** The startup probe to add: Envoy had neither probe of its own. */
  addStartup: Probe | undefined;
  liveness: EndingProbe;
  startup: EndingProbe;
  warnings: string[];
}

function ending(own: Probe | undefined, added: Probe | undefined, planned: Probe | undefined): EndingProbe {
  const probe = own ?? added;
  // drainguard's own probe is recognised on a second pass too: the plan is the same (the stored probe
  // carries what the API server defaulted in it, such as httpGet.scheme).
  const source: ProbeSource = probe === undefined ? 'none' : planned !== undefined && jsonCovers(probe, planned) ? 'drainguard' : 'user';
  return { probe, source };
}

/**
 * The probes Envoy gets: a liveness probe when it has none (a probe of Envoy's own is kept as it is:
 * the kubelet stops liveness probes before it runs preStop, so no liveness probe can cut a drain
 * short), and the startup probe with it when Envoy had neither.
 */
export function livenessProbes(envoy: EnvoyContainer, admin: ResolvedAdmin, config: Config): PlannedProbes {
  const desired = desiredProbes(envoy, admin, config);
  const planned = 'skipped' in desired ? undefined : desired;
  const warnings: string[] = [];
  if (envoy.livenessProbe === undefined && 'skipped' in desired) warnings.push(`container ${envoy.name}: no liveness probe added: ${desired.skipped}`);
  const addLiveness = envoy.livenessProbe === undefined ? planned?.liveness : undefined;
  const addStartup = planned?.addStartup === true ? planned.startup : undefined;
  return {
    addLiveness,
    addStartup,
    liveness: ending(envoy.livenessProbe, addLiveness, planned?.liveness),
    startup: ending(envoy.startupProbe, addStartup, planned?.startup),
    warnings,
  };
}
