/** The fields of `/server_info` the program uses; anything missing or malformed is simply absent. */
export interface ServerInfo {
  version?: string;
  state?: string;
  uptime?: string;
}

/** Deepest nesting read: Envoy's answer is 4 deep (node metadata a few more); deeper is not its answer. */
export const MAX_JSON_DEPTH = 32;
/** Strings and brackets read at most: Envoy's answer has a few hundred; more is not its answer. */
export const MAX_JSON_TOKENS = 8192;
/** The characters that give a JSON text its shape. */
const STRUCTURE = /[[\]{}",]/g;

/**
 * What JSON.parse would not say about an answer, read before it is parsed: whether it is nested deeper
 * than MAX_JSON_DEPTH or has more than MAX_JSON_TOKENS strings and brackets (then it is not read at all,
 * so a hostile answer cannot make the parser, or this pass, hold JavaScript on a throttled node), and
 * which top-level keys occur more than once (JSON.parse keeps the last one and says nothing). One pass
 * that jumps natively from one structural character to the next; keys are compared decoded.
 */
function shapeOf(body: string): { readable: false } | { readable: true; repeated: Set<string> } {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  let depth = 0;
  let tokens = 0;
  let expectKey = false;
  STRUCTURE.lastIndex = 0;
  while (STRUCTURE.test(body)) {
    if (++tokens > MAX_JSON_TOKENS) return { readable: false };
    const i = STRUCTURE.lastIndex - 1;
    const c = body[i];
    if (c === '"') {
      const end = closingQuote(body, i);
      if (end < 0) return { readable: false };
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
      STRUCTURE.lastIndex = end + 1;
    } else if (c === '{' || c === '[') {
      if (++depth > MAX_JSON_DEPTH) return { readable: false };
      if (depth === 1 && c === '{') expectKey = true;
    } else if (c === '}' || c === ']') {
      depth--;
    } else if (depth === 1) {
      expectKey = true;
    }
  }
  return { readable: true, repeated };
}

/** The index of the quote that closes the string opening at `open`, or -1; each backslash run is read once. */
function closingQuote(body: string, open: number): number {
  for (let end = body.indexOf('"', open + 1); end >= 0; end = body.indexOf('"', end + 1)) {
    let backslashes = 0;
    while (body[end - 1 - backslashes] === '\\') backslashes++;
    if (backslashes % 2 === 0) return end;
  }
  return -1;
}

export function parseServerInfo(body: string): ServerInfo {
  const shape = shapeOf(body);
  if (!shape.readable) return {};
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return {};
  }
  if (typeof parsed !== 'object' || parsed === null) return {};
  const info: ServerInfo = {};
  // Two "version" keys: which one Envoy meant cannot be known, so there is none.
  if (typeof parsed.version === 'string' && !shape.repeated.has('version')) info.version = parsed.version;
  if (typeof parsed.state === 'string') info.state = parsed.state;
  if (typeof parsed.uptime_current_epoch === 'string') info.uptime = parsed.uptime_current_epoch;
  return info;
}
