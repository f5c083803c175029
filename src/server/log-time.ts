/**
 * The `time` field of every log line: exactly what pino's `stdTimeFunctions.isoTime` writes (ISO 8601
 * in UTC, milliseconds), with the date and time up to the second formatted once per second instead of
 * once per line. Formatting a whole Date cost about 3 µs of every admission (1.4% of the server's CPU
 * under load, measured with --cpu-prof); appending the milliseconds costs next to nothing.
 */
export function isoTimeOncePerSecond(now: () => number = Date.now): () => string {
  let second = Number.NaN;
  let prefix = '';
  return () => {
    const millis = now();
    const current = Math.floor(millis / 1000);
    if (current !== second) {
      second = current;
      const iso = new Date(current * 1000).toISOString();
      // Everything before the milliseconds and the final Z: `2026-12-01T02:40:01.`
      prefix = `,"time":"${iso.slice(0, iso.length - 4)}`;
    }
    const fraction = Math.floor(millis) - current * 1000;
    return `${prefix}${fraction < 10 ? '00' : fraction < 100 ? '0' : ''}${fraction}Z"`;
  };
}
