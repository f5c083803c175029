/**
 * The listeners the drain does not count: what the pod shows of Envoy's non-traffic ports, and the
 * non-traffic listeners of the project whose pod it is (docs/upstream-shapes.md).
 */
import type { DrainArguments } from '../../drain-contract';
import type { EnvoyPod, PortHint } from '../facts';

/** A listener the drain does not count, and every reason it is not traffic. */
export interface ExcludedListener {
  port: number;
  reasons: string[];
}

/** A non-traffic listener a project's Envoy always has, whether or not the pod shows its port. */
export interface ShapeListener {
  port: number;
  reason: string;
}

/**
 * Contour's own listeners besides traffic (internal/envoy/v3/stats.go): `stats-health` on 0.0.0.0:8002
 * (`stats` and `health` when configured apart), and from the admin socket on the read-only admin proxy
 * `envoy-admin` on 127.0.0.1:9001, which answers /stats and /ready to anyone who port-forwards to it.
 */
function contourListeners(adminSocket: boolean): ShapeListener[] {
  const listeners: ShapeListener[] = [{ port: 8002, reason: "Contour's stats and health listener (stats-health, 0.0.0.0:8002 by default)" }];
  if (adminSocket) listeners.push({ port: 9001, reason: "Contour's read-only admin listener envoy-admin (127.0.0.1:9001), from the admin socket releases on" });
  return listeners;
}

/**
 * Envoy Gateway's (internal/xds/bootstrap): the stats listener on 19001 (also the readiness listener up
 * to v1.3) and from v1.4 the readiness listener on 19003, which its own shutdown manager leaves out too.
 */
const ENVOY_GATEWAY_LISTENERS: readonly ShapeListener[] = [
  { port: 19001, reason: "Envoy Gateway's stats listener (envoy-gateway-proxy-stats, 19001; the readiness listener up to v1.3)" },
  { port: 19003, reason: "Envoy Gateway's readiness listener (19003, from v1.4)" },
];

/**
 * The listeners the drain does not count, sorted by port: Envoy's readiness and liveness probe ports,
 * ports named like metrics/stats, the pod's Prometheus scrape port, and the project's own non-traffic
 * listeners (`shape`). The admin port is left out: the drain program ignores the admin listener anyway,
 * and leaving it out keeps the hook identical when drainguard's own liveness probe targets it.
 */
function excludedListeners(hints: readonly PortHint[], shape: readonly ShapeListener[], adminPort: number | undefined): ExcludedListener[] {
  // Each listener is the map's value itself: no closure, entry pairs or mapped copy per call.
  const found = new Map<number, ExcludedListener>();
  for (const hint of hints) noteListener(found, hint.port, hint.reason, adminPort);
  for (const listener of shape) noteListener(found, listener.port, listener.reason, adminPort);
  const listeners = Array.from(found.values());
  return inPortOrder(listeners) ? listeners : listeners.sort(byPort);
}

/**
 * Whether the listeners are already sorted by port, as they usually come (a probe port, then the
 * project's): Array.prototype.sort allocates its work state even for two elements.
 */
function inPortOrder(listeners: readonly ExcludedListener[]): boolean {
  for (let i = 1; i < listeners.length; i += 1) if ((listeners[i - 1] as ExcludedListener).port > (listeners[i] as ExcludedListener).port) return false;
  return true;
}

/** `port` into `found` with `reason`, unless it is no listener port or the admin's. */
function noteListener(found: Map<number, ExcludedListener>, port: number | undefined, reason: string, adminPort: number | undefined): void {
  if (port === undefined || !Number.isInteger(port) || port < 1 || port > 65535 || port === adminPort) return;
  const listener = found.get(port);
  if (listener === undefined) found.set(port, { port, reasons: [reason] });
  else if (!listener.reasons.includes(reason)) listener.reasons.push(reason);
}

function byPort(a: ExcludedListener, b: ExcludedListener): number {
  return a.port - b.port;
}

/**
 * The drain program matches this against the listener segment of
 * `listener.<segment>.downstream_cx_active`, e.g. `0.0.0.0_8002` or `[::]_8002`.
 */
export function listenerExclusionPattern(port: number): string {
  return `_${port}$`;
}

/** The port of a pattern `listenerExclusionPattern` wrote, or undefined for any other pattern. */
function listenerExclusionPort(pattern: string): number | undefined {
  const match = /^_([1-9][0-9]{0,4})\$$/.exec(pattern);
  return match ? Number(match[1]) : undefined;
}

/** The non-traffic listeners of the project whose pod this is (docs/upstream-shapes.md). */
function shapeListeners(pod: EnvoyPod): ShapeListener[] {
  if (pod.contourShape) return contourListeners(pod.envoy.adminSocketVolume);
  if (pod.envoyGatewaySidecar) return [...ENVOY_GATEWAY_LISTENERS];
  return [];
}

/**
 * The listeners the drain does not count. drainguard's earlier hook keeps the project's listeners it
 * found: what showed the project (the sidecar) may be gone or changed since, and the hook must come
 * out the same.
 */
export function listenersNotCounted(pod: EnvoyPod, previous: DrainArguments | undefined, adminPort: number | undefined): ExcludedListener[] {
  const shape =
    previous === undefined
      ? shapeListeners(pod)
      : previous.excludeListeners.flatMap((pattern) => {
          const port = listenerExclusionPort(pattern);
          return port === undefined ? [] : [{ port, reason: "drainguard's own preStop from an earlier run" }];
        });
  return excludedListeners(pod.envoy.nonTrafficPorts, shape, adminPort);
}
