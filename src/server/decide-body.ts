/**
 * One AdmissionReview body to one answer: parse (with the body checks of ./json-body), then the pure
 * admission decision. The decision workers run it for large reviews, the main thread for small ones
 * (see `INLINE_DECISION_MAX_BYTES` in ./webhook-server): one function, so both give the same answer.
 */
import { decideAdmission, type AdmissionDecision, type AdmissionOutcome, type MutateFunction } from '../admission/decide';
import type { Config } from '../config/types';
import { HttpError } from './http-error';
import { parseJsonBody } from './json-body';

export interface BodyDecision {
  httpStatus: number;
  /** The response body, already JSON. */
  text: string;
  /** For metrics and logs; undefined when the body was refused before a decision (not JSON, too deep). */
  outcome: AdmissionOutcome | undefined;
}

/** `onParsed` sees the parsed review before the decision starts (a worker reports its uid early). */
export function decideBody(body: Buffer, config: Config, core: MutateFunction | undefined, onParsed?: (review: unknown) => void): BodyDecision {
  let review: unknown;
  try {
    review = parseJsonBody(body);
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    return { httpStatus: error.status, text: JSON.stringify({ error: error.message }), outcome: undefined };
  }
  onParsed?.(review);
  const decision = core ? decideAdmission(review, config, core) : decideAdmission(review, config);
  return { httpStatus: decision.httpStatus, text: answerText(decision.body), outcome: decision.outcome };
}

const EMPTY_PATCH_FIELD = '"patch":""';

/**
 * `JSON.stringify(body)`, with the base64 patch put in place rather than escaped: V8 escapes a string
 * character by character (about 1.5 ns each here), and a patch is a few KiB of base64, which never
 * needs escaping. The answer is stringified with an empty patch, and the patch goes between its
 * quotes: the first `"patch":""` in the text is that field, as every string before it (the uid) is
 * escaped and so holds no bare quote.
 */
export function answerText(body: AdmissionDecision['body']): string {
  if (!('response' in body) || body.response.patch === undefined) return JSON.stringify(body);
  const { patch } = body.response;
  const text = JSON.stringify({ ...body, response: { ...body.response, patch: '' } });
  const at = text.indexOf(EMPTY_PATCH_FIELD) + EMPTY_PATCH_FIELD.length - 1;
  return text.slice(0, at) + patch + text.slice(at);
}

/** A test-only replacement of the core: a CommonJS module exporting `mutate`. */
export function loadCoreModule(path: string | undefined): MutateFunction | undefined {
  return path === undefined ? undefined : (require(path) as { mutate: MutateFunction }).mutate;
}
