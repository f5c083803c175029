/**
 * Turning an AdmissionReview body into a value, with a specific 4xx for every way it can be wrong.
 * The body is read raw and parsed here (not by express.json) so each failure gets its own message.
 */
import { isUtf8 } from 'node:buffer';
import { HttpError } from './http-error';

/** Real Pods are a dozen levels deep; anything far deeper is an attack or a bug, not a Pod. */
export const MAX_JSON_DEPTH = 100;

const BYTE_ORDER_MARK = 0xfeff;

export function parseJsonBody(body: unknown): unknown {
  if (!Buffer.isBuffer(body) || body.length === 0) throw new HttpError(400, 'request body is empty; expected an AdmissionReview');
  if (!isUtf8(body)) throw new HttpError(400, 'request body is not valid UTF-8');
  // Checked in place first (no decoder object per request), so decoding cannot meet a bad sequence.
  // A leading byte order mark is dropped, as a UTF-8 decoder does by default, so such bodies still parse.
  let text = body.toString('utf8');
  if (text.charCodeAt(0) === BYTE_ORDER_MARK) text = text.slice(1);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (nestsDeeperThan(value, MAX_JSON_DEPTH)) throw new HttpError(400, `request body nests deeper than ${MAX_JSON_DEPTH} levels`);
  return value;
}

/**
 * Whether a parsed JSON value has more than `limit` levels of objects/arrays. Recursive, but each call
 * goes one level deeper and the walk stops at `limit`, so the stack never holds more than `limit` + 1
 * frames however deep the input is. No per-node allocation: this runs over every request body.
 */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  if (limit === 0) return true;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) if (nestsDeeperThan(value[i], limit - 1)) return true;
    return false;
  }
  // JSON.parse builds plain objects: for...in sees exactly their own keys.
  for (const key in value) if (nestsDeeperThan((value as Record<string, unknown>)[key], limit - 1)) return true;
  return false;
}
