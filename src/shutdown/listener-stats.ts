/**
 * Counting Envoy's open downstream connections from its listener gauges (docs/design.md, "Counting connections").
 *
 * `server.total_connections` is deliberately not used: it is refreshed only at stats flush and also
 * counts the probe connections, so it neither falls promptly nor reaches zero.
 */

/** The regex Envoy evaluates (RE2) for the gauges we need; percent-encoded into the query string. */
export const LISTENER_GAUGE_FILTER = '^listener\\..*\\.downstream_cx_active$';
export const LISTENER_GAUGES_PATH = `/stats?format=json&type=Gauges&filter=${encodeURIComponent(LISTENER_GAUGE_FILTER)}`;

const PREFIX = 'listener.';
const SUFFIX = '.downstream_cx_active';
/** Per-handler copies of every listener gauge: `listener.<l>.worker_3.…`, `listener.<l>.main_thread.…`. */
const PER_HANDLER = /\.(?:worker_\d+|main_thread)$/;
/** Envoy internal listeners (in-process, user-space connections), named `envoy_internal_…` in stats. */
const INTERNAL = /^envoy_internal_/;

export type ListenerRole = 'counted' | 'admin' | 'internal' | 'excluded';

export interface ListenerGauge {
  listener: string;
  active: number;
  role: ListenerRole;
}

export interface ConnectionCount {
  /** Sum over counted listeners; `null` when no listener gauge was visible at all (unknown, never 0). */
  total: number | null;
  listeners: ListenerGauge[];
}

/** The listener segment of a gauge name, or undefined for names that are not a listener-level gauge. */
export function listenerOfGauge(name: string): string | undefined {
  if (!name.startsWith(PREFIX) || !name.endsWith(SUFFIX)) return undefined;
  const listener = name.slice(PREFIX.length, name.length - SUFFIX.length);
  if (listener === '' || PER_HANDLER.test(listener)) return undefined;
  return listener;
}

function roleOf(listener: string, excludes: readonly RegExp[]): ListenerRole {
  if (listener === 'admin') return 'admin';
  if (INTERNAL.test(listener)) return 'internal';
  if (excludes.some((pattern) => pattern.test(listener))) return 'excluded';
  return 'counted';
}

/**
 * Reads a `/stats?format=json` body. Elements without a numeric `value` (text readouts, the trailing
 * histograms element) are skipped. Throws on a body that is not Envoy's JSON shape.
 */
export function countConnections(body: string, excludes: readonly RegExp[]): ConnectionCount {
  const parsed: unknown = JSON.parse(body);
  const stats = (parsed as { stats?: unknown } | null)?.stats;
  if (!Array.isArray(stats)) throw new Error('stats answer has no "stats" array');
  const listeners: ListenerGauge[] = [];
  for (const element of stats as unknown[]) {
    const { name, value } = (element ?? {}) as { name?: unknown; value?: unknown };
    if (typeof name !== 'string' || typeof value !== 'number') continue;
    const listener = listenerOfGauge(name);
    if (listener === undefined) continue;
    listeners.push({ listener, active: value, role: roleOf(listener, excludes) });
  }
  const visible = listeners.filter((l) => l.role !== 'admin');
  const total = visible.length === 0 ? null : visible.filter((l) => l.role === 'counted').reduce((sum, l) => sum + l.active, 0);
  return { total, listeners };
}
