import { AdminCallError, type AdminClient } from './admin-client';
import { textReader } from './body-readers';
import { MAX_SERVER_INFO_BYTES } from './drain';
import { formatEnvoyVersion, parseEnvoyVersion } from './envoy-version';
import type { ListenerMatcher } from './listener-pattern';
import { LISTENER_GAUGES_PATH, ListenerGaugeScanner, type ListenerGauge, type UdpProxyGauge } from './listener-stats';
import { parseServerInfo } from './server-info';

/** Listener rows `status` shows at most; the rest are counted, and the total includes them. */
export const STATUS_MAX_LISTENERS = 1000;

/** What `status` reports: enough for an operator to see whether Envoy is draining and what is left. */
export interface EnvoyStatus {
  admin: string;
  state: string;
  envoyVersion: string;
  uptime: string | null;
  /** Counted connections (the number the drain compares with its threshold), null if unknown. */
  activeConnections: number | null;
  listeners: ListenerGauge[];
  /** Listeners counted but not listed (beyond STATUS_MAX_LISTENERS). */
  listenersNotShown: number;
  /** Counted UDP sessions (the drain waits for them too), null if unknown. */
  udpSessions: number | null;
  udpProxies: UdpProxyGauge[];
  /** UDP proxies counted but not listed (beyond STATUS_MAX_LISTENERS). */
  udpProxiesNotShown: number;
}

export async function readStatus(admin: AdminClient, adminText: string, excludes: ListenerMatcher[], timeoutMs: number): Promise<EnvoyStatus> {
  const info = await admin.call('GET', '/server_info', timeoutMs, textReader(MAX_SERVER_INFO_BYTES));
  if (info.status !== 200) throw new AdminCallError('failed', `GET /server_info: HTTP ${info.status}`);
  const serverInfo = info.body === undefined ? {} : parseServerInfo(info.body);
  const stats = await admin.call('GET', LISTENER_GAUGES_PATH, timeoutMs, new ListenerGaugeScanner(excludes, STATUS_MAX_LISTENERS));
  // Unknown when unreadable: the operator sees the same thing the drain would.
  const count = stats.status === 200 && stats.body.ok ? stats.body : { total: null, listeners: [], omitted: 0, sessions: null, udpProxies: [], udpOmitted: 0 };
  return {
    admin: adminText,
    state: serverInfo.state ?? 'unknown',
    envoyVersion: formatEnvoyVersion(serverInfo.version === undefined ? undefined : parseEnvoyVersion(serverInfo.version)),
    uptime: serverInfo.uptime ?? null,
    activeConnections: count.total,
    listeners: count.listeners,
    listenersNotShown: count.omitted,
    udpSessions: count.total === null ? null : count.sessions,
    udpProxies: count.udpProxies,
    udpProxiesNotShown: count.udpOmitted,
  };
}

export function renderStatusTable(status: EnvoyStatus): string {
  const head = [
    ['Admin', status.admin],
    ['State', status.state],
    ['Envoy', status.envoyVersion],
    ['Uptime', status.uptime ?? 'unknown'],
    ['Active connections', status.activeConnections === null ? 'unknown' : String(status.activeConnections)],
    ['UDP sessions', status.udpSessions === null ? 'unknown' : String(status.udpSessions)],
  ];
  const headWidth = Math.max(...head.map(([label]) => (label as string).length));
  const lines = head.map(([label, value]) => `${(label as string).padEnd(headWidth)}  ${value}`);
  const counted = (role: string) => (role === 'counted' ? 'yes' : `no (${role})`);
  lines.push('', ...table([['LISTENER', 'ACTIVE', 'COUNTED'], ...status.listeners.map((l) => [l.listener, String(l.active), counted(l.role)])]));
  if (status.listenersNotShown > 0) lines.push(`… ${status.listenersNotShown} more listeners not shown (counted in the total)`);
  if (status.udpProxies.length > 0) {
    lines.push('', ...table([['UDP PROXY', 'SESSIONS', 'COUNTED'], ...status.udpProxies.map((u) => [u.statPrefix, String(u.sessions), counted(u.role)])]));
  }
  if (status.udpProxiesNotShown > 0) lines.push(`… ${status.udpProxiesNotShown} more UDP proxies not shown (counted in the total)`);
  return `${lines.join('\n')}\n`;
}

/** Rows of three columns: the first left-aligned, the second right-aligned. */
function table(rows: readonly string[][]): string[] {
  const widths = [0, 1].map((column) => Math.max(...rows.map((row) => (row[column] as string).length)));
  return rows.map((row) => `${(row[0] as string).padEnd(widths[0] as number)}  ${(row[1] as string).padStart(widths[1] as number)}  ${row[2]}`);
}
