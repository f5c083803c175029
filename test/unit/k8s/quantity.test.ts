import { compareQuantities, isValidQuantity, parseQuantity } from '../../../src/k8s/quantity';

describe('parseQuantity', () => {
  test.each<[string | number, string | number]>([
    ['100m', '0.1'],
    ['1', 1],
    ['1000m', '1'],
    ['1k', '1000'],
    ['1Ki', '1024'],
    ['1Mi', 1048576],
    ['1Gi', '1073741824'],
    ['1Ti', '1024Gi'],
    ['1Pi', '1024Ti'],
    ['1Ei', '1024Pi'],
    ['1M', '1000k'],
    ['1G', '1e9'],
    ['1T', '1e12'],
    ['1P', '1E15'],
    ['1E', '1e18'],
    ['1.5Gi', '1536Mi'],
    ['.5', '500m'],
    ['5.', '5'],
    ['2e3', '2k'],
    ['1e-3', '1m'],
    ['1000n', '1u'],
    ['+1', '1'],
    [0.5, '500m'],
  ])('%j equals %j', (a, b) => {
    expect(compareQuantities(a, b)).toBe(0);
  });

  test.each([['', 'empty'], ['1.2.3', 'two dots'], ['1mi', 'lower-case binary'], ['1KiB', 'unit suffix'], [' 1', 'space'], ['1 Gi', 'inner space'], ['Gi', 'no number'], ['1e', 'bare exponent'], ['1e999', 'huge exponent'], ['0x10', 'hex'], ['2e3m', 'exponent and suffix']])(
    '%j is invalid (%s)',
    (text) => {
      expect(isValidQuantity(text)).toBe(false);
    },
  );

  test('non-finite numbers are invalid', () => {
    expect(parseQuantity(Number.NaN)).toBeUndefined();
    expect(parseQuantity(Number.POSITIVE_INFINITY)).toBeUndefined();
  });
});

describe('compareQuantities', () => {
  test.each<[string | number, string | number, number]>([
    ['50m', '100m', -1],
    ['128Mi', '128M', 1],
    ['64Mi', '0.0625Gi', 0],
    ['-1', '0', -1],
    [2, '1999m', 1],
    ['1e3', '1k', 0],
    ['999999999999999999999', '1e21', -1],
  ])('%j vs %j → %i', (a, b, sign) => {
    expect(compareQuantities(a, b)).toBe(sign);
  });

  test('undefined when either side does not parse', () => {
    expect(compareQuantities('lots', '1')).toBeUndefined();
  });
});
