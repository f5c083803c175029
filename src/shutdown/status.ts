import { AdminCallError, type AdminClient } from './admin-client';
import { formatEnvoyVersion, parseEnvoyVersion } from './envoy-version';
import { countConnections, LISTENER_GAUGES_PATH, type ListenerGauge } from './listener-stats';
import { parseServerInfo } from './server-info';

/** What `status` reports: enough for an operator to see whether Envoy is draining and what is left. */
export interface EnvoyStatus {
  admin: string;
  state: string;
  envoyVersion: string;
  uptime: string | null;
  /** Counted connections (the number the drain compares with its threshold), null if unknown. */
  activeConnections: number | null;
  listeners: ListenerGauge[];
}

export async function readStatus(admin: AdminClient, adminText: string, excludes: RegExp[], timeoutMs: number): Promise<EnvoyStatus> {
  const info = await admin.call('GET', '/server_info', timeoutMs);
  if (info.status !== 200) throw new AdminCallError('unreachable', `GET /server_info: HTTP ${info.status}`);
  const serverInfo = parseServerInfo(info.body);
  const stats = await admin.call('GET', LISTENER_GAUGES_PATH, timeoutMs);
  let count: ReturnType<typeof countConnections> = { total: null, listeners: [] };
  if (stats.status === 200) {
    try {
      count = countConnections(stats.body, excludes);
    } catch {
      // Shown as unknown: the operator sees the same thing the drain would.
    }
  }
  return {
    admin: adminText,
    state: serverInfo.state ?? 'unknown',
    envoyVersion: formatEnvoyVersion(serverInfo.version === undefined ? undefined : parseEnvoyVersion(serverInfo.version)),
    uptime: serverInfo.uptime ?? null,
    activeConnections: count.total,
    listeners: count.listeners,
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
  return `${lines.join('\n')}\n`;
}
