/**
 * Judging one fuzz answer. Patches are applied with `rfc6902`, an implementation independent of the
 * one drainguard uses to verify its own patches, and the result is checked with drainguard's validatePod
 * (the subset of Kubernetes pod validation its mutations could break).
 */
import { applyPatch, type Operation } from 'rfc6902';
import { defaultConfig } from '../../src/config';
import { INTERNAL_ERROR_WARNING } from '../../src/admission/decide';
import { mutate, validatePod, type Pod } from '../../src/mutate';
import type { FuzzCase } from './cases';

export type Verdict =
  /** As it should be. */
  | { kind: 'ok'; patchedPod?: Pod }
  /** A garbage case answered < 500 but not with the status expected for its class: reported only. */
  | { kind: 'unexpected-status'; detail: string }
  /** drainguard's own-bug path (admitted unchanged with the internal-error warning) on garbage: reported. */
  | { kind: 'internal-error'; detail: string }
  /** A correctness failure: the run fails. */
  | { kind: 'failure'; detail: string };

interface ReviewAnswer {
  apiVersion?: unknown;
  kind?: unknown;
  response?: {
    uid?: unknown;
    allowed?: unknown;
    patchType?: unknown;
    patch?: unknown;
    warnings?: unknown;
    status?: { code?: unknown };
  };
}

const config = defaultConfig();

function parseAnswer(body: Buffer): ReviewAnswer | undefined {
  try {
    return JSON.parse(body.toString('utf8')) as ReviewAnswer;
  } catch {
    return undefined;
  }
}

function decodePatch(patch: unknown): Operation[] | string {
  if (typeof patch !== 'string') return 'patch is not a base64 string';
  try {
    const operations = JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) as unknown;
    return Array.isArray(operations) ? (operations as Operation[]) : 'patch is not a JSON array';
  } catch (error) {
    return `patch does not decode: ${(error as Error).message}`;
  }
}

/** Applies `operations` to a copy of `target`; a message if any operation fails. */
function applied(target: unknown, operations: Operation[]): { pod: Pod } | { problem: string } {
  const copy = structuredClone(target);
  const results = applyPatch(copy, operations);
  const index = results.findIndex((result) => result !== null);
  if (index >= 0) return { problem: `operation ${index} ${JSON.stringify(operations[index]).slice(0, 200)} fails: ${String(results[index])}` };
  return { pod: copy as Pod };
}

function sentReview(fuzzCase: FuzzCase): { apiVersion?: unknown; request?: { uid?: unknown; object?: unknown } } {
  return (fuzzCase.review ?? {}) as { apiVersion?: unknown; request?: { uid?: unknown; object?: unknown } };
}

export function judge(fuzzCase: FuzzCase, status: number, body: Buffer): Verdict {
  if (status >= 500) return { kind: 'failure', detail: `HTTP ${status}: ${body.toString('utf8').slice(0, 300)}` };
  if (fuzzCase.class === 'large:content') return judgeLarge(fuzzCase, status, body);
  return fuzzCase.class.startsWith('valid:') ? judgeValid(fuzzCase, status, body) : judgeGarbage(fuzzCase, status, body);
}

/** A valid ~3 MiB Envoy pod: drainguard must answer it, with a patch, and not as its own failure. */
function judgeLarge(fuzzCase: FuzzCase, status: number, body: Buffer): Verdict {
  const fail = (detail: string): Verdict => ({ kind: 'failure', detail });
  const uid = sentReview(fuzzCase).request?.uid;
  if (status !== 200) return fail(`${String(uid)}: HTTP ${status}: ${body.toString('utf8').slice(0, 200)}`);
  const response = parseAnswer(body)?.response;
  if (response === undefined || response.uid !== uid) return fail(`${String(uid)}: uid not echoed`);
  if (Array.isArray(response.warnings) && response.warnings.includes(INTERNAL_ERROR_WARNING)) {
    return fail(`${String(uid)}: answered as drainguard's own failure (the decision passed its deadline or heap; see the server log)`);
  }
  if (response.allowed !== true || response.patchType !== 'JSONPatch') return fail(`${String(uid)}: expected an allowed patch, got ${body.toString('utf8').slice(0, 200)}`);
  return { kind: 'ok' };
}

function judgeValid(fuzzCase: FuzzCase, status: number, body: Buffer): Verdict {
  const fail = (detail: string): Verdict => ({ kind: 'failure', detail });
  if (status !== 200) return fail(`HTTP ${status} for a valid review: ${body.toString('utf8').slice(0, 300)}`);
  const answer = parseAnswer(body);
  const sent = sentReview(fuzzCase);
  const response = answer?.response;
  if (!answer || !response) return fail(`not an AdmissionReview: ${body.toString('utf8').slice(0, 300)}`);
  if (answer.apiVersion !== sent.apiVersion || answer.kind !== 'AdmissionReview') return fail(`apiVersion/kind not echoed: ${answer.apiVersion}/${answer.kind}`);
  if (response.uid !== sent.request?.uid) return fail(`uid not echoed: ${String(response.uid)}`);
  if (Array.isArray(response.warnings) && response.warnings.includes(INTERNAL_ERROR_WARNING)) return fail('drainguard reported an internal error on a valid pod');

  const pod = fuzzCase.pod as Pod;
  // What the server must have decided: the pure core, run here on the same pod with the same config.
  const operation = (sent.request as { operation?: unknown } | undefined)?.operation;
  const expected = operation === 'CREATE' ? mutate(structuredClone(pod), config) : undefined;

  if (expected?.status === 'denied') {
    return response.allowed === false && response.status?.code === 403 && response.patch === undefined
      ? { kind: 'ok' }
      : fail(`expected a denial (${expected.message.slice(0, 120)}), got ${body.toString('utf8').slice(0, 300)}`);
  }
  if (response.allowed !== true) return fail(`valid pod not allowed: ${body.toString('utf8').slice(0, 300)}`);
  if (expected?.status !== 'mutated') {
    return response.patch === undefined ? { kind: 'ok' } : fail(`patch where the core decided ${expected?.status ?? 'to ignore the operation'}`);
  }
  if (response.patchType !== 'JSONPatch') return fail(`patchType ${String(response.patchType)}`);
  const operations = decodePatch(response.patch);
  if (typeof operations === 'string') return fail(operations);
  if (JSON.stringify(operations) !== JSON.stringify(expected.patch)) return fail('patch differs from the core decision for the same pod');
  const result = applied(pod, operations);
  if ('problem' in result) return fail(`patch does not apply: ${result.problem}`);
  const problems = validatePod(result.pod);
  if (problems.length > 0) return fail(`patched pod is invalid: ${problems.slice(0, 3).join('; ')}`);
  return { kind: 'ok', patchedPod: result.pod };
}

function judgeGarbage(fuzzCase: FuzzCase, status: number, body: Buffer): Verdict {
  const answer = status === 200 ? parseAnswer(body) : undefined;
  const response = answer?.response;
  if (Array.isArray(response?.warnings) && response.warnings.includes(INTERNAL_ERROR_WARNING)) {
    return { kind: 'internal-error', detail: JSON.stringify(sentReview(fuzzCase).request?.object ?? null).slice(0, 400) };
  }
  if (response?.patch !== undefined) {
    // Whatever the input, a patch drainguard sends must apply to the object it was sent.
    const operations = decodePatch(response.patch);
    if (typeof operations === 'string') return { kind: 'failure', detail: operations };
    const result = applied(sentReview(fuzzCase).request?.object, operations);
    if ('problem' in result) return { kind: 'failure', detail: `patch for a garbage review does not apply: ${result.problem}` };
  }
  if (fuzzCase.expectedStatuses && !fuzzCase.expectedStatuses.includes(status)) {
    return { kind: 'unexpected-status', detail: `${fuzzCase.class}: HTTP ${status} (expected ${fuzzCase.expectedStatuses.join('/')}): ${body.toString('utf8').slice(0, 200)}` };
  }
  return { kind: 'ok' };
}
