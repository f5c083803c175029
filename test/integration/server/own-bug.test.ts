/**
 * drainguard's own failure on a valid pod never blocks the pod: allowed, no patch, a warning, logged and
 * counted. The failures: the core throws, a decision never finishes, a decision needs more memory than a
 * decision worker may use. The last two cost the worker, which is replaced: the server goes on answering.
 * The failing cores are real modules loaded by the real decision workers.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { INTERNAL_ERROR_WARNING } from '../../../src/admission/decide';
import { WORKER_HEAP_BASE_MIB } from '../../../src/server/sizing';
import type { WebhookServer } from '../../../src/server/webhook-server';
import { startTestServer } from './test-server';
import { REPO_ROOT, admissionReview, fixturePods, httpsRequest, temporaryDirectory } from './webhook-test-kit';

const directory = temporaryDirectory();
const paths = ensureDevCertificates(directory.path);
const pod = fixturePods().find(({ name }) => name.startsWith('contour-main'))!.pod;

/** A core module for the decision workers: `body` is the body of its `mutate(pod, config)`. */
function coreModule(name: string, body: string): string {
  const path = join(directory.path, `${name}.cjs`);
  const dist = JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'));
  writeFileSync(path, `const { PatchVerificationError } = require(${dist});\nexports.mutate = (pod, config) => {\n${body}\n};\n`);
  return path;
}

const CORES = {
  throws: coreModule('throws', `throw new PatchVerificationError('patched pod has duplicate container names', ['duplicate container name "envoy"']);`),
  // Only pods whose name says so misbehave: the same server then answers a normal pod normally.
  'never finishes': coreModule('never-finishes', `if (pod.metadata.name === 'stuck') for (;;) {}\nreturn require(${JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'))}).mutate(pod, config);`),
  // For a pod named "envoy-starved": holds its thread three seconds without using the CPU, as a decision
  // worker does that gets no CPU on a busy node (it runs at a lower priority than the main thread),
  // then decides as the real core.
  'gets no CPU for a while': coreModule(
    'no-cpu',
    `if (pod.metadata.name === 'envoy-starved') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 3000);\nreturn require(${JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'))}).mutate(pod, config);`,
  ),
  // For a pod named "blocked": waits a minute without using the CPU (as good as forever here: the
  // wall-clock bound under test is 2 s), so only the wall-clock bound can end it.
  'waits forever': coreModule(
    'waits-forever',
    `if (pod.metadata.name === 'blocked') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);\nreturn require(${JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'))}).mutate(pod, config);`,
  ),
  'exhausts its memory': coreModule(
    'exhausts-memory',
    `if (pod.metadata.name === 'hungry') { const hoard = []; for (;;) hoard.push(new Array(100000).fill(hoard.length)); }\nreturn require(${JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'))}).mutate(pod, config);`,
  ),
};

let server: WebhookServer | undefined;
const logs: Record<string, unknown>[] = [];

/**
 * `inline`: decide small reviews on the main thread, as the server does by default. Otherwise every
 * review goes to a decision worker, whatever its size: the tests of a decision that never finishes or
 * runs out of memory are about the worker's isolation.
 */
async function start(core: string, inline = false, decisionTimeoutMs = 1000, decisionWallTimeoutMs = 10_000, workerHeapMb?: number): Promise<WebhookServer> {
  logs.length = 0;
  server = await startTestServer(paths, {
    logger: pino(new Writable({ write: (chunk, _e, done) => (logs.push(JSON.parse(String(chunk))), done()) })),
    coreModule: core,
    // One worker: a failed one must be replaced before anything else can be answered.
    limits: { concurrency: 1, ...(workerHeapMb === undefined ? {} : { workerHeapMb }) },
    decisionTimeoutMs,
    // Whichever comes first ends a decision that never finishes: its 1 s of CPU, or (on a node so busy
    // that a lower-priority worker gets almost no CPU) 10 s of elapsed time. Longer than the 3 s of the
    // decision that only waits.
    decisionWallTimeoutMs,
    ...(inline ? {} : { inlineDecisionMaxBytes: 0 }),
  });
  return server;
}

afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => directory.remove());

const reviewOf = (name: string, uid: string) => JSON.stringify(admissionReview({ ...pod, metadata: { ...pod.metadata, name } }, { uid }));

test.each([
  ['in a decision worker', false],
  ['on the main thread', true],
])('a PatchVerificationError (%s) is answered 200 allowed without a patch, logged with the uid, counted', async (_where, inline) => {
  const { port } = (await start(CORES.throws, inline)).address();
  const uid = '0c1d2e3f-aaaa-4bbb-8ccc-000000000042';
  const result = await httpsRequest({ port, body: JSON.stringify(admissionReview(pod, { uid })) });
  expect(result.status).toBe(200);
  expect(result.json).toEqual({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid, allowed: true, warnings: [INTERNAL_ERROR_WARNING] },
  });
  expect(logs.find((entry) => entry.uid === uid)).toMatchObject({ level: 50, result: 'error', error: expect.stringContaining('duplicate container names') });
  const metrics = await httpsRequest({ port, method: 'GET', path: '/metrics' });
  expect(metrics.text).toMatch(/drainguard_admission_requests_total\{result="error"\} 1/);
});

/** Longer than a jest test may last: a bound the test must never reach, so another one is what it sees. */
const NEVER_MS = 3_600_000;

test.each([
  // Its CPU budget alone ends a decision that computes forever: however little CPU the worker gets on a
  // busy machine (it runs at a lower priority), the wall-clock bound is out of reach, so the CPU budget is
  // what is tested; 200 ms of CPU comes soon enough at any load the tests run under.
  ['never finishes', 'stuck', 'decision used 200 ms of CPU without finishing; worker replaced', 200, NEVER_MS, undefined],
  // The wall-clock bound alone ends a decision that waits forever without using the CPU (the CPU budget
  // is out of its reach): what the API server no longer waits for is abandoned.
  ['waits forever', 'blocked', 'decision did not finish within 2000 ms; worker replaced', NEVER_MS, 2000, undefined],
  // Deadlines far longer than running out of heap takes on a busy machine: the memory limit ends it.
  // The heap is the idle worker's (WORKER_HEAP_BASE_MIB) plus room for a small review, not the default
  // sized for 3 MiB reviews: filling 88 MiB cost ~0.75 s of CPU, 32 MiB ~0.33 s, and the worker gets
  // that CPU at a lower priority than everything else on a busy machine. The limit is hit all the same.
  ['exhausts its memory', 'hungry', /needed more memory than a decision worker may use/, NEVER_MS, NEVER_MS, WORKER_HEAP_BASE_MIB + 16],
] as const)('a decision that %s is answered as drainguard failing; the worker is replaced and the next review answered', async (kind, name, reason, decisionTimeoutMs, decisionWallTimeoutMs, workerHeapMb) => {
  const { port } = (await start(CORES[kind], false, decisionTimeoutMs, decisionWallTimeoutMs, workerHeapMb)).address();
  const uid = `0c1d2e3f-aaaa-4bbb-8ccc-${{ 'never finishes': '000000000043', 'waits forever': '000000000045', 'exhausts its memory': '000000000044' }[kind]}`;
  const failed = await httpsRequest({ port, body: reviewOf(name, uid) });
  expect(failed.status).toBe(200);
  expect(failed.json).toEqual({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid, allowed: true, warnings: [INTERNAL_ERROR_WARNING] },
  });
  expect(logs.find((entry) => entry.uid === uid)).toMatchObject({ level: 50, result: 'error', error: typeof reason === 'string' ? reason : expect.stringMatching(reason) });

  const next = await httpsRequest({ port, body: reviewOf('envoy-next', 'next-uid') });
  expect(next.status).toBe(200);
  expect(next.json).toMatchObject({ response: { uid: 'next-uid', allowed: true, patchType: 'JSONPatch' } });
  const health = await httpsRequest({ port, method: 'GET', path: '/healthz' });
  expect(health.status).toBe(200);
  // A generous bound for jest, never reached by a working server: the worker's 200 ms of CPU at the lowest
  // priority can take tens of seconds on a machine at load 20.
}, 180_000);

test('a decision that waits longer than its deadline for the CPU, without using it, is answered with its patch', async () => {
  // The deadline counts the CPU a decision uses, not the time it waits for a CPU: a busy node makes a
  // decision slower, never a failure.
  const { port } = (await start(CORES['gets no CPU for a while'], false, 1000)).address();
  // A first review answered means the worker has started and loaded the real core: the starved
  // decision below then needs only the CPU of one mutation after its wait, not the worker's start,
  // which on a busy machine (at the worker's lower priority) can take longer than the 10 s wall deadline.
  const warm = await httpsRequest({ port, body: reviewOf('envoy-warm', 'warm-uid') });
  expect(warm.json).toMatchObject({ response: { uid: 'warm-uid', allowed: true, patchType: 'JSONPatch' } });
  const answer = await httpsRequest({ port, body: reviewOf('envoy-starved', 'starved-uid') });
  expect(answer.json).toMatchObject({ response: { uid: 'starved-uid', allowed: true, patchType: 'JSONPatch' } });
  expect(logs.find((entry) => entry.uid === 'starved-uid')).toMatchObject({ result: 'mutated' });
});
