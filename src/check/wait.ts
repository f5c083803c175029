/**
 * `check --wait DURATION`: run the check again, with back-off, until the installation is healthy or the
 * time is up. Bounded: no attempt starts after the deadline, a pause never runs past it, and each
 * attempt's requests are bounded by --request-timeout. The clock is passed in, so tests control it.
 */

export interface WaitClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: WaitClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** Pauses between attempts: 1 s, doubling, at most 10 s (a starting Deployment is ready in seconds). */
export const FIRST_PAUSE_MS = 1000;
export const MAX_PAUSE_MS = 10_000;

export interface Progress<R> {
  attempt: number;
  result: R;
  /** Milliseconds until the next attempt, or null when this was the last. */
  nextInMs: number | null;
  remainingMs: number;
}

export interface Waited<R> {
  result: R;
  attempts: number;
  elapsedMs: number;
  timedOut: boolean;
}

export async function waitUntil<R>(
  attempt: () => Promise<R>,
  done: (result: R) => boolean,
  timeoutMs: number,
  clock: WaitClock,
  onProgress: (progress: Progress<R>) => void = () => {},
): Promise<Waited<R>> {
  const start = clock.now();
  const deadline = start + timeoutMs;
  let pause = FIRST_PAUSE_MS;
  for (let attempts = 1; ; attempts++) {
    const result = await attempt();
    const now = clock.now();
    const remainingMs = Math.max(0, deadline - now);
    if (done(result) || remainingMs === 0) {
      onProgress({ attempt: attempts, result, nextInMs: null, remainingMs });
      return { result, attempts, elapsedMs: now - start, timedOut: !done(result) };
    }
    const nextInMs = Math.min(pause, remainingMs);
    onProgress({ attempt: attempts, result, nextInMs, remainingMs });
    await clock.sleep(nextInMs);
    pause = Math.min(pause * 2, MAX_PAUSE_MS);
  }
}
