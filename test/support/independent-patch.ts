/**
 * Applying drainguard's patches in tests with rfc6902: an RFC 6902 implementation independent of the
 * one the core verifies with (fast-json-patch), so a bug shared by the core and its own applier
 * cannot hide.
 */
import { applyPatch, type Operation } from 'rfc6902';

/**
 * A JSON copy. Not structuredClone: under jest's VM its arrays belong to another realm, and rfc6902
 * copies such arrays as plain objects.
 */
export function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

/** Applies `patch` to a copy of `document`; throws naming every operation that failed. */
export function applyIndependently<T>(document: T, patch: readonly unknown[]): T {
  const target = jsonCopy(document);
  const errors = applyPatch(target, jsonCopy(patch) as Operation[]).filter((error) => error !== null);
  if (errors.length > 0) throw new Error(`rfc6902 rejected the patch: ${errors.map(String).join('; ')}`);
  return target;
}
