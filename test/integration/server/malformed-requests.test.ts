/**
 * A corpus of malformed requests, each answered with a 4xx and a specific message, and the
 * server still answering a valid review afterwards.
 */
import { connect } from 'node:tls';
import { once } from 'node:events';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import type { WebhookServer } from '../../../src/server/webhook-server';
import { admissionReview, fixturePods, httpsRequest, temporaryDirectory, type HttpsRequestOptions } from './webhook-test-kit';
import { startTestServer } from './test-server';

let server: WebhookServer;
let port: number;
let ca: string;
const directory = temporaryDirectory();
const BODY_LIMIT = 64 * 1024;

beforeAll(async () => {
  const paths = ensureDevCertificates(directory.path);
  ca = readCertificateFiles({ certPath: paths.caCert, keyPath: paths.key }).cert;
  server = await startTestServer(paths, { limits: { bodyLimitBytes: BODY_LIMIT } });
  port = server.address().port;
});
afterAll(async () => {
  await server.close();
  directory.remove();
});

const pod = fixturePods().find(({ name }) => name.startsWith('contour-main'))!.pod;
const review = (mutate: (r: Record<string, any>) => unknown = (r) => r) => JSON.stringify(mutate(admissionReview(pod)));
const withRequest = (changes: Record<string, unknown>) => review((r) => ({ ...r, request: { ...r.request, ...changes } }));
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

type Case = [name: string, status: number, message: RegExp, request: Omit<HttpsRequestOptions, 'port'>];
const corpus: Case[] = [
  ['not JSON', 400, /not valid JSON/, { body: 'hello' }],
  ['truncated JSON', 400, /not valid JSON/, { body: review().slice(0, 200) }],
  ['empty body', 400, /request body is empty/, { body: '' }],
  ['JSON null', 400, /must be a JSON object, got null/, { body: 'null' }],
  ['JSON array', 400, /must be a JSON object, got an array/, { body: '[]' }],
  ['JSON number', 400, /must be a JSON object, got a number/, { body: '42' }],
  ['invalid UTF-8', 400, /not valid UTF-8/, { body: Buffer.from([0x7b, 0xff, 0xfe, 0x7d]) }],
  ['wrong apiVersion', 400, /apiVersion must be one of/, { body: review((r) => ({ ...r, apiVersion: 'admission.k8s.io/v2' })) }],
  ['no apiVersion', 400, /apiVersion must be one of .*got missing/, { body: review(({ apiVersion: _a, ...r }) => r) }],
  ['wrong kind', 400, /kind must be "AdmissionReview"; got "Pod"/, { body: review((r) => ({ ...r, kind: 'Pod' })) }],
  ['no request', 400, /request must be an object; got missing/, { body: review(({ request: _r, ...r }) => r) }],
  ['request is a string', 400, /request must be an object; got "x"/, { body: review((r) => ({ ...r, request: 'x' })) }],
  ['no uid', 400, /request.uid must be a non-empty string/, { body: withRequest({ uid: undefined }) }],
  ['numeric uid', 400, /request.uid must be a non-empty string; got a number/, { body: withRequest({ uid: 7 }) }],
  ['bad operation', 400, /request.operation must be one of/, { body: withRequest({ operation: 'PATCH' }) }],
  ['no object', 400, /request.object is required for CREATE/, { body: withRequest({ object: undefined }) }],
  ['object without spec', 400, /request.object.spec must be an object/, { body: withRequest({ object: { apiVersion: 'v1', kind: 'Pod', metadata: {} } }) }],
  ['containers not an array', 400, /spec.containers must be an array/, { body: withRequest({ object: { kind: 'Pod', spec: { containers: 'envoy' } } }) }],
  ['dryRun not boolean', 400, /request.dryRun must be a boolean/, { body: withRequest({ dryRun: 'true' }) }],
  ['very deep nesting', 400, /nests deeper than 100 levels/, { body: deep(20_000) }],
  // The limit is exact: 100 levels pass the depth check (and fail as a non-object), 101 do not.
  ['nesting at the limit', 400, /must be a JSON object, got an array/, { body: deep(100) }],
  ['nesting one past the limit', 400, /nests deeper than 100 levels/, { body: deep(101) }],
  ['deep nesting inside the pod', 400, /nests deeper than 100 levels/, { body: withRequest({ object: { ...pod, extra: JSON.parse(deep(150)) } }) }],
  ['huge string (uid)', 400, /request.uid must be at most 128 characters/, { body: withRequest({ uid: 'x'.repeat(BODY_LIMIT / 2) }) }],
  ['huge string over the body limit', 413, /exceeds the 65536 byte limit/, { body: withRequest({ uid: 'x'.repeat(BODY_LIMIT * 4) }) }],
  ['body over the limit', 413, /exceeds the 65536 byte limit/, { body: ' '.repeat(BODY_LIMIT + 1) }],
  ['wrong content type', 415, /Content-Type must be application\/json; got "text\/plain"/, { body: review(), headers: { 'content-type': 'text/plain' } }],
  ['YAML content type', 415, /Content-Type must be application\/json/, { body: review(), headers: { 'content-type': 'application/yaml' } }],
  ['no content type', 415, /Content-Type header is missing/, { body: review(), headers: { 'content-type': '' } }],
  ['unsupported charset', 415, /charset "latin1" is not supported/, { body: review(), headers: { 'content-type': 'application/json; charset=latin1' } }],
  ['gzip body', 415, /Content-Encoding is not supported/, { body: review(), headers: { 'content-encoding': 'gzip' } }],
  ['GET /mutate', 405, /method GET not allowed on \/mutate; use POST/, { method: 'GET' }],
  ['PUT /mutate', 405, /method PUT not allowed/, { method: 'PUT', body: review() }],
  ['headers too large', 431, /request headers are too large/, { body: review(), headers: { 'x-padding': 'a'.repeat(20_000) } }],
  ['unknown path', 404, /no route for POST \/validate/, { path: '/validate', body: review() }],
  ['POST /healthz', 404, /no route for POST \/healthz/, { path: '/healthz', body: '{}' }],
];

describe('malformed requests', () => {
  it('has at least 25 cases', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(25);
  });

  it.each(corpus)('%s → %d with a specific JSON message', async (_name, status, message, request) => {
    const result = await httpsRequest({ port, ca, servername: 'localhost', ...request });
    expect(result.status).toBe(status);
    expect(result.headers['content-type']).toMatch(/^application\/json/);
    expect((result.json as { error: string }).error).toMatch(message);
  });

  it('answers a body shorter than its Content-Length with 400 once the client stops sending', async () => {
    const result = await lyingContentLength();
    expect(result).toMatch(/^HTTP\/1\.1 400/);
    expect(result).toMatch(/"error":"request ended before its body was complete/);
  });

  it.each([
    ['/mutate?timeout=10s', 200],
    ['/mutate/', 200],
    ['/Mutate', 200],
    ['/mutate/x', 404],
    ['/mutatex', 404],
    ['//mutate', 404],
  ])('POST %s is %d, as express routes POST /mutate (the admission handler takes exactly those)', async (path, status) => {
    const result = await httpsRequest({ port, ca, servername: 'localhost', path, body: review() });
    expect(result.status).toBe(status);
    if (status === 200) expect(result.json).toMatchObject({ response: { allowed: true, patchType: 'JSONPatch' } });
    else expect((result.json as { error: string }).error).toMatch(/^no route for POST /);
  });

  it('accepts a review that starts with a UTF-8 byte order mark', async () => {
    const result = await httpsRequest({ port, ca, servername: 'localhost', body: Buffer.from(`\ufeff${review()}`, 'utf8') });
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ response: { allowed: true } });
  });

  it('is still up and answering valid reviews after the whole corpus', async () => {
    const result = await httpsRequest({ port, ca, servername: 'localhost', body: review() });
    expect(result.status).toBe(200);
    expect(result.json).toMatchObject({ response: { allowed: true } });
    const metrics = await httpsRequest({ port, ca, servername: 'localhost', method: 'GET', path: '/metrics' });
    expect(metrics.text).toMatch(/drainguard_admission_requests_total\{result="invalid"\} [1-9]/);
  });
});

describe('TLS', () => {
  it('refuses TLS 1.1 and negotiates TLS 1.3 by default', async () => {
    const attempt = (maxVersion?: 'TLSv1.1') =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ...(maxVersion ? { maxVersion, minVersion: 'TLSv1' } : {}) });
        socket.once('secureConnect', () => {
          resolve(socket.getProtocol() ?? '');
          socket.end();
        });
        socket.once('error', reject);
      });
    await expect(attempt('TLSv1.1')).rejects.toThrow(/protocol|version|alert/i);
    expect(await attempt()).toBe('TLSv1.3');
  });
});

/** Declares 1000 bytes, sends 10 and half-closes: the server must answer 400, not hang or 5xx. */
async function lyingContentLength(): Promise<string> {
  const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost' });
  await once(socket, 'secureConnect');
  socket.write('POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n{"apiVersi');
  socket.end();
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
