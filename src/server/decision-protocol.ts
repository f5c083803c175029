/**
 * The messages between the server's main thread and its decision workers. Only plain data crosses:
 * the body goes in as a transferred ArrayBuffer (no copy), the answer comes back as the response text.
 */
import type { AdmissionOutcome } from '../admission/decide';
import type { Config } from '../config/types';

/** What each worker is started with. */
export interface DecisionWorkerData {
  config: Config;
  /** A CommonJS module whose `mutate` export replaces the core (tests exercise the own-bug paths). */
  coreModule?: string;
}

/** Main → worker: decide on one request body. */
export interface DecideMessage {
  id: number;
  body: ArrayBuffer;
}

/**
 * Worker → main, sent as soon as the body parsed: if the decision then never finishes (a timeout, the
 * worker's memory limit), the main thread still knows which review to answer.
 */
export interface ParsedMessage {
  id: number;
  kind: 'parsed';
  review: { uid: string; apiVersion: string } | undefined;
}

/** Worker → main: the finished answer. */
export interface AnsweredMessage {
  id: number;
  kind: 'answered';
  httpStatus: number;
  /** The response body, already JSON. */
  text: string;
  /** For metrics and logs; undefined when the body was refused before a decision (not JSON, too deep). */
  outcome: AdmissionOutcome | undefined;
}

export type WorkerMessage = ParsedMessage | AnsweredMessage;
