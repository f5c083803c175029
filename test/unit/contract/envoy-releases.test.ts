/**
 * The admin calls each Envoy release gets (src/drain-contract/envoy-releases.ts), at every era boundary:
 * the one table the drain program follows and `inject --explain` shows.
 */
import { DRAIN_CALL_ERAS, drainCallEra, drainListenersFlags, drainPosts, type EnvoyRelease } from '../../../src/drain-contract';

const release = (text: string): EnvoyRelease => {
  const [major, minor, patch] = text.split('.').map(Number) as [number, number, number];
  return { major, minor, patch };
};

test.each([
  // [release, --inbound-only, the flags of POST /drain_listeners]
  [undefined, false, 'graceful'],
  [undefined, true, 'graceful'],
  ['1.27.9', false, 'graceful'],
  ['1.27.9', true, 'graceful'],
  ['1.28.0', false, 'graceful&skip_exit'],
  ['1.33.9', true, 'graceful&skip_exit'],
  ['1.34.0', true, 'graceful&skip_exit&inboundonly'],
  ['1.39.0', false, 'graceful&skip_exit'],
  ['1.39.4', true, 'graceful&skip_exit&inboundonly'],
  ['1.40.0', false, 'graceful&skip_exit'],
  ['1.40.0', true, 'graceful&skip_exit&inboundonly'],
  ['1.41.2', false, 'graceful&skip_exit'],
  ['2.0.0', false, 'graceful&skip_exit'],
] as const)('Envoy %s, --inbound-only %s: POST /drain_listeners?%s', (version, inboundOnly, flags) => {
  expect(drainListenersFlags(version === undefined ? undefined : release(version), inboundOnly).join('&')).toBe(flags);
});

test.each([
  [undefined, 'before 1.28, or unknown'],
  ['1.27.0', 'before 1.28, or unknown'],
  ['1.28.0', '1.28 to 1.33'],
  ['1.34.0', '1.34 to 1.39'],
  ['1.39.9', '1.34 to 1.39'],
  ['1.40.0', '1.40 and later'],
  ['3.1.0', '1.40 and later'],
] as const)('Envoy %s is in the era %s', (version, releases) => {
  expect(drainCallEra(version === undefined ? undefined : release(version)).releases).toBe(releases);
});

test('the eras run oldest first, each from its own release, and every one says why', () => {
  const since = DRAIN_CALL_ERAS.map((era) => era.since);
  expect(since[0]).toBeUndefined();
  for (let i = 2; i < since.length; i++) {
    const [a, b] = [since[i - 1], since[i]] as [readonly [number, number], readonly [number, number]];
    expect(a[0] < b[0] || (a[0] === b[0] && a[1] < b[1])).toBe(true);
  }
  for (const era of DRAIN_CALL_ERAS) expect(era.why.length).toBeGreaterThan(20);
});

test('the POSTs in order: with a drain delay, releases with skip_exit start the drain with the delay', () => {
  expect(drainPosts(release('1.27.0'), { inboundOnly: false, drainDelay: true })).toEqual(['/healthcheck/fail', '/drain_listeners?graceful']);
  expect(drainPosts(release('1.39.0'), { inboundOnly: false, drainDelay: false })).toEqual(['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']);
  expect(drainPosts(release('1.40.0'), { inboundOnly: true, drainDelay: true })).toEqual([
    '/drain_listeners?graceful&skip_exit&inboundonly',
    '/healthcheck/fail',
    '/drain_listeners?graceful&skip_exit&inboundonly',
  ]);
});
