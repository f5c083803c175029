/**
 * One AdmissionReview body to one answer: parse (with the body checks of ./json-body), then the pure
 * admission decision. The decision workers run it for large reviews, the main thread for small ones
 * (see `INLINE_DECISION_MAX_BYTES` in ./webhook-server): one function, so both give the same answer.
 */
import { decideAdmission, type AdmissionOutcome, type MutateFunction } from '../admission/decide';
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
  return { httpStatus: decision.httpStatus, text: JSON.stringify(decision.body), outcome: decision.outcome };
}

/** A test-only replacement of the core: a CommonJS module exporting `mutate`. */
export function loadCoreModule(path: string | undefined): MutateFunction | undefined {
  return path === undefined ? undefined : (require(path) as { mutate: MutateFunction }).mutate;
}
