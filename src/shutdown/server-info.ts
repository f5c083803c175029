/** The fields of `/server_info` the program uses; anything missing or malformed is simply absent. */
export interface ServerInfo {
  version?: string;
  state?: string;
  uptime?: string;
}

/**
 * The top-level keys of a JSON object text that occur more than once (JSON.parse keeps the last one and
 * says nothing). One pass over the text, tracking strings and nesting; keys are compared decoded.
 */
function repeatedTopLevelKeys(body: string): Set<string> {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let depth = 0;
  let expectKey = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c === '"') {
      let end = i + 1;
      while (end < body.length && body[end] !== '"') end += body[end] === '\\' ? 2 : 1;
      if (depth === 1 && expectKey) {
        let key: string;
        try {
          key = JSON.parse(body.slice(i, end + 1)) as string;
        } catch {
          key = body.slice(i, end + 1);
        }
        if (seen.has(key)) repeated.add(key);
        seen.add(key);
        expectKey = false;
      }
      i = end;
    } else if (c === '{' || c === '[') {
      depth++;
      if (depth === 1 && c === '{') expectKey = true;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (c === ',' && depth === 1) {
      expectKey = true;
    }
  }
  return repeated;
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
  // Two "version" keys: which one Envoy meant cannot be known, so there is none.
  if (typeof parsed.version === 'string' && !repeatedTopLevelKeys(body).has('version')) info.version = parsed.version;
  if (typeof parsed.state === 'string') info.state = parsed.state;
  if (typeof parsed.uptime_current_epoch === 'string') info.uptime = parsed.uptime_current_epoch;
  return info;
}
