/**
 * Durations on the command line: `290s`, `500ms`, `0s`. Only whole numbers and these two units, because
 * the values are computed by the webhook and a typo must fail loudly rather than mean something else.
 */
const DURATION = /^(\d{1,9})(ms|s)$/;

export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  const amount = Number(match[1]);
  return match[2] === 's' ? amount * 1000 : amount;
}
