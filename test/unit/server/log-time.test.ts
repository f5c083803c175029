/** The log line's time field is exactly pino's isoTime, whatever the clock says and however it moves. */
import fc from 'fast-check';
import pino from 'pino';
import { isoTimeOncePerSecond } from '../../../src/server/log-time';

/** pino's own isoTime at `millis`. */
function pinoAt(millis: number): string {
  const realNow = Date.now;
  Date.now = () => millis;
  try {
    return pino.stdTimeFunctions.isoTime();
  } finally {
    Date.now = realNow;
  }
}

test('property: equal to pino.stdTimeFunctions.isoTime for any sequence of clock readings', () => {
  // From 1970 to 2200, forwards, backwards and within one second (the cache must never go stale).
  const instant = fc.integer({ min: 0, max: 7_258_118_400_000 });
  const readings = fc.array(fc.oneof(instant, instant.map((t) => t - (t % 1000)), instant.map((t) => t - (t % 1000) + 999)), { minLength: 1, maxLength: 20 });
  fc.assert(
    fc.property(readings, (times) => {
      let index = 0;
      const time = isoTimeOncePerSecond(() => times[index] as number);
      for (index = 0; index < times.length; index += 1) expect(time()).toBe(pinoAt(times[index] as number));
    }),
    { numRuns: 300 },
  );
});

test('consecutive readings in one second and across a second boundary', () => {
  const readings = [1_764_556_799_998, 1_764_556_799_999, 1_764_556_800_000, 1_764_556_800_007, 1_764_556_800_042];
  let index = 0;
  const time = isoTimeOncePerSecond(() => readings[index] as number);
  const got: string[] = [];
  for (index = 0; index < readings.length; index += 1) got.push(time());
  expect(got).toEqual([
    ',"time":"2025-12-01T02:39:59.998Z"',
    ',"time":"2025-12-01T02:39:59.999Z"',
    ',"time":"2025-12-01T02:40:00.000Z"',
    ',"time":"2025-12-01T02:40:00.007Z"',
    ',"time":"2025-12-01T02:40:00.042Z"',
  ]);
});
