/**
 * The one duration syntax of the drain contract.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
import { MAX_DEADLINE_SECONDS, MAX_DURATION_MS } from './limits';

/** Whole seconds or milliseconds, no leading zeros: `290s`, `500ms`, `0s`. */
const DURATION = /^(0|[1-9][0-9]{0,9})(ms|s)$/;

export const DURATION_FORM = `a whole number of seconds or milliseconds such as 290s or 500ms, at most ${MAX_DEADLINE_SECONDS}s`;

/** A duration in milliseconds; undefined when it is not written as above or exceeds MAX_DEADLINE_SECONDS. */
export function parseDuration(text: string): number | undefined {
  // A test and a slice rather than exec: no match array for a value read on every admission.
  if (!DURATION.test(text)) return undefined;
  const seconds = !text.endsWith('ms');
  const amount = Number(text.slice(0, text.length - (seconds ? 1 : 2)));
  const ms = seconds ? amount * 1000 : amount;
  return ms <= MAX_DURATION_MS ? ms : undefined;
}

/** The shortest text `parseDuration` reads back as `ms`: `5s` rather than `5000ms`. */
export function formatDuration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`;
}
