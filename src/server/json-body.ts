/**
 * Turning an AdmissionReview body into a value, with a specific 4xx for every way it can be wrong.
 * The body is read raw and parsed here (not by express.json) so each failure gets its own message.
 */
import { HttpError } from './http-error';

/** Real Pods are a dozen levels deep; anything far deeper is an attack or a bug, not a Pod. */
export const MAX_JSON_DEPTH = 100;

export function parseJsonBody(body: unknown): unknown {
  if (!Buffer.isBuffer(body) || body.length === 0) throw new HttpError(400, 'request body is empty; expected an AdmissionReview');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new HttpError(400, 'request body is not valid UTF-8');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `request body is not valid JSON: ${(error as Error).message}`);
  }
  const depth = nestingDepth(value, MAX_JSON_DEPTH);
  if (depth > MAX_JSON_DEPTH) throw new HttpError(400, `request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

/** Depth of a parsed JSON value, iteratively (no recursion to overflow), stopping once past `limit`. */
function nestingDepth(root: unknown, limit: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[root, 1]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > limit) return deepest;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return deepest;
}
