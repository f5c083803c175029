/** `check --wait`: attempts with back-off until done or the time is up, on a clock the test controls. */
import { FIRST_PAUSE_MS, MAX_PAUSE_MS, waitUntil, type WaitClock } from '../../../src/check/wait';

/** A clock that only moves when the code under test sleeps: every pause is recorded. */
function fakeClock(): WaitClock & { pauses: number[] } {
  let now = 0;
  const pauses: number[] = [];
  return {
    pauses,
    now: () => now,
    sleep: async (ms) => {
      pauses.push(ms);
      now += ms;
    },
  };
}

test('stops at the first healthy attempt, pausing 1 s, 2 s, 4 s… in between', async () => {
  const clock = fakeClock();
  let attempts = 0;
  const waited = await waitUntil(async () => ++attempts, (n) => n === 4, 60_000, clock);
  expect(waited).toEqual({ result: 4, attempts: 4, elapsedMs: 7000, timedOut: false });
  expect(clock.pauses).toEqual([FIRST_PAUSE_MS, 2000, 4000]);
});

test('the pause never exceeds 10 s, and never runs past the deadline; one last attempt at the deadline', async () => {
  const clock = fakeClock();
  const seen: (number | null)[] = [];
  const waited = await waitUntil(async () => 'failing', () => false, 43_000, clock, (progress) => seen.push(progress.nextInMs));
  expect(clock.pauses).toEqual([1000, 2000, 4000, 8000, MAX_PAUSE_MS, MAX_PAUSE_MS, 8000]);
  expect(clock.pauses.reduce((a, b) => a + b, 0)).toBe(43_000);
  expect(waited).toEqual({ result: 'failing', attempts: 8, elapsedMs: 43_000, timedOut: true });
  expect(seen.at(-1)).toBeNull();
});

test('an attempt that takes longer than the wait still ends it after that attempt', async () => {
  const clock = fakeClock();
  const slow = async () => {
    await clock.sleep(5000);
    return false;
  };
  const waited = await waitUntil(slow, (done) => done, 3000, clock);
  expect(waited).toMatchObject({ attempts: 1, timedOut: true });
});
