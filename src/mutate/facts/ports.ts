/**
 * Ports of the Envoy container, and those the pod shows to be something other than traffic: health
 * checks and metrics keep arriving during a drain (kubelet probes, Prometheus) and would otherwise hold
 * it open.
 */
import type { Container, IntOrString, Pod, Probe } from '../../k8s';

/** A probe or hook port: a number, or the name of one of the container's ports. */
export function resolvePort(port: IntOrString | undefined, container: Container): number | undefined {
  if (typeof port === 'number') return Number.isInteger(port) && port > 0 && port <= 65535 ? port : undefined;
  if (typeof port !== 'string') return undefined;
  if (/^[0-9]+$/.test(port)) return resolvePort(Number(port), container);
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

export function probePort(probe: Probe | undefined, container: Container): number | undefined {
  if (probe === undefined) return undefined;
  return resolvePort(probe.httpGet?.port ?? probe.tcpSocket?.port ?? probe.grpc?.port, container);
}

const METRICS_PORT_NAME = /metrics|stats/i;
/** The scrape port a pod announces to Prometheus: a stats listener of Envoy's, never traffic. */
const PROMETHEUS_PORT_ANNOTATION = 'prometheus.io/port';

/** A port the pod shows is not traffic, and what shows it. */
export interface PortHint {
  /** Not checked: a probe may name any number. */
  port: number | undefined;
  reason: string;
}

/**
 * What the pod shows of Envoy's non-traffic ports, in this order: its readiness and liveness probe
 * ports, its ports named like metrics or stats, and the pod's Prometheus scrape port.
 */
export function nonTrafficPorts(pod: Pod, envoy: Container): PortHint[] {
  const hints: PortHint[] = [
    { port: probePort(envoy.readinessProbe, envoy), reason: "Envoy's readiness probe" },
    { port: probePort(envoy.livenessProbe, envoy), reason: "Envoy's liveness probe" },
  ];
  for (const port of envoy.ports ?? []) {
    if (port.name !== undefined && METRICS_PORT_NAME.test(port.name)) hints.push({ port: port.containerPort, reason: `Envoy's port ${port.name}` });
  }
  const scrape = pod.metadata?.annotations?.[PROMETHEUS_PORT_ANNOTATION];
  if (typeof scrape === 'string' && /^[0-9]{1,5}$/.test(scrape)) hints.push({ port: Number(scrape), reason: `the pod's ${PROMETHEUS_PORT_ANNOTATION} annotation` });
  return hints;
}
