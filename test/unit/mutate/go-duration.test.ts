/** Go's time.ParseDuration syntax, as the upstream sidecars read their duration flags. */
import { parseGoDuration } from '../../../src/mutate/facts/go-duration';

const S = 1_000_000_000n;

test.each<[string, bigint]>([
  ['0', 0n],
  ['-0', 0n],
  ['0s', 0n],
  ['90s', 90n * S],
  ['1m30s', 90n * S],
  ['1.5h', 5400n * S],
  ['500ms', S / 2n],
  ['.5s', S / 2n],
  ['1.s', S],
  ['1h2m3s4ms5us6ns', 3723n * S + 4_005_006n],
  ['2µs', 2000n],
  ['2μs', 2000n],
  ['+15s', 15n * S],
  ['-5s', -5n * S],
  ['0.0000000001s', 0n],
  ['9223372036854775807ns', 2n ** 63n - 1n],
])('%s is %d ns', (text, nanoseconds) => {
  expect(parseGoDuration(text)).toBe(nanoseconds);
});

test.each(['', '5', '-', '.s', 's', '5 s', ' 5s', '5s ', '5sec', '5S', '1e3s', '0x10s', '5s5', '9223372036854775808ns', '3000000h', `${'1'.repeat(80)}s`])(
  '%j is not a Go duration',
  (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  },
);

test('a very long run of digits is refused without being read', () => {
  expect(parseGoDuration('9'.repeat(1_000_000))).toBeUndefined();
});
