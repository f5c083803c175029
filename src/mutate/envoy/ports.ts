/**
 * Ports of the Envoy container that the drain must ignore: health-check and metrics traffic keeps
 * arriving during a drain (kubelet probes, Prometheus) and would otherwise hold the drain open.
 */
import type { Container, IntOrString, Probe } from '../k8s';

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

/**
 * Ports of Envoy's readiness and liveness probes and of ports named like metrics/stats, sorted.
 * The admin port is left out: the drain program ignores the admin listener anyway, and leaving it
 * out keeps the hook identical when drainguard's own liveness probe targets the admin port.
 */
export function excludedListenerPorts(envoy: Container, adminPort: number | undefined): number[] {
  const ports = new Set<number>();
  for (const probe of [envoy.readinessProbe, envoy.livenessProbe]) {
    const port = probePort(probe, envoy);
    if (port !== undefined) ports.add(port);
  }
  for (const port of envoy.ports ?? []) {
    if (port.name !== undefined && METRICS_PORT_NAME.test(port.name)) ports.add(port.containerPort);
  }
  if (adminPort !== undefined) ports.delete(adminPort);
  return [...ports].filter((p) => Number.isInteger(p) && p > 0 && p <= 65535).sort((a, b) => a - b);
}

/**
 * The drain program matches this against the listener segment of
 * `listener.<segment>.downstream_cx_active`, e.g. `0.0.0.0_8002` or `[::]_8002`.
 */
export function listenerExclusionPattern(port: number): string {
  return `_${port}$`;
}
