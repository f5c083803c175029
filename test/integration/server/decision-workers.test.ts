/**
 * Decision workers exist only while large reviews need them: none is started for the small reviews of
 * ordinary pods, one is started by the first large review, and it leaves after its idle time, after
 * which the next large review starts another and is answered with its patch.
 */
import { ensureDevCertificates } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import type { WebhookServer } from '../../../src/server/webhook-server';
import { contourPod } from '../../support/generators/pods';
import { largeReviewBody } from '../../support/generators/pod-content';
import { reviewBody } from '../../support/generators/review';
import { startTestServer } from './test-server';
import { eventually, httpsRequest, silentLogger, temporaryDirectory } from './webhook-test-kit';

const directory = temporaryDirectory();
const paths = ensureDevCertificates(directory.path);
const ca = readCertificateFiles({ certPath: paths.caCert, keyPath: paths.key }).cert;
let server: WebhookServer;

beforeAll(async () => {
  // Long enough that the worker is still there right after its decision on a loaded machine, short
  // enough that the test sees it leave.
  server = await startTestServer(paths, { logger: silentLogger(), decisionWorkerIdleMs: 2_000 });
});
afterAll(async () => {
  await server.close();
  directory.remove();
});

async function admit(body: string): Promise<{ uid: string; patchType?: string }> {
  const result = await httpsRequest({ port: server.address().port, ca, servername: 'localhost', body });
  expect(result.status).toBe(200);
  return (result.json as { response: { uid: string; patchType?: string } }).response;
}

test('small reviews start no decision worker; a large one starts one, which leaves when idle and is started again', async () => {
  for (let i = 0; i < 5; i++) expect(await admit(reviewBody(contourPod(), `small-${i}`))).toMatchObject({ uid: `small-${i}`, patchType: 'JSONPatch' });
  expect(server.decisionWorkers).toBe(0);

  // Over the 64 KiB decided on the main thread, far under the 3 MiB limit: a quick decision.
  const large = (uid: string) => largeReviewBody('env', uid, 256 * 1024);
  expect(await admit(large('large-1'))).toMatchObject({ uid: 'large-1', patchType: 'JSONPatch' });
  expect(server.decisionWorkers).toBe(1);

  await eventually('the idle decision worker to leave', async () => (server.decisionWorkers === 0 ? true : undefined), { attempts: 600, intervalMs: 50 });

  expect(await admit(large('large-2'))).toMatchObject({ uid: 'large-2', patchType: 'JSONPatch' });
  expect(server.decisionWorkers).toBe(1);
}, 60_000);
