/**
 * Small reviews are decided in batches (src/server/decision-batch.ts). Many reviews at once over several
 * keep-alive connections: each answer is the pure decision of its own review (nothing of one review
 * reaches another's answer), and reviews ready in the same turn were indeed decided together.
 */
import { Agent, request } from 'node:https';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decideAdmission } from '../../../src/admission';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { defaultConfig } from '../../../src/config';
import { answerText } from '../../../src/server/decide-body';
import type { WebhookServer } from '../../../src/server/webhook-server';
import { startTestServer } from './test-server';
import { REPO_ROOT, admissionReview, fixturePods, temporaryDirectory } from './webhook-test-kit';

const directory = temporaryDirectory();
const paths = ensureDevCertificates(directory.path);
const ca = readCertificateFiles({ certPath: paths.caCert, keyPath: paths.key }).cert;
let server: WebhookServer | undefined;
let agent: Agent | undefined;

afterEach(async () => {
  agent?.destroy();
  agent = undefined;
  await server?.close();
  server = undefined;
});
afterAll(() => directory.remove());

/**
 * The real core, recording which turn of the event loop each decision ran in: a turn's number changes
 * in a microtask queued by its first decision, and no microtask runs inside a batch.
 */
function turnRecordingCore(): { path: string; turns: () => number[] } {
  const path = join(directory.path, 'turn-recording-core.cjs');
  const dist = JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'));
  writeFileSync(
    path,
    `const real = require(${dist});
let turn = 0, queued = false;
exports.turns = [];
exports.mutate = (pod, config) => {
  if (!queued) { queued = true; queueMicrotask(() => { turn += 1; queued = false; }); }
  exports.turns.push(turn);
  return real.mutate(pod, config);
};
`,
  );
  return { path, turns: () => (require(path) as { turns: number[] }).turns };
}

function post(port: number, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/mutate', method: 'POST', agent, ca, servername: 'localhost', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

test('48 reviews over 8 connections at once: every answer is its own review\'s decision, and batches formed', async () => {
  const core = turnRecordingCore();
  server = await startTestServer(paths, { coreModule: core.path });
  const { port } = server.address();
  agent = new Agent({ keepAlive: true, maxSockets: 8 });
  // Different pods and different drain settings, so that answers mixed up would differ.
  const pods = fixturePods().filter(({ name }) => !name.startsWith('not-envoy'));
  const reviews = Array.from({ length: 48 }, (_unused, i) => {
    const { pod } = pods[i % pods.length] as (typeof pods)[number];
    const annotations = { ...pod.metadata?.annotations, 'drainguard.io/drain-delay': `${i + 1}s` };
    return JSON.stringify(admissionReview({ ...pod, metadata: { ...pod.metadata, name: `pod-${i}`, annotations } }, { uid: `uid-${i}` }));
  });

  const answers = await Promise.all(reviews.map((body) => post(port, body)));

  answers.forEach((answer, i) => {
    const expected = answerText(decideAdmission(JSON.parse(reviews[i] as string), defaultConfig()).body);
    expect(answer).toBe(expected);
  });
  const turns = core.turns();
  expect(turns).toHaveLength(48);
  const perTurn = new Map<number, number>();
  for (const turn of turns) perTurn.set(turn, (perTurn.get(turn) ?? 0) + 1);
  expect(Math.max(...perTurn.values())).toBeGreaterThanOrEqual(2);
});
