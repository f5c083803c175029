/**
 * The admission decision: `(AdmissionReview, Config) → HTTP status + body`, pure and synchronous, so any
 * replica answers any request the same way and the server stays a thin adapter. The `outcome` is what
 * the adapter needs for metrics and logs; it never influences the answer.
 */
import type { Config } from '../config/types';
import { mutate, PatchVerificationError } from '../mutate/index';
import type { Pod } from '../k8s';
import type { MutationAction, MutationResult, PatchOperation, SkipReason } from '../mutate/result';
import {
  parseAdmissionReview,
  podFrom,
  type AdmissionResponse,
  type AdmissionReviewResponse,
} from './review';
import { shapeWarnings } from './warnings';

/** Metrics label `result` of a request. */
export type AdmissionResult =
  | 'mutated'
  | 'unchanged'
  | 'skipped'
  | 'denied'
  /** Not a Pod CREATE (UPDATE, DELETE, a subresource): allowed untouched. */
  | 'ignored'
  /** drainguard failed on a valid pod (its own bug): allowed without a patch, never blocking the pod. */
  | 'error'
  /** The request itself was malformed: HTTP 400. */
  | 'invalid';

export interface AdmissionOutcome {
  result: AdmissionResult;
  uid?: string;
  namespace?: string;
  name?: string;
  dryRun?: boolean;
  actions: MutationAction[];
  skipReason?: SkipReason;
  /** For `skipped`: what drainguard looked for or found, and why it left the pod alone (logged). */
  skipMessage?: string;
  patchOperations: number;
  /** Set for `invalid` (the 400 message) and `error` (the internal failure). */
  error?: string;
}

export interface AdmissionDecision {
  httpStatus: 200 | 400;
  body: AdmissionReviewResponse | { error: string };
  outcome: AdmissionOutcome;
}

/** The pure core, injectable so tests can exercise drainguard's own-bug path. */
export type MutateFunction = (pod: Pod, config: Config) => MutationResult;

export const INTERNAL_ERROR_WARNING =
  'drainguard: internal error, pod admitted unchanged (drain not installed); see the webhook log';

export function decideAdmission(review: unknown, config: Config, core: MutateFunction = mutate): AdmissionDecision {
  const parsed = parseAdmissionReview(review);
  if (!parsed.ok) return badRequest(parsed.message);
  const { apiVersion, request } = parsed;
  const context = {
    uid: request.uid,
    dryRun: request.dryRun,
    ...(request.namespace !== undefined ? { namespace: request.namespace } : {}),
    ...(request.name !== undefined ? { name: request.name } : {}),
  };
  const answer = (response: Omit<AdmissionResponse, 'uid'>, outcome: Omit<AdmissionOutcome, keyof typeof context>) =>
    ({
      httpStatus: 200,
      body: { apiVersion, kind: 'AdmissionReview', response: { uid: request.uid, ...response } },
      outcome: { ...context, ...outcome },
    }) satisfies AdmissionDecision;

  // Only a Pod CREATE gets drainguard's mutation; anything else a (mis)configured rule sends is let through.
  if (request.operation !== 'CREATE' || request.subResource !== undefined) {
    return answer({ allowed: true }, { result: 'ignored', actions: [], patchOperations: 0 });
  }
  const pod = podFrom(request);
  if (!pod.ok && 'notPod' in pod) {
    // The API server counts a 400 as a webhook failure, which could block the object under
    // failurePolicy Fail: another kind is let through, and the warning points at the webhook's rules.
    return answer(
      { allowed: true, warnings: shapeWarnings([notPodWarning(pod.notPod)]) },
      { result: 'ignored', actions: [], patchOperations: 0 },
    );
  }
  if (!pod.ok) return badRequest(pod.message, context);

  let result: MutationResult;
  try {
    result = core(pod.pod as Pod, config);
  } catch (error) {
    // A bug in drainguard must never stop a pod from being created: admit it untouched and say so.
    const detail = error instanceof PatchVerificationError ? `patch verification failed: ${error.message}` : String(error);
    return answer(
      { allowed: true, warnings: [INTERNAL_ERROR_WARNING] },
      { result: 'error', actions: [], patchOperations: 0, error: detail },
    );
  }

  const warnings = shapeWarnings(result.warnings);
  const withWarnings = warnings.length > 0 ? { warnings } : {};
  switch (result.status) {
    case 'denied':
      return answer(
        { allowed: false, status: { code: 403, message: result.message }, ...withWarnings },
        { result: 'denied', actions: [], patchOperations: 0 },
      );
    case 'skipped':
      // A pod left whole may still lose a drainguard.io/protected label it cannot honour.
      return answer(
        { allowed: true, ...patchOf(result.patch), ...withWarnings },
        { result: 'skipped', actions: [], skipReason: result.reason, skipMessage: result.message, patchOperations: result.patch.length },
      );
    case 'unchanged':
      return answer({ allowed: true, ...withWarnings }, { result: 'unchanged', actions: [], patchOperations: 0 });
    case 'invalid':
      // Like an object that is not a Pod at all: the API server decodes pods into typed structs and
      // never sends these, so this is a malformed request, answered 400 with every bad field named.
      return badRequest(`request.object is not a valid Pod: ${summariseProblems(result.problems)}`, context);
    case 'mutated': {
      return answer(
        { allowed: true, ...patchOf(result.patch), ...withWarnings },
        { result: 'mutated', actions: result.actions, patchOperations: result.patch.length },
      );
    }
  }
}

/** The answer's patch fields: none for an empty patch. */
function patchOf(patch: readonly PatchOperation[]): { patchType?: 'JSONPatch'; patch?: string } {
  return patch.length > 0 ? { patchType: 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') } : {};
}

export function notPodWarning(what: string): string {
  return `drainguard: only Pods are mutated; got ${what}, admitted unchanged (check the webhook's rules)`;
}

const MAX_PROBLEMS_SHOWN = 5;

function summariseProblems(problems: readonly string[]): string {
  const shown = problems.slice(0, MAX_PROBLEMS_SHOWN).join('; ');
  return problems.length > MAX_PROBLEMS_SHOWN ? `${shown}; and ${problems.length - MAX_PROBLEMS_SHOWN} more` : shown;
}

function badRequest(message: string, context: Partial<AdmissionOutcome> = {}): AdmissionDecision {
  return {
    httpStatus: 400,
    body: { error: message },
    outcome: { ...context, result: 'invalid', actions: [], patchOperations: 0, error: message },
  };
}

