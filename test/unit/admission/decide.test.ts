import { decideAdmission, INTERNAL_ERROR_WARNING, type MutateFunction } from '../../../src/admission/decide';
import { parseAdmissionReview } from '../../../src/admission/review';
import { shapeWarnings, MAX_WARNING_CHARS, MAX_TOTAL_WARNING_CHARS } from '../../../src/admission/warnings';
import { defaultConfig } from '../../../src/config';
import { PatchVerificationError } from '../../../src/mutate';
import type { PatchOperation } from '../../../src/mutate/result';
import { admissionReview } from '../../integration/server/webhook-test-kit';

const config = defaultConfig();
const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [{ name: 'envoy' }] } };
const timeline = {
  gracePeriodSeconds: 30,
  gracePeriodSource: 'kubernetes-default' as const,
  drainDelaySeconds: 0,
  minDrainSeconds: 5,
  deadlineSeconds: 20,
  minConnections: 0,
  adminAddress: 'unix:/admin/admin.sock',
  livenessBudgetSeconds: null,
  livenessSource: 'none' as const,
};
const patch: PatchOperation[] = [{ op: 'add', path: '/metadata/annotations/drainguard.io~1status', value: 'x' }];
const mutated: MutateFunction = () => ({ status: 'mutated', patch, warnings: ['w1'], actions: ['status', 'prestop'], timeline });

function response(decision: ReturnType<typeof decideAdmission>) {
  return (decision.body as unknown as { response: Record<string, unknown> }).response;
}

describe('decideAdmission', () => {
  it('answers a mutated pod with a base64 JSONPatch, echoing uid and apiVersion', () => {
    for (const apiVersion of ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1']) {
      const decision = decideAdmission(admissionReview(pod, { uid: 'u-1', apiVersion }), config, mutated);
      expect(decision.httpStatus).toBe(200);
      expect(decision.body).toMatchObject({ apiVersion, kind: 'AdmissionReview' });
      const r = response(decision);
      expect(r).toMatchObject({ uid: 'u-1', allowed: true, patchType: 'JSONPatch', warnings: ['w1'] });
      expect(JSON.parse(Buffer.from(r.patch as string, 'base64').toString())).toEqual(patch);
      expect(decision.outcome).toMatchObject({ result: 'mutated', actions: ['status', 'prestop'], patchOperations: 1 });
    }
  });

  it('answers dryRun requests exactly like the others', () => {
    const wet = decideAdmission(admissionReview(pod, { dryRun: false }), config, mutated);
    const dry = decideAdmission(admissionReview(pod, { dryRun: true }), config, mutated);
    expect(dry.body).toEqual(wet.body);
    expect(dry.outcome.dryRun).toBe(true);
  });

  it('omits patchType and patch when there is nothing to change', () => {
    const unchanged: MutateFunction = () => ({ status: 'unchanged', patch: [], warnings: [], timeline });
    const skipped: MutateFunction = () => ({ status: 'skipped', reason: 'not-envoy', message: 'no container running Envoy', patch: [], warnings: [] });
    const empty: MutateFunction = () => ({ status: 'mutated', patch: [], warnings: [], actions: [], timeline });
    for (const core of [unchanged, skipped, empty]) {
      const r = response(decideAdmission(admissionReview(pod), config, core));
      expect(r).toEqual({ uid: expect.any(String), allowed: true });
    }
    expect(decideAdmission(admissionReview(pod), config, skipped).outcome).toMatchObject({ result: 'skipped', skipReason: 'not-envoy', skipMessage: 'no container running Envoy' });
  });

  it('answers a pod whose fields have the wrong types with 400 naming them (the real core)', () => {
    const malformed = { ...pod, spec: { containers: [{ name: 'envoy', image: 7 }], volumes: {} } };
    const decision = decideAdmission(admissionReview(malformed, { uid: 'u-bad' }), config);
    expect(decision.httpStatus).toBe(400);
    expect(decision.body).toEqual({
      error: 'request.object is not a valid Pod: spec.containers[0].image must be a string, got the number 7; spec.volumes must be a list, got an object',
    });
    expect(decision.outcome).toMatchObject({ result: 'invalid', uid: 'u-bad' });
  });

  it('names at most five bad fields and counts the rest', () => {
    const containers = Array.from({ length: 7 }, (_, i) => ({ name: `c${i}`, image: i }));
    const decision = decideAdmission(admissionReview({ ...pod, spec: { containers } }), config);
    expect((decision.body as { error: string }).error).toMatch(/c?ontainers\[4\]\.image must be a string, got the number 4; and 2 more$/);
  });

  it('denies only for a denied result, with the message', () => {
    const denied: MutateFunction = () => ({ status: 'denied', message: 'drainguard.io/drain-delay: expected a duration', patch: [], warnings: [] });
    const r = response(decideAdmission(admissionReview(pod), config, denied));
    expect(r).toEqual({ uid: expect.any(String), allowed: false, status: { code: 403, message: 'drainguard.io/drain-delay: expected a duration' } });
  });

  it.each([
    ['PatchVerificationError', new PatchVerificationError('patch does not apply')],
    ['any other exception', new TypeError('boom')],
  ])('admits the pod unchanged with a warning when the core throws (%s)', (_name, error) => {
    const failing: MutateFunction = () => {
      throw error;
    };
    const decision = decideAdmission(admissionReview(pod), config, failing);
    expect(decision.httpStatus).toBe(200);
    expect(response(decision)).toEqual({ uid: expect.any(String), allowed: true, warnings: [INTERNAL_ERROR_WARNING] });
    expect(decision.outcome.result).toBe('error');
    expect(decision.outcome.error).toContain(error.message);
  });

  it.each(['UPDATE', 'DELETE', 'CONNECT'])('allows %s untouched without calling the core', (operation) => {
    const core = jest.fn(mutated);
    const decision = decideAdmission(admissionReview(pod, { operation }), config, core);
    expect(response(decision)).toEqual({ uid: expect.any(String), allowed: true });
    expect(decision.outcome.result).toBe('ignored');
    expect(core).not.toHaveBeenCalled();
  });

  it.each([
    ['request.kind apps/v1 Deployment', { kind: { group: 'apps', version: 'v1', kind: 'Deployment' } }, 'apps/v1 Deployment'],
    ['an object of kind Service', { object: { ...pod, kind: 'Service' } }, 'an object of kind "Service"'],
  ])('allows a CREATE of another kind (%s) untouched with a warning, never a 400', (_name, change, shown) => {
    const core = jest.fn(mutated);
    const review = admissionReview(pod);
    Object.assign(review.request as Record<string, unknown>, change);
    const decision = decideAdmission(review, config, core);
    expect(decision.httpStatus).toBe(200);
    expect(response(decision)).toEqual({ uid: expect.any(String), allowed: true, warnings: [expect.stringContaining(`got ${shown}, admitted unchanged`)] });
    expect(decision.outcome.result).toBe('ignored');
    expect(core).not.toHaveBeenCalled();
  });

  it('allows a CREATE on a subresource untouched', () => {
    const review = admissionReview(pod);
    (review.request as Record<string, unknown>).subResource = 'ephemeralcontainers';
    expect(decideAdmission(review, config, mutated).outcome.result).toBe('ignored');
  });
});

describe('parseAdmissionReview and the pod shape: one specific message per mistake', () => {
  const base = () => admissionReview(pod) as Record<string, any>;
  const cases: [string, (r: Record<string, any>) => unknown, RegExp][] = [
    ['an array', () => [], /must be a JSON object, got an array/],
    ['a string', () => 'x', /must be a JSON object, got "x"/],
    ['no apiVersion', (r) => ({ ...r, apiVersion: undefined }), /apiVersion must be one of .*; got missing/],
    ['wrong apiVersion', (r) => ({ ...r, apiVersion: 'admission.k8s.io/v2' }), /apiVersion .* got "admission.k8s.io\/v2"/],
    ['wrong kind', (r) => ({ ...r, kind: 'AdmissionRequest' }), /kind must be "AdmissionReview"; got "AdmissionRequest"/],
    ['no request', (r) => ({ ...r, request: undefined }), /request must be an object; got missing/],
    ['no uid', (r) => ({ ...r, request: { ...r.request, uid: undefined } }), /request.uid must be a non-empty string; got missing/],
    ['empty uid', (r) => ({ ...r, request: { ...r.request, uid: '' } }), /request.uid must be a non-empty string; got ""/],
    ['huge uid', (r) => ({ ...r, request: { ...r.request, uid: 'u'.repeat(10_000) } }), /request.uid must be at most 128 characters/],
    ['no operation', (r) => ({ ...r, request: { ...r.request, operation: undefined } }), /request.operation must be one of/],
    ['bad dryRun', (r) => ({ ...r, request: { ...r.request, dryRun: 'yes' } }), /request.dryRun must be a boolean; got "yes"/],
    ['no object', (r) => ({ ...r, request: { ...r.request, object: undefined } }), /request.object is required for CREATE/],
    ['object a string', (r) => ({ ...r, request: { ...r.request, object: 'pod' } }), /request.object must be a Pod object; got "pod"/],
    ['no spec', (r) => ({ ...r, request: { ...r.request, object: { kind: 'Pod' } } }), /request.object.spec must be an object; got missing/],
    ['containers not a list', (r) => ({ ...r, request: { ...r.request, object: { kind: 'Pod', spec: { containers: {} } } } }), /spec.containers must be an array; got an object/],
    ['nameless container', (r) => ({ ...r, request: { ...r.request, object: { kind: 'Pod', spec: { containers: [{ image: 'x' }] } } } }), /spec.containers\[0\] must be a container with a string name/],
    ['annotation not a string', (r) => ({ ...r, request: { ...r.request, object: { ...pod, metadata: { annotations: { a: 1 } } } } }), /annotations\["a"\] must be a string/],
  ];
  it.each(cases)('%s → 400 with a specific message', (_name, build, message) => {
    const decision = decideAdmission(build(base()), config, mutated);
    expect(decision.httpStatus).toBe(400);
    expect((decision.body as { error: string }).error).toMatch(message);
    expect(decision.outcome.result).toBe('invalid');
  });

  it('accepts a minimal valid review', () => {
    expect(parseAdmissionReview(base())).toMatchObject({ ok: true, request: { uid: expect.any(String), operation: 'CREATE', dryRun: false } });
  });
});

describe('shapeWarnings', () => {
  it('keeps each warning on one line and within the per-warning limit', () => {
    const [long, multiline] = shapeWarnings(['x'.repeat(1000), 'a\nb\tc']);
    expect(long).toHaveLength(MAX_WARNING_CHARS);
    expect(long!.endsWith('...')).toBe(true);
    expect(multiline).toBe('a b c');
  });

  it('replaces every control character the API server refuses (C0, DEL, C1) so the warning is not dropped', () => {
    const value = `bad\u0085value\u009b1m\u0000\u007f`;
    const [shaped] = shapeWarnings([`annotation drainguard.io/min-drain: invalid value ${JSON.stringify(value)}`]);
    expect(shaped).not.toMatch(/\p{Cc}/u);
    expect(shaped).toContain('bad value 1m');
  });

  it('never leaves half a surrogate pair: a lone one becomes U+FFFD, truncation cuts between code points', () => {
    expect(shapeWarnings(['lone \ud800 high and \udc00 low'])).toEqual(['lone \ufffd high and \ufffd low']);
    const [cut] = shapeWarnings(['\u{1F600}'.repeat(300)]);
    expect([...cut!.slice(0, -3)].every((c) => c === '\u{1F600}')).toBe(true);
    expect([...cut!]).toHaveLength(MAX_WARNING_CHARS);
  });

  it('drops duplicates and stays well within the total budget, saying how many were omitted', () => {
    const many = Array.from({ length: 100 }, (_, i) => `warning ${i} ${'y'.repeat(100)}`);
    const shaped = shapeWarnings([...many, many[0]!]);
    expect(shaped.join('').length).toBeLessThanOrEqual(MAX_TOTAL_WARNING_CHARS / 2);
    expect(shaped.at(-1)).toMatch(/^drainguard: \d+ more warning\(s\) omitted/);
    expect(new Set(shaped).size).toBe(shaped.length);
  });
});
