/**
 * The ranges the webhook and the drain program both accept.
 * Part of the drain contract (index.ts): imports nothing outside this folder and nothing from Node.
 */
/**
 * The longest duration (deadline, delay, minimum drain, poll interval, timeout) either side accepts:
 * about 23 days. It stays below 2^31 − 1 ms (about 24.8 days), the longest delay a JavaScript timer
 * holds, so even a program that arms one timer for its whole deadline is right. The webhook caps
 * the deadline it derives from a longer grace period at this value.
 */
export const MAX_DEADLINE_SECONDS = 2_000_000;
export const MAX_DURATION_MS = MAX_DEADLINE_SECONDS * 1000;

/** The largest connection threshold either side accepts. */
export const MAX_MIN_CONNECTIONS = 1_000_000;
