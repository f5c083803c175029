import { AdminCallError, type AdminClient } from './admin-client';
import { textReader } from './body-readers';
import { MAX_SERVER_INFO_BYTES } from './drain';
import { formatEnvoyVersion, parseEnvoyVersion } from './envoy-version';
import type { ListenerMatcher } from './listener-pattern';
import { LISTENER_GAUGES_PATH, ListenerGaugeScanner, type ListenerGauge } from './listener-stats';
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
}

export async function readStatus(admin: AdminClient, adminText: string, excludes: ListenerMatcher[], timeoutMs: number): Promise<EnvoyStatus> {
  const info = await admin.call('GET', '/server_info', timeoutMs, textReader(MAX_SERVER_INFO_BYTES));
  if (info.status !== 200) throw new AdminCallError('failed', `GET /server_info: HTTP ${info.status}`);
  const serverInfo = info.body === undefined ? {} : parseServerInfo(info.body);
  const stats = await admin.call('GET', LISTENER_GAUGES_PATH, timeoutMs, new ListenerGaugeScanner(excludes, STATUS_MAX_LISTENERS));
  // Unknown when unreadable: the operator sees the same thing the drain would.
  const count = stats.status === 200 && stats.body.ok ? stats.body : { total: null, listeners: [], omitted: 0 };
  return {
    admin: adminText,
    state: serverInfo.state ?? 'unknown',
    envoyVersion: formatEnvoyVersion(serverInfo.version === undefined ? undefined : parseEnvoyVersion(serverInfo.version)),
    uptime: serverInfo.uptime ?? null,
    activeConnections: count.total,
    listeners: count.listeners,
    listenersNotShown: count.omitted,
  };
}

export function renderStatusTable(status: EnvoyStatus): string {
  const head = [
    ['Admin', status.admin],
    ['State', status.state],
    ['Envoy', status.envoyVersion],
    ['Uptime', status.uptime ?? 'unknown'],
    ['Active connections', status.activeConnections === null ? 'unknown' : String(status.activeConnections)],
  ];
  const headWidth = Math.max(...head.map(([label]) => (label as string).length));
  const lines = head.map(([label, value]) => `${(label as string).padEnd(headWidth)}  ${value}`);
  const rows = [['LISTENER', 'ACTIVE', 'COUNTED'], ...status.listeners.map((l) => [l.listener, String(l.active), l.role === 'counted' ? 'yes' : `no (${l.role})`])];
  const widths = [0, 1].map((column) => Math.max(...rows.map((row) => (row[column] as string).length)));
  lines.push('');
  for (const row of rows) lines.push(`${(row[0] as string).padEnd(widths[0] as number)}  ${(row[1] as string).padStart(widths[1] as number)}  ${row[2]}`);
  if (status.listenersNotShown > 0) lines.push(`… ${status.listenersNotShown} more listeners not shown (counted in the total)`);
  return `${lines.join('\n')}\n`;
}
