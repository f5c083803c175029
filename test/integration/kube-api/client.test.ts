/**
 * The lean client's connections (src/kube-api/client.ts, connections.ts) against real servers on
 * loopback: Node's HTTPS server (requests share one kept-alive TLS connection and carry the
 * credentials; a rotated CA gets a new connection; a silent server and a silent watch fail after their
 * timeouts; a stream ends when its signal aborts; a connection lost without an answer: a GET is sent
 * again once, a POST fails), a raw TLS server writing answers byte for byte (each framing, `Connection:
 * close`, HTTP/1.0, and answers that are malformed, cut short or too large), a plain-HTTP server, an
 * IPv6 literal, and a cluster behind an HTTP CONNECT proxy (node:https with client-node's proxy agent).
 * Against the real kube-apiserver, the reporter's and self mode's suites in test/kube use it throughout.
 */
import { once } from 'node:events';
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:https';
import { connect as tcpConnect, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { createCertificateAuthority, createServingCertificate } from '../../../src/certs/pki';
import { KubeApiClient, MAX_ANSWER_BYTES, type KubeApiClientOptions } from '../../../src/kube-api/client';
import { ApiFailure } from '../../../src/kube-api/failure';
import { kubeConfigFor } from '../../../src/kube-api/load';
import { temporaryDirectory } from '../server/webhook-test-kit';

const validity = { now: new Date(), validityDays: 1 };
const ca = createCertificateAuthority('kube-api client test CA', validity);
const serving = createServingCertificate(ca, ['127.0.0.1', '::1'], validity);

interface Seen {
  method: string;
  url: string;
  authorization: string | undefined;
  body: string;
  /** Which of the server's connections carried it (1, 2, …). */
  connection: number;
}

type Numbered = Socket & { number?: number };

let server: Server;
let port: number;
const seen: Seen[] = [];
/** Called after each request the server reads. */
const seenWaiters = new Set<() => void>();
let connections = 0;
const sockets = new Set<Numbered>();
/** What the server does with the next request: answer JSON, answer and close, stay silent, start a watch and go silent, drop the connection unanswered (once). */
let behaviour: 'answer' | 'close' | 'silent' | 'stream' | 'drop' | 'unauthorized' = 'answer';
const directory = temporaryDirectory();
const caFile = join(directory.path, 'ca.crt');

async function listening(listener: NetServer | Server | HttpServer, host = '127.0.0.1'): Promise<number> {
  listener.listen(0, host);
  await once(listener, 'listening');
  return (listener.address() as AddressInfo).port;
}

beforeAll(async () => {
  writeFileSync(caFile, ca.cert);
  server = createServer({ cert: serving.cert, key: serving.key, keepAliveTimeout: 60_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const number = (req.socket as Numbered).number!;
      seen.push({ method: req.method!, url: req.url!, authorization: req.headers.authorization, body: Buffer.concat(chunks).toString(), connection: number });
      for (const waiter of seenWaiters) waiter();
      if (behaviour === 'silent') return;
      if (behaviour === 'drop') {
        behaviour = 'answer';
        return void req.socket.destroy();
      }
      if (behaviour === 'unauthorized') {
        behaviour = 'answer';
        res.statusCode = 401;
        return void res.end(JSON.stringify({ kind: 'Status', code: 401 }));
      }
      if (behaviour === 'stream') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED"}\n');
        return;
      }
      res.setHeader('content-type', 'application/json');
      if (behaviour === 'close') res.setHeader('connection', 'close');
      res.end(JSON.stringify({ kind: 'Status', message: `answered ${req.method} ${req.url}` }));
    });
  });
  server.on('secureConnection', (socket: Numbered) => {
    socket.number = ++connections;
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  port = await listening(server);
});

afterAll(() => {
  server.closeAllConnections();
  server.close();
  directory.remove();
});

beforeEach(() => {
  behaviour = 'answer';
  seen.length = 0;
});

interface ClusterEntry {
  server?: string;
  token?: string;
  proxyUrl?: string;
  skipTlsVerify?: boolean;
}

function kubeconfig(entry: ClusterEntry = {}): string {
  const path = join(directory.path, `kubeconfig-${Math.random().toString(16).slice(2)}`);
  const cluster = {
    server: entry.server ?? `https://127.0.0.1:${port}`,
    ...(entry.skipTlsVerify ? { 'insecure-skip-tls-verify': true } : { 'certificate-authority': caFile }),
    ...(entry.proxyUrl ? { 'proxy-url': entry.proxyUrl } : {}),
  };
  writeFileSync(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'test', cluster }],
      users: [{ name: 'test', user: { token: entry.token ?? 'secret-token' } }],
      contexts: [{ name: 'test', context: { cluster: 'test', user: 'test' } }],
      'current-context': 'test',
    }),
  );
  return path;
}

const client = async (timeoutMs = 10_000, entry: ClusterEntry = {}, options: KubeApiClientOptions = {}) =>
  new KubeApiClient(await kubeConfigFor({ kubeconfigPath: kubeconfig(entry) }), timeoutMs, options);

/** The request's rejection (it must reject). */
async function failure(request: Promise<unknown>): Promise<ApiFailure> {
  const error = await request.then(
    () => new Error('the request did not fail'),
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ApiFailure);
  expect((error as ApiFailure).status).toBeUndefined();
  return error as ApiFailure;
}

test('requests one after another share one kept-alive connection, carry the credentials and the body, and get the answer', async () => {
  const api = await client();
  try {
    const first = await api.request('POST', '/api/v1/namespaces/a/events', { metadata: { name: 'e' } });
    const second = await api.request('GET', '/api/v1/namespaces/a/events/e');
    expect(first).toEqual({ status: 200, text: JSON.stringify({ kind: 'Status', message: 'answered POST /api/v1/namespaces/a/events' }) });
    expect(second.status).toBe(200);
    expect(seen.map(({ method, url, authorization, body }) => ({ method, url, authorization, body }))).toEqual([
      { method: 'POST', url: '/api/v1/namespaces/a/events', authorization: 'Bearer secret-token', body: '{"metadata":{"name":"e"}}' },
      { method: 'GET', url: '/api/v1/namespaces/a/events/e', authorization: 'Bearer secret-token', body: '' },
    ]);
    expect(seen[0]!.connection).toBe(seen[1]!.connection);
  } finally {
    api.close();
  }
});

test('requests at the same time each get a connection; afterwards they are reused', async () => {
  const api = await client();
  try {
    const answers = await Promise.all(['/a', '/b', '/c'].map((path) => api.request('GET', path)));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200]);
    const used = new Set(seen.map((request) => request.connection));
    expect(used.size).toBe(3);
    await api.request('GET', '/d');
    expect(used.has(seen[3]!.connection)).toBe(true);
  } finally {
    api.close();
  }
});

test('a connection the server closes (after an answer, or while idle) is replaced; no request fails', async () => {
  const api = await client();
  try {
    behaviour = 'close';
    expect((await api.request('GET', '/a')).status).toBe(200);
    behaviour = 'answer';
    expect((await api.request('GET', '/b')).status).toBe(200);
    expect(seen[1]!.connection).not.toBe(seen[0]!.connection);
    // The server ends the idle connection; the client notices before it sends the next request on it.
    const ended = [...sockets].find((socket) => socket.number === seen[1]!.connection)!;
    const gone = once(ended, 'close');
    ended.end();
    await gone;
    expect((await api.request('GET', '/c')).status).toBe(200);
    expect(seen[2]!.connection).not.toBe(seen[1]!.connection);
  } finally {
    api.close();
  }
});

test('a kept-alive connection lost without an answer: a GET is sent once more on a new connection, a POST fails saying it is not repeated', async () => {
  // What the client sees when the server closes an idle connection just as a request is written on it.
  const api = await client();
  try {
    await api.request('GET', '/warm');
    behaviour = 'drop';
    expect((await api.request('GET', '/again')).status).toBe(200);
    expect(seen.map((request) => request.url)).toEqual(['/warm', '/again', '/again']);
    expect(seen[1]!.connection).toBe(seen[0]!.connection);
    expect(seen[2]!.connection).not.toBe(seen[1]!.connection);

    behaviour = 'drop';
    const lost = await failure(api.request('POST', '/api/v1/namespaces/a/events', { metadata: { name: 'e' } }));
    expect(lost.message).toMatch(
      /^POST \/api\/v1\/namespaces\/a\/events: the API server closed the connection without answering( \((ECONNRESET|EPIPE)\))? on a kept-alive connection \(likely closed as idle just as the request was sent\); not sent again, since the server may have carried it out$/,
    );
    expect(seen.filter((request) => request.method === 'POST')).toHaveLength(1);
    // A GET that fails so on a new connection is not sent again either.
    api.close();
    behaviour = 'drop';
    const first = await failure(api.request('GET', '/fresh'));
    expect(first.message).toMatch(/^GET \/fresh: the API server closed the connection without answering/);
    expect(seen.filter((request) => request.url === '/fresh')).toHaveLength(1);
  } finally {
    api.close();
  }
});

test('a CA file rewritten (a rotated CA) gets a new connection made with it, once the credentials are applied again', async () => {
  const api = await client(10_000, {}, { credentialsReuseMs: 0 });
  try {
    await api.request('GET', '/before');
    await api.request('GET', '/same');
    // The same CA with other bytes: the settings differ, and the server's certificate still verifies.
    appendFileSync(caFile, '\n');
    await api.request('GET', '/after');
    expect(seen[1]!.connection).toBe(seen[0]!.connection);
    expect(seen[2]!.connection).not.toBe(seen[1]!.connection);
  } finally {
    writeFileSync(caFile, ca.cert);
    api.close();
  }
});

test('credentials once applied serve the requests that follow (a rewritten CA file unseen); a 401 has them applied anew', async () => {
  const api = await client(10_000, {}, { credentialsReuseMs: 60 * 60_000 });
  try {
    await api.request('GET', '/first');
    appendFileSync(caFile, '\n');
    behaviour = 'unauthorized';
    expect((await api.request('GET', '/refused')).status).toBe(401);
    expect((await api.request('GET', '/again')).status).toBe(200);
    expect(seen.map((request) => request.url)).toEqual(['/first', '/refused', '/again']);
    // The 401 went on the first connection (credentials as first applied); the next, applied anew, saw the new CA bytes.
    expect(seen[1]!.connection).toBe(seen[0]!.connection);
    expect(seen[2]!.connection).not.toBe(seen[1]!.connection);
  } finally {
    writeFileSync(caFile, ca.cert);
    api.close();
  }
});

test('a silent server fails a request, and a watch that goes quiet fails its stream, once nothing arrived for the timeout', async () => {
  const api = await client(300);
  try {
    behaviour = 'silent';
    expect((await failure(api.request('GET', '/silent'))).message).toBe('GET /silent: nothing received for 300 ms');
    behaviour = 'stream';
    const received: string[] = [];
    const quiet = await failure(api.stream('/api/v1/pods?watch=true', (chunk) => received.push(chunk.toString()), { idleTimeoutMs: 200 }));
    expect(quiet.message).toBe('GET /api/v1/pods?watch=true: nothing received for 200 ms');
    expect(received.join('')).toBe('{"type":"ADDED"}\n');
  } finally {
    api.close();
  }
});

test('a stream hands over what arrives and resolves with status 0 when its signal ends it; a consumer that throws ends it with its error', async () => {
  const api = await client();
  behaviour = 'stream';
  const controller = new AbortController();
  const received: string[] = [];
  try {
    const answer = await api.stream(
      '/api/v1/pods?watch=true',
      (chunk) => {
        received.push(chunk.toString());
        controller.abort();
      },
      { signal: controller.signal },
    );
    expect(answer).toEqual({ status: 0, text: '' });
    expect(received.join('')).toBe('{"type":"ADDED"}\n');
    expect(await api.stream('/aborted-before', () => undefined, { signal: controller.signal })).toEqual({ status: 0, text: '' });
    expect(seen.map((request) => request.url)).toEqual(['/api/v1/pods?watch=true']);
    const refusal = new SyntaxError('not JSON');
    await expect(
      api.stream('/api/v1/pods?watch=true', () => {
        throw refusal;
      }),
    ).rejects.toBe(refusal);
  } finally {
    api.close();
  }
});

test('close() fails a request under way (it is not sent again) and leaves the client usable', async () => {
  const api = await client();
  try {
    await api.request('GET', '/warm');
    behaviour = 'silent';
    const pending = api.request('GET', '/pending');
    await eventuallySeen('/pending');
    api.close();
    expect((await failure(pending)).message).toBe('GET /pending: the client was closed');
    behaviour = 'answer';
    expect((await api.request('GET', '/after')).status).toBe(200);
    expect(seen.map((request) => request.url)).toEqual(['/warm', '/pending', '/after']);
  } finally {
    api.close();
  }
});

test('a server whose certificate the cluster CA did not sign fails the request with what TLS said', async () => {
  const other = createCertificateAuthority('another CA', validity);
  const otherFile = join(directory.path, 'other-ca.crt');
  writeFileSync(otherFile, other.cert);
  const config = await kubeConfigFor({ kubeconfigPath: kubeconfig() });
  config.clusters[0] = { ...config.clusters[0]!, caFile: otherFile };
  const wrong = new KubeApiClient(config, 10_000);
  try {
    expect((await failure(wrong.request('GET', '/api'))).message).toMatch(/^GET \/api: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY): /);
    expect(seen).toEqual([]);
  } finally {
    wrong.close();
  }
});

/** Resolves once the server has read a request for `url` (one that gets no answer cannot be awaited). */
function eventuallySeen(url: string): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      if (!seen.some((request) => request.url === url)) return;
      seenWaiters.delete(check);
      resolve();
    };
    seenWaiters.add(check);
    check();
  });
}

test('credentials or paths that would break the request head are refused before anything is sent', async () => {
  const api = await client(10_000, { token: 'a\r\nX-Injected: yes' });
  const plain = await client();
  try {
    expect((await failure(api.request('GET', '/api'))).message).toBe('GET /api: the request header "Authorization" holds a line break or another control character, which HTTP cannot carry');
    expect((await failure(plain.request('GET', '/api v1'))).message).toBe('GET /api v1: the request target "/api v1" is not a printable origin-form path');
    expect(seen).toEqual([]);
  } finally {
    api.close();
    plain.close();
  }
});

describe('answers written byte for byte by a raw TLS server', () => {
  /** The answer to each request, in order; `{ end }` writes it and ends the connection. */
  const script: (string | Buffer | { end: string })[] = [];
  const rawSeen: { line: string; connection: number }[] = [];
  let rawPort: number;
  let rawConnections = 0;
  const raw = createTlsServer({ cert: serving.cert, key: serving.key }, (socket) => {
    const number = ++rawConnections;
    let pending = '';
    socket.on('data', (chunk: Buffer) => {
      pending += chunk.toString('latin1');
      // The client's requests here carry no body: each ends at its blank line.
      for (let end = pending.indexOf('\r\n\r\n'); end !== -1; end = pending.indexOf('\r\n\r\n')) {
        rawSeen.push({ line: pending.slice(0, pending.indexOf('\r\n')), connection: number });
        pending = pending.slice(end + 4);
        const answer = script.shift() ?? { end: '' };
        if (typeof answer === 'object' && 'end' in answer) return void socket.end(answer.end);
        socket.write(answer);
      }
    });
    socket.on('error', () => undefined);
  });

  beforeAll(async () => {
    rawPort = await listening(raw);
  });
  afterAll(() => raw.close());
  beforeEach(() => {
    script.length = 0;
    rawSeen.length = 0;
  });

  const rawClient = () => client(2_000, { server: `https://127.0.0.1:${rawPort}` });
  const ok = (body: string, extra = '') => `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;

  test.each([
    { framing: 'Content-Length', answer: ok('{"a":1}'), text: '{"a":1}', reused: true },
    { framing: 'chunked', answer: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n', text: '{"a":1}', reused: true },
    { framing: 'no body (204)', answer: 'HTTP/1.1 204 No Content\r\n\r\n', text: '', reused: true, status: 204 },
    { framing: 'Connection: close', answer: ok('{"a":1}', 'Connection: close\r\n'), text: '{"a":1}', reused: false },
    { framing: 'HTTP/1.0 without keep-alive', answer: 'HTTP/1.0 200 OK\r\nContent-Length: 7\r\n\r\n{"a":1}', text: '{"a":1}', reused: false },
    { framing: 'HTTP/1.0 with keep-alive', answer: 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 7\r\n\r\n{"a":1}', text: '{"a":1}', reused: true },
    { framing: 'a body that runs to the close', answer: { end: 'HTTP/1.1 200 OK\r\n\r\n{"a":1}' }, text: '{"a":1}', reused: false },
    { framing: 'bytes after the answer, before a request', answer: `${ok('{"a":1}')}HTTP/1.1 200 OK\r\n`, text: '{"a":1}', reused: false },
  ])('$framing: the answer is read, and the connection kept only when it may carry the next request', async ({ answer, text, reused, status = 200 }) => {
    const api = await rawClient();
    try {
      script.push(answer, ok('{}'));
      expect(await api.request('GET', '/first')).toEqual({ status, text });
      expect((await api.request('GET', '/second')).status).toBe(200);
      const [first, second] = rawSeen;
      expect(first!.line).toBe('GET /first HTTP/1.1');
      expect(second!.connection === first!.connection).toBe(reused);
    } finally {
      api.close();
    }
  });

  test.each([
    { what: 'not HTTP', answer: 'SSH-2.0-OpenSSH_9.6\r\n\r\n', message: 'GET /x: unreadable answer: not an HTTP/1.x status line: "SSH-2.0-OpenSSH_9.6"' },
    { what: 'a head over 64 KiB', answer: `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(70 * 1024)}\r\n\r\n`, message: 'GET /x: unreadable answer: headers larger than 65536 bytes' },
    { what: 'a malformed header', answer: 'HTTP/1.1 200 OK\r\nno colon here\r\nContent-Length: 0\r\n\r\n', message: 'GET /x: unreadable answer: malformed header line: "no colon here"' },
    { what: 'conflicting lengths', answer: 'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', message: 'GET /x: unreadable answer: conflicting Content-Length headers' },
    { what: 'a bad chunk size', answer: 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', message: 'GET /x: unreadable answer: invalid chunk size line "zz"' },
    { what: 'an interim answer', answer: 'HTTP/1.1 100 Continue\r\n\r\n', message: 'GET /x: unreadable answer: unexpected interim answer 100' },
  ])('$what: the request fails with what was wrong', async ({ answer, message }) => {
    const api = await rawClient();
    try {
      script.push(answer);
      expect((await failure(api.request('GET', '/x'))).message).toBe(message);
    } finally {
      api.close();
    }
  });

  test('an answer cut short, and one larger than a whole answer may be, fail the request', async () => {
    const api = await rawClient();
    try {
      script.push({ end: 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc' });
      expect((await failure(api.request('GET', '/short'))).message).toBe('GET /short: unreadable answer: connection closed before the end of the body');
      const size = MAX_ANSWER_BYTES + 1;
      script.push(Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${size}\r\n\r\n`), Buffer.alloc(size, 0x61)]));
      expect((await failure(api.request('GET', '/huge'))).message).toBe(`GET /huge: the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    } finally {
      api.close();
    }
  });
});

test('an IPv6 literal server: connected to bare, named in brackets in the Host header, its certificate checked against the address', async () => {
  const v6 = createServer({ cert: serving.cert, key: serving.key }, (req, res) => res.end(JSON.stringify({ host: req.headers.host })));
  const v6Port = await listening(v6, '::1');
  const api = await client(10_000, { server: `https://[::1]:${v6Port}` });
  try {
    expect(await api.request('GET', '/version')).toEqual({ status: 200, text: JSON.stringify({ host: `[::1]:${v6Port}` }) });
  } finally {
    api.close();
    v6.closeAllConnections();
    v6.close();
  }
});

test('a plain-HTTP server works when its cluster entry skips TLS checks, as client-node requires; without that it is refused at once', async () => {
  const plain = createHttpServer((req, res) => res.end(JSON.stringify({ url: req.url, authorization: req.headers.authorization })));
  const plainPort = await listening(plain);
  const api = await client(10_000, { server: `http://127.0.0.1:${plainPort}/prefix/`, skipTlsVerify: true });
  try {
    expect(await api.request('GET', '/api')).toEqual({ status: 200, text: JSON.stringify({ url: '/prefix/api', authorization: 'Bearer secret-token' }) });
    await expect(client(10_000, { server: `http://127.0.0.1:${plainPort}` })).rejects.toThrow(
      `the kubeconfig's server http://127.0.0.1:${plainPort} is plain HTTP, which needs insecure-skip-tls-verify: true in its cluster entry (credentials and answers cross the network unencrypted)`,
    );
  } finally {
    api.close();
    plain.closeAllConnections();
    plain.close();
  }
});

test('a cluster behind an HTTP proxy (proxy-url): requests go through its CONNECT tunnel with the cluster CA and the credentials', async () => {
  const tunnels: string[] = [];
  const proxy = createHttpServer();
  proxy.on('connect', (req, client: Socket, head: Buffer) => {
    tunnels.push(req.url!);
    const [host, targetPort] = req.url!.split(':');
    const upstream = tcpConnect(Number(targetPort), host, () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
  });
  const proxyPort = await listening(proxy);
  const api = await client(10_000, { proxyUrl: `http://127.0.0.1:${proxyPort}` });
  try {
    const answer = await api.request('POST', '/api/v1/namespaces/a/events', { metadata: { name: 'p' } });
    expect(answer).toEqual({ status: 200, text: JSON.stringify({ kind: 'Status', message: 'answered POST /api/v1/namespaces/a/events' }) });
    behaviour = 'stream';
    const controller = new AbortController();
    const watched = await api.stream('/api/v1/pods?watch=true', () => controller.abort(), { signal: controller.signal });
    expect(watched.status).toBe(0);
    expect(tunnels.length).toBeGreaterThanOrEqual(1);
    expect(new Set(tunnels)).toEqual(new Set([`127.0.0.1:${port}`]));
    expect(seen.map(({ method, url, authorization, body }) => ({ method, url, authorization, body }))).toEqual([
      { method: 'POST', url: '/api/v1/namespaces/a/events', authorization: 'Bearer secret-token', body: '{"metadata":{"name":"p"}}' },
      { method: 'GET', url: '/api/v1/pods?watch=true', authorization: 'Bearer secret-token', body: '' },
    ]);
  } finally {
    api.close();
    proxy.closeAllConnections();
    proxy.close();
  }
});
