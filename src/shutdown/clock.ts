import { sleep, type Platform } from './platform/platform';

/** Time as the drain sees it. Injected so unit tests run the whole timeline without real waiting. */
export interface Clock {
  /** Milliseconds on a monotonic scale (only differences are meaningful). */
  now(): number;
  /** Resolves after `ms`, however long that is (no timer overflow; see platform.ts). */
  sleep(ms: number): Promise<void>;
}

export function platformClock(platform: Pick<Platform, 'now' | 'setTimer'>): Clock {
  return {
    now: () => platform.now(),
    sleep: (ms) => sleep(platform, ms),
  };
}
