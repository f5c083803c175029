/**
 * Before answering, the core applies its own patch to a copy of the input with fast-json-patch (the
 * same kind of applier the API server uses) and validates the result. Any failure is a drainguard
 * bug and throws: a wrong patch must never reach the API server.
 */
import { applyPatch } from 'fast-json-patch';
import { cloneJson, jsonEqual } from './json-value';
import { PatchVerificationError } from './errors';
import type { Pod } from './k8s';
import type { PatchOperation } from './result';
import { validatePod } from './validate-pod';

export function verifyPatch(input: Pod, patch: readonly PatchOperation[], expected: Pod): void {
  let patched: Pod;
  try {
    patched = applyPatch(cloneJson(input), cloneJson(patch as PatchOperation[]), true, true).newDocument;
  } catch (error) {
    throw new PatchVerificationError(`drainguard bug: the patch does not apply: ${(error as Error).message}`);
  }
  if (!jsonEqual(patched, expected)) {
    throw new PatchVerificationError('drainguard bug: the patch does not produce the pod drainguard computed');
  }
  // Only violations the patch introduced count: the input's own problems are the API server's to report.
  // A patched pod without problems introduced none, so the input is only validated when there are some.
  const after = validatePod(patched);
  if (after.length === 0) return;
  const before = new Set(validatePod(input));
  const introduced = after.filter((problem) => !before.has(problem));
  if (introduced.length > 0) {
    throw new PatchVerificationError(`drainguard bug: the patched pod is invalid: ${introduced.join('; ')}`, introduced);
  }
}
