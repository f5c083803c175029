/**
 * One source crowding the server without sending anything invalid (issue 20, items 1 and 2): connections
 * that send nothing after the handshake, connections idle after one `/healthz`, admissions whose body
 * arrives one byte a second. The crowd connects from 127.0.0.2 and reopens every connection the server
 * closes; the API-server-like client is on 127.0.0.1 (all of 127/8 is loopback). Whatever the crowd
 * holds, that client's reviews are answered. Real TLS sockets against the real server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect as tcpConnect } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import type { WebhookServer, WebhookServerOptions } from '../../../src/server/webhook-server';
import { CROWD_ADDRESS, type CrowdMember } from '../../support/generators/crowd';
import { NODE, repoPath } from '../../support/repo';
import { admissionReview, fixturePods, httpsRequest, temporaryDirectory } from './webhook-test-kit';
import { startTestServer } from './test-server';

const directory = temporaryDirectory();
const paths = ensureDevCertificates(directory.path);
const ca = readCertificateFiles({ certPath: paths.caCert, keyPath: paths.key }).cert;
const pod = fixturePods().find(({ name }) => name.startsWith('contour-main'))!.pod;
const review = (uid: string) => JSON.stringify(admissionReview(pod, { uid }));
/** A review over 64 KiB: the large lane, decided in a decision worker. */
const largeReview = (uid: string) =>
  JSON.stringify(admissionReview({ ...pod, metadata: { ...pod.metadata, annotations: { padding: 'x'.repeat(100 * 1024) } } }, { uid }));

const started: WebhookServer[] = [];
const crowds: ChildProcess[] = [];
const sockets = new Set<TLSSocket>();
async function startServer(options: Partial<WebhookServerOptions> = {}): Promise<number> {
  const server = await startTestServer(paths, options);
  started.push(server);
  return server.address().port;
}
/**
 * The crowd (test/support/generators/crowd.ts) in a process of its own, as an attacker is: its hundreds
 * of TLS handshakes a second (every connection the server closes is reopened) then do not take the
 * thread this process's server and API-server-like client share. In this process, on a loaded machine,
 * the 20 reviews of a test took over 60 s. Node runs the TypeScript module as it is (type stripping).
 * Resolves once every member's first connection is established or refused; the process ends with the test.
 */
const CROWD_PROCESS = `
const { startCrowd } = require(${JSON.stringify(repoPath('test/support/generators/crowd.ts'))});
const { members, ...target } = JSON.parse(process.argv[1]);
startCrowd(target, members).established.then(() => process.stdout.write('established\\n'));
`;
async function crowd(port: number, members: CrowdMember[]): Promise<void> {
  const child = spawn(NODE, ['--disable-warning=MODULE_TYPELESS_PACKAGE_JSON', '-e', CROWD_PROCESS, JSON.stringify({ port, ca, servername: 'localhost', members })], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  crowds.push(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('established') && resolve());
    child.once('exit', (code) => reject(new Error(`the crowd process exited with ${code} before its connections were established: ${stderr}`)));
  });
}
afterEach(async () => {
  await Promise.all(crowds.splice(0).map((child) => (child.exitCode === null && child.signalCode === null ? (child.kill('SIGKILL'), once(child, 'exit')) : undefined)));
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await Promise.all(started.splice(0).map((server) => server.close()));
});
afterAll(() => directory.remove());

/** A TLS connection from `address`, once its handshake is done; what it receives is read and dropped. */
async function connection(port: number, address = '127.0.0.1'): Promise<TLSSocket> {
  const socket = connect({ socket: tcpConnect({ host: '127.0.0.1', port, localAddress: address }), ca, servername: 'localhost' });
  sockets.add(socket);
  await once(socket, 'secureConnect');
  socket.resume();
  return socket;
}

/** `count` reviews from 127.0.0.1, one after another, each on a new connection; the statuses answered. */
async function apiServerReviews(port: number, count: number, body: (uid: string) => string = review): Promise<string[]> {
  const statuses: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const uid = `api-${i}`;
    const answer = await httpsRequest({ port, ca, servername: 'localhost', body: body(uid) }).catch((error: NodeJS.ErrnoException) => ({ status: error.code ?? 'error', json: undefined }));
    const answered = (answer.json as { response?: { uid?: string; patchType?: string } } | undefined)?.response;
    statuses.push(answer.status === 200 && answered?.uid === uid && answered.patchType === 'JSONPatch' ? 'ok' : String(answer.status));
  }
  return statuses;
}

async function metric(port: number, name: string): Promise<number> {
  const metrics = await httpsRequest({ port, ca, servername: 'localhost', method: 'GET', path: '/metrics' });
  return Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics.text)?.[1] ?? NaN);
}

describe('silent and idle connections', () => {
  test('a new client is answered while one source holds 300 silent and 300 idle connections', async () => {
    const port = await startServer();
    await crowd(port, [
      { kind: 'silent', count: 300 },
      { kind: 'idle', count: 300 },
    ]);
    expect(await apiServerReviews(port, 20)).toEqual(Array(20).fill('ok'));
    expect(await metric(port, 'drainguard_connections_closed_total{reason="evicted"}')).toBeGreaterThan(0);
  }, 60_000);

  test('a connection that sends no request after its handshake is closed, and so is one idle after its answer', async () => {
    const port = await startServer({ idleTimeoutMs: 300 });
    const silent = await connection(port);
    const idle = await connection(port);
    idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await Promise.all([once(silent, 'close'), once(idle, 'close')]);
    expect(await metric(port, 'drainguard_connections_closed_total{reason="idle-timeout"}')).toBe(2);
  });

  test('a request head that never completes is closed like a silent connection', async () => {
    const port = await startServer({ idleTimeoutMs: 300 });
    const slowHead = await connection(port);
    slowHead.write('POST /mutate HTTP/1.1\r\nHost: x\r\n');
    await once(slowHead, 'close');
    expect(await metric(port, 'drainguard_connections_closed_total{reason="idle-timeout"}')).toBe(1);
  });
});

describe('slow bodies', () => {
  test('60 slow small bodies from one source take no slot: another client’s reviews get 200', async () => {
    const port = await startServer();
    await crowd(port, [{ kind: 'slow-body', count: 60, declaredBytes: 3000 }]);
    expect(await apiServerReviews(port, 20)).toEqual(Array(20).fill('ok'));
  }, 60_000);

  test('40 slow 200 KB bodies from one source cannot keep the large slots: another client’s large reviews get 200', async () => {
    const port = await startServer();
    await crowd(port, [{ kind: 'slow-body', count: 40, declaredBytes: 200_000 }]);
    expect(await apiServerReviews(port, 5, largeReview)).toEqual(Array(5).fill('ok'));
    expect(await metric(port, 'drainguard_admissions_slow_bodies_total')).toBeGreaterThan(0);
  }, 60_000);

  test('a body that stops arriving is answered 408 at the request timeout, before an idle connection opened with it is closed', async () => {
    const port = await startServer({ requestTimeoutMs: 500, idleTimeoutMs: 5000 });
    const events: string[] = [];
    const slow = await connection(port);
    const idle = await connection(port);
    let answer = '';
    slow.on('data', (chunk: Buffer) => (answer += chunk.toString('latin1')));
    slow.once('close', () => events.push(`slow body answered ${/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 'nothing'}`));
    idle.once('close', () => events.push('idle connection closed'));
    slow.write(`POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3000\r\n\r\n{`);
    idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await Promise.all([once(slow, 'close'), once(idle, 'close')]);
    expect(events).toEqual(['slow body answered 408', 'idle connection closed']);
  });
});

describe('fair shares', () => {
  test('at the cap, a source holding fewer connections makes room by closing one of the source holding most', async () => {
    const port = await startServer({ limits: { maxConnections: 4 } });
    const crowded = await Promise.all([0, 1, 2, 3].map(() => connection(port, CROWD_ADDRESS)));
    const closed = Promise.race(crowded.map((socket) => once(socket, 'close')));
    const answer = await apiServerReviews(port, 1);
    expect(answer).toEqual(['ok']);
    await closed;
  });

  test('at the cap, a new connection of the source holding every connection is refused, and counted', async () => {
    const port = await startServer({ limits: { maxConnections: 3 } });
    await Promise.all([0, 1, 2].map(() => connection(port, CROWD_ADDRESS)));
    await expect(connection(port, CROWD_ADDRESS)).rejects.toThrow(/socket disconnected|ECONNRESET|EPIPE/i);
    // The metrics client, from another source, makes room for itself.
    expect(await metric(port, 'drainguard_connections_dropped_total')).toBe(1);
    expect(await metric(port, 'drainguard_connections_closed_total{reason="evicted"}')).toBe(1);
  });
});
