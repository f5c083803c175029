/**
 * Go's duration syntax, as Contour's and Envoy Gateway's sidecars parse their flags
 * (`time.ParseDuration`): an optional sign, then one or more decimal numbers, each with an optional
 * fraction and a unit (`ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`), e.g. `90s`, `1m30s`, `1.5h`,
 * `500ms`; or `0` alone. Read strictly, in one pass, exactly (nanoseconds as a bigint): a value the
 * sidecar would refuse is refused here too, never guessed at.
 */

const NANOSECONDS: Readonly<Record<string, bigint>> = {
  ns: 1n,
  us: 1_000n,
  'µs': 1_000n, // U+00B5 MICRO SIGN
  'μs': 1_000n, // U+03BC GREEK SMALL LETTER MU
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};

/** Go durations are int64 nanoseconds. */
const MAX_NANOSECONDS = 2n ** 63n - 1n;
/** Longer text is no duration anyone writes; refusing it bounds the work. */
const MAX_LENGTH = 64;

function isDigit(char: string | undefined): boolean {
  return char !== undefined && char >= '0' && char <= '9';
}

/** Nanoseconds, or undefined when `text` is not a Go duration (or overflows int64). */
export function parseGoDuration(text: string): bigint | undefined {
  if (text.length === 0 || text.length > MAX_LENGTH) return undefined;
  let at = 0;
  let negative = false;
  if (text[0] === '-' || text[0] === '+') {
    negative = text[0] === '-';
    at = 1;
  }
  if (text.slice(at) === '0') return 0n;
  if (at === text.length) return undefined;

  let total = 0n;
  while (at < text.length) {
    const intStart = at;
    while (isDigit(text[at])) at += 1;
    const whole = text.slice(intStart, at);
    let fraction = '';
    if (text[at] === '.') {
      at += 1;
      const fractionStart = at;
      while (isDigit(text[at])) at += 1;
      fraction = text.slice(fractionStart, at);
    }
    if (whole === '' && fraction === '') return undefined;
    const unitStart = at;
    while (at < text.length && text[at] !== '.' && !isDigit(text[at])) at += 1;
    const unit = NANOSECONDS[text.slice(unitStart, at)];
    if (unit === undefined) return undefined;
    // Go truncates what a fraction adds below one nanosecond.
    const fractionValue = fraction === '' ? 0n : (BigInt(fraction) * unit) / 10n ** BigInt(fraction.length);
    total += BigInt(whole === '' ? '0' : whole) * unit + fractionValue;
    if (total > MAX_NANOSECONDS) return undefined;
  }
  return negative ? -total : total;
}
