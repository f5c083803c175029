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
