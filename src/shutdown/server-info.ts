/** The fields of `/server_info` the program uses; anything missing or malformed is simply absent. */
export interface ServerInfo {
  version?: string;
  state?: string;
  uptime?: string;
}

export function parseServerInfo(body: string): ServerInfo {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const info: ServerInfo = {};
  if (typeof parsed.version === 'string') info.version = parsed.version;
  if (typeof parsed.state === 'string') info.state = parsed.state;
  if (typeof parsed.uptime_current_epoch === 'string') info.uptime = parsed.uptime_current_epoch;
  return info;
}
