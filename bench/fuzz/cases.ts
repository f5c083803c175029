/**
 * What the fuzz run sends. Every case is an HTTP request plus what may come back:
 *
 * - `valid` cases carry a valid Pod (validatePod finds nothing) in a well-formed AdmissionReview: the
 *   answer must be a 200 matching the core's own decision, and a patch must apply and leave a valid Pod;
 * - `garbage` cases may be refused (4xx) or let through (200), but never answered with a 5xx, and any
 *   patch they get must still apply to what was sent.
 *
 * Generation is seeded (fast-check), so a failing case is reproducible from the seed in the report.
 */
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { validPodCase } from '../../test/support/generators/pod-arbitrary';
import { admissionReview } from '../../test/support/generators/review';
import { CONTENT_KINDS, largeReviewBody } from '../../test/support/generators/pod-content';
import { validatePod, type Container, type Pod } from '../../src/mutate';
import type { SentRequest } from '../lib/https-client';

export type CaseClass =
  | 'valid:generated'
  | 'valid:fixture-variant'
  | 'valid:not-create'
  | 'valid:resubmitted-patched'
  | 'garbage:field-replaced'
  | 'garbage:any-json'
  | 'garbage:invalid-json'
  | 'garbage:random-bytes'
  | 'garbage:content-type'
  | 'garbage:method-or-path'
  | 'garbage:content-encoding'
  | 'garbage:deep'
  | 'garbage:huge'
  | 'garbage:raw-protocol'
  /** A valid Envoy pod grown to ~3 MiB with one kind of content: answered 200 with a real decision. */
  | 'large:content'
  /** A hostile client scenario (bench/fuzz/hostile.ts): counted as handled or mishandled. */
  | 'hostile:client';

export interface FuzzCase {
  class: CaseClass;
  request: SentRequest;
  /** Valid cases: the Pod inside the review (what the answer's patch applies to). */
  pod?: Pod;
  /** The review as sent, when it is JSON (garbage patches are applied to its request.object). */
  review?: unknown;
  /** Statuses this case should get; anything else < 500 is reported, not failed. */
  expectedStatuses?: number[];
}

const JSON_HEADERS = { 'content-type': 'application/json' };

function reviewCase(cls: CaseClass, review: ReturnType<typeof admissionReview>, pod?: Pod): FuzzCase {
  return { class: cls, request: { path: '/mutate', headers: JSON_HEADERS, body: JSON.stringify(review) }, review, ...(pod ? { pod } : {}) };
}

const apiVersion = fc.constantFrom('admission.k8s.io/v1', 'admission.k8s.io/v1', 'admission.k8s.io/v1beta1');

/** Valid pods from the property tests' generator (test/support/generators/pod-arbitrary.ts). */
function generatedValid(count: number, seed: number): FuzzCase[] {
  return fc
    .sample(fc.tuple(validPodCase, apiVersion, fc.boolean()), { numRuns: count, seed })
    .map(([{ pod }, version, dryRun]) => reviewCase('valid:generated', admissionReview(pod, { uid: randomUUID(), apiVersion: version, dryRun }), pod));
}

const overrideAnnotations = fc.dictionary(
  fc.constantFrom(
    'drainguard.io/drain-delay',
    'drainguard.io/min-drain',
    'drainguard.io/min-connections',
    'drainguard.io/sidecar-mode',
    'drainguard.io/admin-address',
    'drainguard.io/envoy-cpu-request',
    'drainguard.io/envoy-memory-request',
    'drainguard.io/inject',
    'drainguard.io/envoy-container',
    'example.com/with~tilde/and~1slash',
  ),
  // Mostly well-formed values, some not: an invalid override is a valid review that gets denied.
  fc.constantFrom('5s', '0s', '30s', '3', 'disarm', 'remove', 'unix:/admin/admin.sock', 'http://127.0.0.1:19000', '100m', '256Mi', 'enabled', 'disabled', 'envoy', 'bogus', '-1', 'http://10.0.0.1:9901'),
  { maxKeys: 4 },
);

/** Changes a fixture pod may get; the result is kept only if it is still a valid pod. */
const fixtureVariant = fc.record({
  grace: fc.option(fc.integer({ min: 0, max: 3600 }), { nil: undefined }),
  annotations: overrideAnnotations,
  extraEnv: fc.integer({ min: 0, max: 40 }),
  extraContainers: fc.integer({ min: 0, max: 6 }),
  reverseContainers: fc.boolean(),
  dropPreStops: fc.boolean(),
  dropResources: fc.boolean(),
  tightLimits: fc.boolean(),
  dropVolumes: fc.boolean(),
});

type FixtureVariant = typeof fixtureVariant extends fc.Arbitrary<infer V> ? V : never;

function applyVariant(original: Pod, variant: FixtureVariant): Pod {
  const pod = structuredClone(original);
  const spec = pod.spec;
  if (variant.grace !== undefined) spec.terminationGracePeriodSeconds = variant.grace;
  if (Object.keys(variant.annotations).length > 0) {
    pod.metadata = { ...pod.metadata, annotations: { ...pod.metadata?.annotations, ...variant.annotations } };
  }
  const first = spec.containers[0] as Container;
  for (let i = 0; i < variant.extraEnv; i += 1) (first.env ??= []).push({ name: `FUZZ_${i}`, value: `v${i}` });
  for (let i = 0; i < variant.extraContainers; i += 1) {
    spec.containers.push({ name: `fuzz-app-${i}`, image: `registry.example.com/app:${i}`, ports: [{ containerPort: 7000 + i, name: `app-${i}` }] });
  }
  if (variant.reverseContainers) spec.containers.reverse();
  for (const container of [...spec.containers, ...(spec.initContainers ?? [])]) {
    if (variant.dropPreStops) delete container.lifecycle;
    if (variant.dropResources) delete container.resources;
    // A limit below drainguard's default requests, with no request: the request must follow the limit.
    if (variant.tightLimits && container.resources?.requests === undefined) container.resources = { limits: { cpu: '10m', memory: '16Mi' } };
  }
  if (variant.dropVolumes) {
    delete spec.volumes;
    for (const container of [...spec.containers, ...(spec.initContainers ?? [])]) delete container.volumeMounts;
  }
  return pod;
}

function fixtureVariants(fixtures: readonly { pod: Pod }[], count: number, seed: number): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const samples = fc.sample(fc.tuple(fc.nat({ max: fixtures.length - 1 }), fixtureVariant), { numRuns: count * 2, seed });
  for (const [index, variant] of samples) {
    if (cases.length >= count) break;
    const pod = applyVariant((fixtures[index] as { pod: Pod }).pod, variant);
    if (validatePod(pod).length > 0) continue;
    cases.push(reviewCase('valid:fixture-variant', admissionReview(pod, { uid: randomUUID() }), pod));
  }
  return cases;
}

/** UPDATE, DELETE and CONNECT of valid pods: allowed untouched. */
function notCreate(fixtures: readonly { pod: Pod }[], count: number, seed: number): FuzzCase[] {
  return fc
    .sample(fc.tuple(fc.nat({ max: fixtures.length - 1 }), fc.constantFrom('UPDATE', 'DELETE', 'CONNECT')), { numRuns: count, seed })
    .map(([index, operation]) => {
      const pod = (fixtures[index] as { pod: Pod }).pod;
      return reviewCase('valid:not-create', admissionReview(pod, { uid: randomUUID(), operation }), pod);
    });
}

/** Paths into a review whose value gets replaced by arbitrary JSON (or removed). */
const REPLACEABLE_PATHS: (string | number)[][] = [
  ['apiVersion'],
  ['kind'],
  ['request'],
  ['request', 'uid'],
  ['request', 'operation'],
  ['request', 'dryRun'],
  ['request', 'kind'],
  ['request', 'subResource'],
  ['request', 'namespace'],
  ['request', 'object'],
  ['request', 'object', 'kind'],
  ['request', 'object', 'metadata'],
  ['request', 'object', 'metadata', 'annotations'],
  ['request', 'object', 'metadata', 'annotations', 'drainguard.io/min-drain'],
  ['request', 'object', 'spec'],
  ['request', 'object', 'spec', 'containers'],
  ['request', 'object', 'spec', 'containers', 0],
  ['request', 'object', 'spec', 'containers', 0, 'name'],
  ['request', 'object', 'spec', 'containers', 0, 'image'],
  ['request', 'object', 'spec', 'containers', 0, 'args'],
  ['request', 'object', 'spec', 'containers', 0, 'lifecycle'],
  ['request', 'object', 'spec', 'containers', 0, 'resources'],
  ['request', 'object', 'spec', 'containers', 0, 'volumeMounts'],
  ['request', 'object', 'spec', 'containers', 0, 'readinessProbe'],
  ['request', 'object', 'spec', 'containers', 1],
  ['request', 'object', 'spec', 'containers', 1, 'lifecycle', 'preStop'],
  ['request', 'object', 'spec', 'initContainers'],
  ['request', 'object', 'spec', 'volumes'],
  ['request', 'object', 'spec', 'volumes', 0],
  ['request', 'object', 'spec', 'terminationGracePeriodSeconds'],
  ['request', 'object', 'spec', 'securityContext'],
];

function setAt(root: unknown, path: (string | number)[], value: unknown, remove: boolean): void {
  let node = root as Record<string | number, unknown> | undefined;
  for (const key of path.slice(0, -1)) {
    const next = node?.[key];
    if (typeof next !== 'object' || next === null) return;
    node = next as Record<string | number, unknown>;
  }
  const last = path[path.length - 1] as string | number;
  if (node === undefined) return;
  if (remove) delete node[last];
  else node[last] = value;
}

function fieldReplaced(fixtures: readonly { pod: Pod }[], count: number, seed: number): FuzzCase[] {
  // `undefined` (one time in four) removes the field instead.
  const replacement = fc.tuple(fc.constantFrom(...REPLACEABLE_PATHS), fc.option(fc.jsonValue({ maxDepth: 3 }), { nil: undefined, freq: 4 }));
  const sample = fc.tuple(fc.nat({ max: fixtures.length - 1 }), fc.array(replacement, { minLength: 1, maxLength: 3 }));
  return fc.sample(sample, { numRuns: count, seed }).map(([index, replacements]) => {
    const review = admissionReview(structuredClone((fixtures[index] as { pod: Pod }).pod), { uid: randomUUID() });
    for (const [path, value] of replacements) setAt(review, path, value, value === undefined);
    return reviewCase('garbage:field-replaced', review);
  });
}

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function rawBodyCase(cls: CaseClass, body: string | Buffer, expectedStatuses: number[], headers: Record<string, string> = JSON_HEADERS): FuzzCase {
  // When the body parses, keep it: a patch in the answer is checked against what was sent.
  const text = body.toString();
  const review: unknown = parses(text) ? JSON.parse(text) : undefined;
  return { class: cls, request: { path: '/mutate', headers, body }, expectedStatuses, ...(review !== undefined ? { review } : {}) };
}

function garbageBodies(validBody: string, count: number, seed: number): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const anyJson = fc.sample(fc.jsonValue({ maxDepth: 4 }), { numRuns: count, seed });
  for (const value of anyJson) cases.push(rawBodyCase('garbage:any-json', JSON.stringify(value), [400]));
  const invalidJson = fc.sample(
    fc.oneof(
      fc.nat({ max: validBody.length - 1 }).map((cut) => validBody.slice(0, cut)),
      fc.tuple(fc.nat({ max: validBody.length - 1 }), fc.constantFrom('}', ',', '"', '\\', '\u0000', 'NaN', '\ud800')).map(([at, junk]) => validBody.slice(0, at) + junk + validBody.slice(at)),
      fc.string({ maxLength: 200 }),
    ),
    { numRuns: count, seed: seed + 1 },
  );
  for (const body of invalidJson) {
    // Damage inside a string value can leave valid JSON: those are not invalid-JSON cases.
    if (parses(body)) continue;
    cases.push(rawBodyCase('garbage:invalid-json', body, [400]));
  }
  const bytes = fc.sample(fc.uint8Array({ minLength: 1, maxLength: 4096 }), { numRuns: Math.ceil(count / 2), seed: seed + 2 });
  for (const body of bytes) cases.push(rawBodyCase('garbage:random-bytes', Buffer.from(body), [400]));
  return cases;
}

function protocolCases(validBody: string): FuzzCase[] {
  const cases: FuzzCase[] = [];
  const contentTypes = [undefined, 'text/plain', 'application/xml', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/jsonx', 'application/json; charset=latin1', 'application/json; charset="utf-16"', '*/*', ''];
  for (let round = 0; round < 20; round += 1) {
    for (const type of contentTypes) cases.push(rawBodyCase('garbage:content-type', validBody, [415], type === undefined ? {} : { 'content-type': type }));
  }
  const methodsAndPaths: [string, string, number][] = [
    ['GET', '/mutate', 405], ['PUT', '/mutate', 405], ['DELETE', '/mutate', 405], ['PATCH', '/mutate', 405],
    ['POST', '/', 404], ['POST', '/mutate/extra', 404], ['POST', '/validate', 404], ['POST', '/healthz', 404], ['GET', '/../etc/passwd', 404], ['GET', '/%zz', 404],
  ];
  for (let round = 0; round < 10; round += 1) {
    for (const [method, path, status] of methodsAndPaths) {
      cases.push({ class: 'garbage:method-or-path', request: { method, path, headers: JSON_HEADERS, body: validBody }, expectedStatuses: [status, 400] });
    }
  }
  for (const encoding of ['gzip', 'deflate', 'br', 'identity, gzip', 'bogus']) {
    for (let round = 0; round < 4; round += 1) cases.push(rawBodyCase('garbage:content-encoding', validBody, [415, 400], { ...JSON_HEADERS, 'content-encoding': encoding }));
  }
  return cases;
}

function deepCases(validReview: unknown): FuzzCase[] {
  const cases: FuzzCase[] = [];
  for (const depth of [101, 150, 1000, 10_000, 100_000, 500_000]) {
    for (const [open, close] of [['[', ']'], ['{"a":', '}']] as const) {
      cases.push(rawBodyCase('garbage:deep', `${open.repeat(depth)}1${close.repeat(depth)}`, [400]));
      // The same nesting inside an otherwise valid review, where a Pod field would be.
      const review = structuredClone(validReview) as { request: { object: { metadata: Record<string, unknown> } } };
      review.request.object.metadata.labels = '__DEEP__' as unknown as Record<string, unknown>;
      cases.push(rawBodyCase('garbage:deep', JSON.stringify(review).replace('"__DEEP__"', `${open.repeat(depth)}1${close.repeat(depth)}`), [400]));
    }
  }
  return cases;
}

function hugeCases(validReview: unknown): FuzzCase[] {
  const limit = 3 * 1024 * 1024;
  const padded = (bytes: number) => {
    const review = structuredClone(validReview) as { request: { object: { metadata: { annotations?: Record<string, string> } } } };
    review.request.object.metadata.annotations = { ...review.request.object.metadata.annotations, 'example.com/padding': 'x'.repeat(bytes) };
    return JSON.stringify(review);
  };
  return [
    rawBodyCase('garbage:huge', padded(limit + 10), [413]),
    rawBodyCase('garbage:huge', padded(limit * 4), [413]),
    rawBodyCase('garbage:huge', `"${'y'.repeat(limit)}"`, [413]),
    // Just under the limit: a big but acceptable review.
    rawBodyCase('garbage:huge', padded(limit - 100_000), [200]),
    rawBodyCase('garbage:huge', `[${'0,'.repeat(1_000_000)}0]`, [400]),
  ];
}

/**
 * Reviews of ~3 MiB, `perKind` of each kind of pod content (test/support/generators/pod-content.ts).
 * Only the envelope is checked (200, uid echoed, allowed, no internal error): computing the core's own
 * answer for each here would cost what the server's decision costs.
 */
function largeContentCases(perKind: number): FuzzCase[] {
  const cases: FuzzCase[] = [];
  for (const kind of CONTENT_KINDS) {
    const body = largeReviewBody(kind, `large-${kind}`);
    for (let i = 0; i < perKind; i += 1) {
      cases.push({ class: 'large:content', request: { path: '/mutate', headers: JSON_HEADERS, body }, review: { apiVersion: 'admission.k8s.io/v1', request: { uid: `large-${kind}` } }, expectedStatuses: [200] });
    }
  }
  return cases;
}

export interface CaseCounts {
  generated: number;
  fixtureVariants: number;
  notCreate: number;
  fieldReplaced: number;
  bodies: number;
  largePerKind: number;
}

export const DEFAULT_COUNTS: CaseCounts = { generated: 4500, fixtureVariants: 2000, notCreate: 200, fieldReplaced: 2500, bodies: 400, largePerKind: 3 };

export function generateCases(fixtures: readonly { pod: Pod }[], counts: CaseCounts, seed: number): FuzzCase[] {
  const contour = (fixtures.find((f) => f.pod.metadata?.labels?.app === 'envoy') ?? fixtures[0]) as { pod: Pod };
  const validReview = admissionReview(contour.pod, { uid: randomUUID() });
  const validBody = JSON.stringify(validReview);
  const cases = [
    ...generatedValid(counts.generated, seed),
    ...fixtureVariants(fixtures, counts.fixtureVariants, seed + 10),
    ...notCreate(fixtures, counts.notCreate, seed + 20),
    ...fieldReplaced(fixtures, counts.fieldReplaced, seed + 30),
    ...garbageBodies(validBody, counts.bodies, seed + 40),
    ...protocolCases(validBody),
    ...deepCases(validReview),
    ...hugeCases(validReview),
  ];
  // The large reviews are spread through the run, not sent in one burst.
  const large = largeContentCases(counts.largePerKind);
  const every = Math.max(1, Math.floor(cases.length / (large.length + 1)));
  large.forEach((largeCase, index) => cases.splice((index + 1) * every + index, 0, largeCase));
  return cases;
}

/** A pod as the API server would send it again after applying drainguard's patch (reinvocation). */
export function resubmissionCase(patchedPod: Pod): FuzzCase {
  return reviewCase('valid:resubmitted-patched', admissionReview(patchedPod, { uid: randomUUID() }), patchedPod);
}
