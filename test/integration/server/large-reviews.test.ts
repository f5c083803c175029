/**
 * A review of about 3 MiB of each kind of pod content is answered with drainguard's real decision, and
 * while it is being decided the server keeps answering `/healthz`: the health check is never queued
 * behind a large review. The order of events is the assertion, not a duration: the server logs when it
 * starts deciding, and a health check sent after that line must be answered before the review is.
 */
import { Agent, request } from 'node:https';
import { Writable } from 'node:stream';
import pino from 'pino';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import { INTERNAL_ERROR_WARNING } from '../../../src/admission/decide';
import type { WebhookServer } from '../../../src/server/webhook-server';
import { CONTENT_KINDS, largeReviewBody } from '../../support/generators/pod-content';
import { startTestServer } from './test-server';
import { httpsRequest, temporaryDirectory } from './webhook-test-kit';

const directory = temporaryDirectory();
const paths = ensureDevCertificates(directory.path);
const ca = readCertificateFiles({ certPath: paths.caCert, keyPath: paths.key }).cert;
const logListeners = new Set<(entry: Record<string, unknown>) => void>();
let server: WebhookServer;
let agent: Agent;

beforeAll(async () => {
  server = await startTestServer(paths, {
    logger: pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _encoding, done) {
          const entry = JSON.parse(String(chunk)) as Record<string, unknown>;
          for (const listener of logListeners) listener(entry);
          done();
        },
      }),
    ),
  });
  // The health checker's own connection, opened before any large review is sent.
  agent = new Agent({ keepAlive: true, maxSockets: 1, ca, servername: 'localhost' });
  await healthz();
});
afterAll(async () => {
  agent.destroy();
  await server.close();
  directory.remove();
});

function healthz(): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: server.address().port, path: '/healthz', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Resolves with the first log entry `match` accepts. */
function logged(match: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    const listener = (entry: Record<string, unknown>) => {
      if (!match(entry)) return;
      logListeners.delete(listener);
      resolve(entry);
    };
    logListeners.add(listener);
  });
}

test.each(CONTENT_KINDS)('a 3 MiB review made of %s is decided while /healthz keeps answering', async (kind) => {
  const uid = `large-${kind}`;
  const body = largeReviewBody(kind, uid);
  expect(Buffer.byteLength(body)).toBeGreaterThan(3 * 1024 * 1024 - 64 * 1024);

  const deciding = logged((entry) => entry.msg === 'admission received; deciding' && entry.bytes === Buffer.byteLength(body));
  const answeredLog = logged((entry) => entry.uid === uid);
  let reviewAnswered = false;
  const review = httpsRequest({ port: server.address().port, ca, servername: 'localhost', body }).finally(() => (reviewAnswered = true));
  await deciding;

  // Health checks sent while the review is being decided.
  const answeredBeforeReview: boolean[] = [];
  for (let i = 0; i < 3; i += 1) {
    expect(await healthz()).toBe(200);
    answeredBeforeReview.push(!reviewAnswered);
  }
  expect(answeredBeforeReview[0]).toBe(true);

  const result = await review;
  expect(result.status).toBe(200);
  const response = (result.json as { response: { uid: string; allowed: boolean; patchType?: string; warnings?: string[] } }).response;
  expect(response.uid).toBe(uid);
  // A decision past its deadline or heap says so in the log: shown here when it happens.
  expect((await answeredLog).error).toBeUndefined();
  expect(response.warnings ?? []).not.toContain(INTERNAL_ERROR_WARNING);
  expect(response).toMatchObject({ allowed: true, patchType: 'JSONPatch' });
}, 60_000);
