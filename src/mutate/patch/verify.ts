/**
 * Before answering, the core applies its own patch to a copy of the input with fast-json-patch (the
 * same kind of applier the API server uses) and validates the result. Any failure is a drainguard
 * bug and throws: a wrong patch must never reach the API server.
 */
import { applyPatch } from 'fast-json-patch';
import type { Pod } from '../k8s';
import { validatePod } from '../k8s/validate';
import type { PatchOperation } from './builder';
import { cloneJson, jsonEqual } from './json';

/**
 * Thrown only when drainguard's own patch fails verification (it does not apply, or the patched pod
 * has a violation the input did not have). That is always a drainguard bug, never the user's fault:
 * adapters answer it as an internal error rather than denying the pod.
 */
export class PatchVerificationError extends Error {
  constructor(
    message: string,
    /** The violations found in the patched pod that the input pod did not have. */
    readonly violations: readonly string[] = [],
  ) {
    super(message);
    this.name = 'PatchVerificationError';
  }
}

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
