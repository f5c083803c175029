/**
 * Kubernetes resource quantities (`100m`, `128Mi`, `1.5G`, `2e3`), parsed exactly.
 *
 * Values are kept as an exact fraction of BigInts so that comparisons never suffer float rounding
 * (`0.1` CPU vs `100m` must compare equal). Only what drainguard needs: parse, compare, subtract.
 */
import type { Quantity } from './index';

/** An exact non-negative or negative rational number: numerator / denominator, denominator > 0. */
export interface ExactQuantity {
  readonly numerator: bigint;
  readonly denominator: bigint;
}

const DECIMAL_SUFFIX_EXPONENTS: Record<string, number> = {
  n: -9,
  u: -6,
  m: -3,
  '': 0,
  k: 3,
  M: 6,
  G: 9,
  T: 12,
  P: 15,
  E: 18,
};

const BINARY_SUFFIX_EXPONENTS: Record<string, number> = {
  Ki: 10,
  Mi: 20,
  Gi: 30,
  Ti: 40,
  Pi: 50,
  Ei: 60,
};

/** sign, digits (with an optional fraction), then one of: a binary suffix, a decimal exponent, a decimal suffix. */
const QUANTITY_PATTERN =
  /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|[eE]([+-]?\d+)|(n|u|m|k|M|G|T|P|E)?)$/;

/** Exponents far beyond anything Kubernetes accepts would only make huge BigInts. */
const MAX_DECIMAL_EXPONENT = 64;

/** Parses a quantity; `undefined` when it is not a valid Kubernetes quantity. */
export function parseQuantity(value: Quantity): ExactQuantity | undefined {
  const text = typeof value === 'number' ? numberToQuantityText(value) : value;
  if (text === undefined) return undefined;
  const match = QUANTITY_PATTERN.exec(text);
  if (!match) return undefined;
  const [, sign = '', number = '', binarySuffix, exponentText, decimalSuffix = ''] = match;

  const [integerPart = '', fractionPart = ''] = number.split('.');
  let numerator = BigInt(integerPart + fractionPart);
  let decimalExponent = -fractionPart.length;
  let binaryExponent = 0;

  if (binarySuffix !== undefined) binaryExponent = BINARY_SUFFIX_EXPONENTS[binarySuffix] ?? 0;
  else if (exponentText !== undefined) {
    const exponent = Number(exponentText);
    if (Math.abs(exponent) > MAX_DECIMAL_EXPONENT) return undefined;
    decimalExponent += exponent;
  } else decimalExponent += DECIMAL_SUFFIX_EXPONENTS[decimalSuffix] ?? 0;

  let denominator = 1n;
  if (decimalExponent >= 0) numerator *= 10n ** BigInt(decimalExponent);
  else denominator = 10n ** BigInt(-decimalExponent);
  numerator *= 2n ** BigInt(binaryExponent);
  if (sign === '-') numerator = -numerator;
  return { numerator, denominator };
}

/** YAML numbers (`cpu: 1`, `cpu: 0.5`) are valid quantities; JavaScript may print them as `1e+21`. */
function numberToQuantityText(value: number): string | undefined {
  if (!Number.isFinite(value)) return undefined;
  return String(value).replace('e+', 'e');
}

export function isValidQuantity(value: Quantity): boolean {
  return parseQuantity(value) !== undefined;
}

/** Negative when a < b, zero when equal, positive when a > b. */
export function compareExact(a: ExactQuantity, b: ExactQuantity): number {
  const left = a.numerator * b.denominator;
  const right = b.numerator * a.denominator;
  return left < right ? -1 : left > right ? 1 : 0;
}

export function subtractExact(a: ExactQuantity, b: ExactQuantity): ExactQuantity {
  return {
    numerator: a.numerator * b.denominator - b.numerator * a.denominator,
    denominator: a.denominator * b.denominator,
  };
}

/** Compares two quantities; `undefined` when either does not parse. */
export function compareQuantities(a: Quantity, b: Quantity): number | undefined {
  const left = parseQuantity(a);
  const right = parseQuantity(b);
  if (left === undefined || right === undefined) return undefined;
  return compareExact(left, right);
}
