/** drainguard's own failure on a valid pod never blocks the pod: allowed, no patch, a warning, logged and counted. */
import { Writable } from 'node:stream';
import pino from 'pino';
import { defaultConfig } from '../../../src/config';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import { INTERNAL_ERROR_WARNING } from '../../../src/admission/decide';
import { PatchVerificationError } from '../../../src/mutate';
import { WebhookServer } from '../../../src/server/webhook-server';
import { admissionReview, fixturePods, httpsRequest, temporaryDirectory } from './webhook-test-kit';

const directory = temporaryDirectory();
const logs: Record<string, unknown>[] = [];
let server: WebhookServer;

beforeAll(async () => {
  const paths = ensureDevCertificates(directory.path);
  server = await WebhookServer.start({
    host: '127.0.0.1',
    port: 0,
    config: defaultConfig(),
    logger: pino(new Writable({ write: (chunk, _e, done) => (logs.push(JSON.parse(String(chunk))), done()) })),
    certificate: readCertificateFiles({ certPath: paths.cert, keyPath: paths.key }),
    shutdownDelayMs: 0,
    core: () => {
      throw new PatchVerificationError('patched pod has duplicate container names', ['duplicate container name "envoy"']);
    },
  });
});
afterAll(async () => {
  await server.close();
  directory.remove();
});

test('a PatchVerificationError is answered 200 allowed without a patch, logged with the uid, counted', async () => {
  const uid = '0c1d2e3f-aaaa-4bbb-8ccc-000000000042';
  const result = await httpsRequest({ port: server.address().port, body: JSON.stringify(admissionReview(fixturePods()[0]!.pod, { uid })) });
  expect(result.status).toBe(200);
  expect(result.json).toEqual({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    response: { uid, allowed: true, warnings: [INTERNAL_ERROR_WARNING] },
  });
  expect(logs.find((entry) => entry.uid === uid)).toMatchObject({ level: 50, result: 'error', error: expect.stringContaining('duplicate container names') });
  const metrics = await httpsRequest({ port: server.address().port, method: 'GET', path: '/metrics' });
  expect(metrics.text).toMatch(/drainguard_admission_requests_total\{result="error"\} 1/);
});
