/**
 * `--exclude-listener` patterns (issue 20 item 8): a restricted syntax that means what the same text
 * means as a regular expression, matched at a cost bounded by name length × pattern length.
 */
import fc from 'fast-check';
import { readListenerPattern } from '../../../src/drain-contract';
import { compileListenerPattern } from '../../../src/shutdown/listener-pattern';

describe('listener patterns', () => {
  test.each([
    ['_8002$', '0.0.0.0_8002', true],
    ['_8002$', '0.0.0.0_80020', false],
    ['_8002$', '[::]_8002', true],
    ['^ingress_', 'ingress_https', true],
    ['^ingress_', 'x_ingress_https', false],
    ['^stats$', 'stats', true],
    ['^stats$', 'stats2', false],
    ['0.0.0.0_80', '0x0y0z0_80', true],
    ['0\\.0\\.0\\.0_80', '0x0y0z0_80', false],
    ['\\[::\\]_8002$', '[::]_8002', true],
    ['ünïcødé', 'ingress_ünïcødé_8002', true],
    ['^$', '', true],
  ])('%s against %s: %s, as the same text as a regular expression', (pattern, name, expected) => {
    expect(compileListenerPattern(pattern).test(name)).toBe(expected);
    expect(new RegExp(pattern).test(name)).toBe(expected);
  });

  test('equals the regular expression of the same text for any pattern of the syntax and any name', () => {
    const unit = fc.oneof(fc.constantFrom('a', 'b', '_', '0', '8', ':', '-', '/', '.', '\\.', '\\[', '\\]', '\\$', '\\^', '\\\\', 'é'));
    const pattern = fc
      .tuple(fc.boolean(), fc.array(unit, { minLength: 1, maxLength: 6 }), fc.boolean())
      .map(([start, units, end]) => `${start ? '^' : ''}${units.join('')}${end ? '$' : ''}`);
    const name = fc.array(fc.constantFrom('a', 'b', '_', '0', '8', ':', '.', '[', ']', '$', '^', '\\', 'é'), { maxLength: 12 }).map((c) => c.join(''));
    fc.assert(
      fc.property(pattern, name, (p, n) => {
        expect(readListenerPattern(p).ok).toBe(true);
        expect(compileListenerPattern(p).test(n)).toBe(new RegExp(p).test(n));
      }),
      { numRuns: 5000 },
    );
  });

  test('the pattern that made the regular expression engine backtrack for ever is refused, and no pattern of the syntax can', () => {
    expect(readListenerPattern('(a+)+$')).toMatchObject({ ok: false });
    // The worst the syntax allows: a pattern of 256 wildcards with a literal at the end, against a long name.
    const worst = `${'.'.repeat(255)}b`;
    expect(readListenerPattern(worst).ok).toBe(true);
    expect(compileListenerPattern(worst).test('a'.repeat(16 * 1024))).toBe(false);
  });
});
