/**
 * Clients that do not behave like the API server: weak TLS suites, handshakes that never finish,
 * connection floods, bodies declared far over the limit, `Expect: 100-continue`, long pipelines, more
 * admissions at once than the server takes. Real TLS clients (node:tls, `openssl s_client`) over real
 * sockets against the real server.
 */
import { spawn } from 'node:child_process';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect, type TLSSocket } from 'node:tls';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDevCertificates } from '../../../src/certs/dev';
import { readCertificateFiles } from '../../../src/certs/watch-files';
import { MAX_PIPELINED_ADMISSIONS } from '../../../src/server/connection-turns';
import type { WebhookServer, WebhookServerOptions } from '../../../src/server/webhook-server';
import { REPO_ROOT, admissionReview, eventually, fixturePods, httpsRequest, temporaryDirectory } from './webhook-test-kit';
import { startTestServer } from './test-server';

const directory = temporaryDirectory();
const paths = ensureDevCertificates(directory.path);
const ca = readCertificateFiles({ certPath: paths.caCert, keyPath: paths.key }).cert;
const pod = fixturePods().find(({ name }) => name.startsWith('contour-main'))!.pod;
const review = (uid = 'uid-1', name = 'envoy-x') => JSON.stringify(admissionReview({ ...pod, metadata: { ...pod.metadata, name } }, { uid }));

const started: WebhookServer[] = [];
async function startServer(options: Partial<WebhookServerOptions> = {}): Promise<number> {
  const server = await startTestServer(paths, options);
  started.push(server);
  return server.address().port;
}
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await Promise.all(started.splice(0).map((server) => server.close()));
});
afterAll(() => directory.remove());

function tlsConnect(port: number, options: Record<string, unknown> = {}): TLSSocket {
  const socket = connect({ host: '127.0.0.1', port, ca, servername: 'localhost', ...options });
  sockets.add(socket);
  return socket;
}

/** Resolves with the protocol and cipher negotiated, or rejects with the handshake error. */
function handshake(port: number, options: Record<string, unknown>): Promise<{ protocol: string; cipher: string }> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(port, options);
    socket.once('secureConnect', () => {
      resolve({ protocol: socket.getProtocol() ?? '', cipher: socket.getCipher().standardName });
      socket.end();
    });
    socket.once('error', reject);
  });
}

/** Everything the server sends until it closes the connection. */
async function readUntilClosed(socket: Socket): Promise<string> {
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('latin1');
}

describe('TLS 1.2 suites: forward secrecy and AEAD only', () => {
  const TLS12 = { minVersion: 'TLSv1.2', maxVersion: 'TLSv1.2' };

  test.each(['AES128-SHA', 'AES256-GCM-SHA384', 'ECDHE-RSA-AES128-SHA', 'ECDHE-RSA-AES256-SHA384'])('node:tls offering only %s is refused', async (cipher) => {
    const port = await startServer();
    await expect(handshake(port, { ...TLS12, ciphers: cipher })).rejects.toThrow(/handshake failure|no cipher|alert/i);
  });

  test.each(['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305'])('node:tls offering only %s connects', async (cipher) => {
    const port = await startServer();
    expect(await handshake(port, { ...TLS12, ciphers: cipher })).toMatchObject({ protocol: 'TLSv1.2' });
  });

  test('TLS 1.3 is still negotiated by default', async () => {
    const port = await startServer();
    expect((await handshake(port, {})).protocol).toBe('TLSv1.3');
  });

  /** `openssl s_client` restricted to one TLS 1.2 cipher: its output names the cipher agreed, or none. */
  function opensslCipher(port: number, cipher: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const child = spawn('openssl', ['s_client', '-connect', `127.0.0.1:${port}`, '-tls1_2', '-cipher', cipher, '-CAfile', join(directory.path, 'ca.crt')], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('error', reject);
      child.on('close', () => resolve(/Cipher is (\S+)/.exec(output)?.[1] ?? 'none'));
      child.stdin.end();
    });
  }

  test('openssl s_client gets no connection with AES128-SHA or ECDHE-RSA-AES128-SHA, and one with ECDHE-RSA-AES128-GCM-SHA256', async () => {
    writeFileSync(join(directory.path, 'ca.crt'), ca);
    const port = await startServer();
    expect(await opensslCipher(port, 'AES128-SHA')).toMatch(/^(none|\(NONE\))$/);
    expect(await opensslCipher(port, 'ECDHE-RSA-AES128-SHA')).toMatch(/^(none|\(NONE\))$/);
    expect(await opensslCipher(port, 'ECDHE-RSA-AES128-GCM-SHA256')).toBe('ECDHE-RSA-AES128-GCM-SHA256');
  });
});

describe('connections', () => {
  test('a connection that never completes its TLS handshake is closed by the server and counted', async () => {
    const port = await startServer({ handshakeTimeoutMs: 200 });
    const silent = tcpConnect({ host: '127.0.0.1', port });
    sockets.add(silent);
    // A ClientHello cut short: the server waits for the rest, which never comes.
    silent.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]));
    await once(silent, 'close');
    const metrics = await httpsRequest({ port, ca, servername: 'localhost', method: 'GET', path: '/metrics' });
    expect(metrics.text).toMatch(/drainguard_tls_handshake_failures_total\{reason="timeout"\} 1/);
  });
  // The connection limit, its fair shares and its evictions: ./crowding-clients.test.ts.
});

describe('declared body length', () => {
  const head = (length: number, extra = '') =>
    `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;

  test('Content-Length: 1 GiB is refused with 413 before any of the body is sent, and the connection closed', async () => {
    const port = await startServer();
    const socket = tlsConnect(port);
    await once(socket, 'secureConnect');
    socket.write(`${head(1024 ** 3)}{"apiVersion":`);
    const answer = await readUntilClosed(socket);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toMatch(/Connection: close/i);
    expect(answer).toMatch(/"error":"request body of 1073741824 bytes exceeds the 3145728 byte limit"/);
  });

  test('Expect: 100-continue with 10 MB declared gets 413 and no 100 Continue', async () => {
    const port = await startServer();
    const socket = tlsConnect(port);
    await once(socket, 'secureConnect');
    socket.write(head(10_000_000, 'Expect: 100-continue\r\n'));
    const answer = await readUntilClosed(socket);
    expect(answer).not.toMatch(/100 Continue/);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
  });

  test('Expect: 100-continue with an acceptable length gets 100 Continue, then the answer to the body', async () => {
    const port = await startServer();
    const socket = tlsConnect(port);
    await once(socket, 'secureConnect');
    const body = review('continued');
    socket.write(head(Buffer.byteLength(body), 'Expect: 100-continue\r\nConnection: close\r\n'));
    const [first] = (await once(socket, 'data')) as [Buffer];
    expect(first.toString('latin1')).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    socket.write(body);
    const rest = await readUntilClosed(socket);
    expect(rest).toMatch(/HTTP\/1\.1 200 OK/);
    expect(rest).toMatch(/"uid":"continued"/);
  });
});

describe('pipelining', () => {
  // Enough requests to fill the connection's line (MAX_PIPELINED_ADMISSIONS) twelve times over, so the
  // server stops and resumes reading the connection again and again. More prove nothing more: each is a
  // whole decision on this test's own thread, and 500 of them took over 30 s on a loaded machine.
  const PIPELINED = 12 * MAX_PIPELINED_ADMISSIONS;
  test(`${PIPELINED} reviews and health checks pipelined on one TLS connection are all answered, in order`, async () => {
    const port = await startServer();
    const socket = tlsConnect(port);
    await once(socket, 'secureConnect');
    const requests: string[] = [];
    for (let i = 0; i < PIPELINED; i += 1) {
      const body = review(`pipelined-${i}`);
      requests.push(
        i % 10 === 9
          ? 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'
          : `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.write(requests.join(''));
    let text = '';
    const expected = requests.map((_r, i) => (i % 10 === 9 ? 'ok' : `pipelined-${i}`));
    await new Promise<void>((resolve, reject) => {
      socket.on('data', (chunk: Buffer) => {
        text += chunk.toString('latin1');
        if ((text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length === requests.length) resolve();
      });
      socket.on('close', () => reject(new Error(`connection closed after ${(text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length} answers`)));
    });
    expect([...new Set(text.match(/HTTP\/1\.1 \d{3}/g))]).toEqual(['HTTP/1.1 200']);
    const answered = [...text.matchAll(/"uid":"(pipelined-\d+)"|\r\n\r\n(ok)\n/g)].map((m) => m[1] ?? m[2]);
    expect(answered).toEqual(expected);
  });
});

describe('admission slots', () => {
  /**
   * A server with one slot and one place in the waiting line, whose core holds its worker for pods
   * named "stuck" until the test releases them; with a sender and a reader of its metrics.
   */
  async function startOneSlotServer(coreFile: string) {
    const stuck = stuckCore(coreFile);
    const port = await startServer({ coreModule: stuck.core, limits: { concurrency: 1, queueLimit: 1 }, inlineDecisionMaxBytes: 0 });
    return { port, release: stuck.release, ...clientOf(port) };
  }

  /**
   * The real core, except that it holds a pod named "stuck" until `release` is called (it waits for a
   * file, without using the CPU), then decides it as the real core does.
   */
  function stuckCore(coreFile: string): { core: string; release: () => void } {
    const core = join(directory.path, coreFile);
    const released = JSON.stringify(join(directory.path, `${coreFile}.released`));
    const dist = JSON.stringify(join(REPO_ROOT, 'dist/mutate/index.js'));
    writeFileSync(
      core,
      `const { existsSync } = require('node:fs');\nconst pause = new Int32Array(new SharedArrayBuffer(4));\n` +
        `exports.mutate = (pod, config) => { if (pod.metadata.name === 'stuck') while (!existsSync(${released})) Atomics.wait(pause, 0, 0, 10); return require(${dist}).mutate(pod, config); };\n`,
    );
    return { core, release: () => writeFileSync(JSON.parse(released) as string, '') };
  }

  /** A sender of reviews to the server on `port`, and a reader of its metrics. */
  function clientOf(port: number) {
    const send = (body: string) => httpsRequest({ port, ca, servername: 'localhost', body });
    const metric = async (name: string) => {
      const metrics = await httpsRequest({ port, ca, servername: 'localhost', method: 'GET', path: '/metrics' });
      return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics.text)?.[1]);
    };
    return { send, metric };
  }

  test('with every slot and the waiting line taken, a review gets 429 with Retry-After; the waiting ones are answered', async () => {
    const { send, metric, release } = await startOneSlotServer('slow-core.cjs');

    const stuck = send(review('stuck-uid', 'stuck'));
    await eventually('the stuck review to hold the slot', async () => ((await metric('drainguard_admissions_in_progress')) === 1 ? true : undefined));
    const waiting = send(review('waiting-uid'));
    await eventually('the second review to wait', async () => ((await metric('drainguard_admissions_waiting')) === 1 ? true : undefined));

    const refused = await send(review('refused-uid'));
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect((refused.json as { error: string }).error).toMatch(/too many admissions in progress \(1 running, 1 waiting\); retry/);
    expect(await metric('drainguard_admissions_throttled_total')).toBe(1);

    release();
    expect((await stuck).json).toMatchObject({ response: { uid: 'stuck-uid', allowed: true } });
    expect((await waiting).json).toMatchObject({ response: { uid: 'waiting-uid', allowed: true, patchType: 'JSONPatch' } });
  });

  test('a small review takes a small slot: it is answered while a large one holds every large slot', async () => {
    // One large slot, no waiting line: a second large review is refused at once.
    const { core, release } = stuckCore('slow-large-core.cjs');
    const port = await startServer({ coreModule: core, limits: { concurrency: 1, queueLimit: 0 } });
    const { send, metric } = clientOf(port);
    const large = (uid: string, name: string) =>
      JSON.stringify(admissionReview({ ...pod, metadata: { ...pod.metadata, name, annotations: { padding: 'x'.repeat(70 * 1024) } } }, { uid }));
    expect(Buffer.byteLength(large('u', 'stuck'))).toBeGreaterThan(64 * 1024);

    const stuck = send(large('stuck-uid', 'stuck'));
    await eventually('the large review to hold the large slot', async () => ((await metric('drainguard_admissions_in_progress')) === 1 ? true : undefined));
    expect((await send(large('second-large-uid', 'envoy-y'))).status).toBe(429);
    const small = await send(review('small-uid'));
    expect(small.status).toBe(200);
    expect(small.json).toMatchObject({ response: { uid: 'small-uid', allowed: true, patchType: 'JSONPatch' } });
    release();
    expect((await stuck).json).toMatchObject({ response: { uid: 'stuck-uid', allowed: true } });
  }, 20_000);

  test('a client that goes away while its review waits for a slot gives the slot back', async () => {
    const { port, send, metric, release } = await startOneSlotServer('slow-core-2.cjs');

    const stuck = send(review('stuck-uid', 'stuck'));
    await eventually('the stuck review to hold the slot', async () => ((await metric('drainguard_admissions_in_progress')) === 1 ? true : undefined));
    // A whole request written on its own connection, which then closes before it is answered.
    const body = review('gone-uid');
    const leaving = tlsConnect(port);
    await once(leaving, 'secureConnect');
    leaving.write(`POST /mutate HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await eventually('the review to wait for the slot', async () => ((await metric('drainguard_admissions_waiting')) === 1 ? true : undefined));
    leaving.destroy();

    release();
    await stuck;
    // The slot the departed client was given must come back: the next review is answered.
    const next = await send(review('next-uid'));
    expect(next.json).toMatchObject({ response: { uid: 'next-uid', allowed: true, patchType: 'JSONPatch' } });
    await eventually('no admission left holding a slot', async () => ((await metric('drainguard_admissions_in_progress')) === 0 ? true : undefined));
  }, 20_000);
});
