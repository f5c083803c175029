/**
 * The HTTPS server around the admission handler and the express app: TLS ≥ 1.2 with forward-secret
 * AEAD suites only, certificates swapped in place without a restart, bounded connections, handshakes
 * and admissions, readiness, and the shutdown sequence Kubernetes needs (fail readiness, keep serving
 * while endpoints are removed, stop accepting, let in-flight requests finish).
 */
import { createServer, type Server } from 'node:https';
import { Server as TlsServer, createSecureContext, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config/types';
import { checkKeyPair } from '../certs/inspect';
import { createAdmissionHandler, isAdmissionRequest } from './admission-handler';
import { AdmissionLimiter, AdmissionSlots } from './admission-limiter';
import { ConnectionGuard, DEFAULT_IDLE_TIMEOUT_MS } from './connection-guard';
import { createWebhookApp } from './app';
import { DecisionBatch, DEFAULT_BATCH_BUDGET_MS } from './decision-batch';
import { DecisionPool, type Decided } from './decision-pool';
import { decideBody, loadCoreModule } from './decide-body';
import { WebhookMetrics } from './metrics';
import { admissionLimits, type AdmissionLimits } from './sizing';

export interface CertificatePair {
  cert: string;
  key: string;
}

export interface WebhookServerOptions {
  host: string;
  /** 0 picks a free port (tests). */
  port: number;
  config: Config;
  logger: Logger;
  /** May be absent at start (self mode fetches it); the server is not ready until one is set. */
  certificate?: CertificatePair;
  /** How long to keep serving after shutdown begins, while Kubernetes removes the endpoint. */
  shutdownDelayMs: number;
  /** After the delay: idle connections are closed this much later, all connections twice that. */
  drainTimeoutMs?: number;
  /** Body limit, admission slots and waiting line; defaults in ./sizing. */
  limits?: Partial<AdmissionLimits>;
  /** A TLS handshake not finished this long after the connection opened is abandoned. */
  handshakeTimeoutMs?: number;
  /** A connection with no request under way this long (after its handshake or last answer) is closed. */
  idleTimeoutMs?: number;
  /** A request (head and body) not received this long after it began is answered 408. */
  requestTimeoutMs?: number;
  /** A decision that used this much CPU time (ms) is abandoned and answered as drainguard's failure. */
  decisionTimeoutMs?: number;
  /** A decision not finished this long (ms of elapsed time) is abandoned all the same (default: the request timeout). */
  decisionWallTimeoutMs?: number;
  /** A CommonJS module whose `mutate` replaces the core (tests only). */
  coreModule?: string;
  /** A decision worker without a decision this long leaves (default DECISION_WORKER_IDLE_MS, ./decision-pool). */
  decisionWorkerIdleMs?: number;
  /** Reviews up to this many bytes are decided on the main thread; larger ones in a decision worker. */
  inlineDecisionMaxBytes?: number;
  now?: () => Date;
}

/**
 * TLS 1.2 and 1.3 only. On TLS 1.2, only ECDHE key exchange (forward secrecy) with AEAD ciphers
 * (AES-GCM, ChaCha20-Poly1305): no static-RSA key exchange, no CBC. Every TLS 1.3 suite meets both.
 * Go's TLS stack (kube-apiserver, the kubelet's probes, Prometheus) offers all of these.
 */
export const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** The settings every secure context of the server gets, the first and each reloaded one. */
const TLS_SETTINGS = { minVersion: 'TLSv1.2', ciphers: TLS_CIPHERS, honorCipherOrder: true } as const;

/** As long as kube-apiserver's webhook client waits for a handshake (`TLSHandshakeTimeout`, ./connection-guard). */
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;
/** The API server waits at most 30 s for a webhook (`timeoutSeconds` is 1–30): no request may take longer. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
/** A request head must be complete this long after its first byte (and within the request timeout). */
export const HEADERS_TIMEOUT_MS = 10_000;
/**
 * How often Node checks the request and headers timeouts: its default of 30 s let a 30 s request
 * timeout fire up to 60 s after the request began. Checked every second, it fires within a second of
 * its time; the check walks only the connections with a request under way.
 */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;
/**
 * Connections the kernel may hold for the server to accept (capped by net.core.somaxconn, 4096 by
 * default). Node's default of 511 overflowed when a crowd reconnected hundreds of connections at once:
 * the kernel then drops new SYNs, the API server's included, which it retries only after 1 s, 3 s, 7 s.
 * Accepting them all costs little: at the connection limit one is closed at once, before any handshake.
 */
export const LISTEN_BACKLOG = 4096;
/**
 * The largest review decided on the main thread. The decision costs about 20–50 µs per KiB of review
 * (linear: `npm run bench` checks it), so one this size holds the event loop for a few milliseconds at
 * most, while handing a review to a worker and back costs about 200 µs of CPU, more than the decision
 * of an ordinary pod (a Contour pod's review is 3 KiB). Larger reviews go to a decision worker, where
 * they cannot stall `/healthz` or other clients and run under a heap limit and a deadline.
 */
export const INLINE_DECISION_MAX_BYTES = 64 * 1024;
/** CPU time a decision may use (./decision-pool): a 3 MiB review needs about 1 s of it. */
export const DEFAULT_DECISION_TIMEOUT_MS = 10_000;

/**
 * Requests Node's HTTP parser rejects before express sees them (a body cut short of its Content-Length,
 * oversized headers, timeouts) get the same JSON error shape as everything else, not a bare 400.
 * TLS failures (a handshake that failed or timed out) arrive here too: those connections carry no HTTP
 * yet, and an answer written into an unfinished handshake would wait there forever, holding the
 * connection open, so they are closed at once.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const code = error.code ?? '';
  const fromHttp = code.startsWith('HPE_') || code.startsWith('ERR_HTTP_');
  if (!fromHttp || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'request headers are too large']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'request was not received in time']
        : error.code === 'HPE_INVALID_EOF_STATE'
          ? [400, 'request ended before its body was complete (shorter than its Content-Length)']
          : [400, `malformed HTTP request (${error.code ?? error.message})`];
  const body = JSON.stringify({ error: message });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export class WebhookServer {
  readonly metrics = new WebhookMetrics();
  readonly limits: AdmissionLimits;
  private readonly server: Server;
  private readonly pool: DecisionPool;
  private hasCertificate = false;
  private shuttingDown = false;
  private stopped: Promise<void> | undefined;
  private readonly now: () => Date;

  private constructor(private readonly options: WebhookServerOptions) {
    this.now = options.now ?? (() => new Date());
    this.limits = admissionLimits(options.limits);
    const { logger } = options;
    this.pool = new DecisionPool({
      size: this.limits.concurrency,
      config: options.config,
      heapLimitMb: this.limits.workerHeapMb,
      timeoutMs: options.decisionTimeoutMs ?? DEFAULT_DECISION_TIMEOUT_MS,
      wallTimeoutMs: options.decisionWallTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
      ...(options.coreModule ? { coreModule: options.coreModule } : {}),
      ...(options.decisionWorkerIdleMs !== undefined ? { idleMs: options.decisionWorkerIdleMs } : {}),
    });
    const inlineMaxBytes = options.inlineDecisionMaxBytes ?? INLINE_DECISION_MAX_BYTES;
    const core = loadCoreModule(options.coreModule);
    const isDraining = () => this.shuttingDown;
    const batch = new DecisionBatch<Buffer, Decided>({
      decideOne: (body) => decideBody(body, options.config, core),
      budgetMs: DEFAULT_BATCH_BUDGET_MS,
    });
    const slots = new AdmissionSlots(
      new AdmissionLimiter(this.limits.smallConcurrency, this.limits.queueLimit),
      new AdmissionLimiter(this.limits.concurrency, this.limits.queueLimit),
      inlineMaxBytes,
    );
    this.metrics.observeAdmissionLoad(slots);
    this.metrics.observeReadiness(() => this.ready);
    const app = createWebhookApp({ metrics: this.metrics, logger, isReady: () => this.hasCertificate && !this.shuttingDown, isDraining });
    const admit = createAdmissionHandler({
      metrics: this.metrics,
      logger,
      isDraining,
      bodyLimitBytes: this.limits.bodyLimitBytes,
      slots,
      decide: (body) => (body.length <= inlineMaxBytes ? batch.decide(body) : this.pool.decide(body)),
      onBodyReceived: (req) => connections.bodyReceived(req),
    });
    // Admissions skip express: one plain request listener, the admission handler or the app.
    this.server = createServer(
      { ...TLS_SETTINGS, handshakeTimeout: options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS },
      (req, res) => {
        const admission = isAdmissionRequest(req);
        connections.requestStarted(req, res, admission);
        if (admission) admit(req, res);
        else app(req, res);
      },
    );
    const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    // Open connections, idle ones included, at most `maxConnections`, shared fairly between sources; an
    // idle one closed after `idleTimeoutMs` (./connection-guard). Node's own limit would refuse every
    // new connection at the cap, so it is not set.
    const connections = new ConnectionGuard(this.server, {
      capacity: this.limits.maxConnections,
      idleTimeoutMs,
      onRefused: () => this.metrics.recordDroppedConnection(),
      onClosed: (reason) => this.metrics.recordClosedConnection(reason),
    });
    this.metrics.observeConnections(connections);
    this.server.requestTimeout = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.server.headersTimeout = Math.min(HEADERS_TIMEOUT_MS, this.server.requestTimeout);
    // What the Keep-Alive header tells clients; the guard closes idle connections at this time, and Node
    // would a second later (its keepAliveTimeoutBuffer).
    this.server.keepAliveTimeout = idleTimeoutMs;
    this.server.on('clientError', answerClientError);
    this.server.on('tlsClientError', (error: NodeJS.ErrnoException) => {
      const timedOut = error.code === 'ERR_TLS_HANDSHAKE_TIMEOUT';
      this.metrics.recordTlsFailure(timedOut ? 'timeout' : 'protocol');
      logger.debug({ error: error.message }, timedOut ? 'TLS handshake not finished in time; connection closed' : 'TLS handshake failed');
    });
    this.server.prependListener('secureConnection', parseFromStream);
    // `Expect: 100-continue` reaches the app like any request: the app sends `100 Continue` only once it
    // is ready to read the body, after the declared length was checked (413 instead) and a slot is free.
    this.server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => this.server.emit('request', req, res));
  }

  static async start(options: WebhookServerOptions): Promise<WebhookServer> {
    const instance = new WebhookServer(options);
    if (options.certificate) {
      const problem = instance.setCertificate(options.certificate);
      if (problem) throw new Error(`TLS certificate unusable: ${problem}`);
    }
    instance.server.listen({ port: options.port, host: options.host, backlog: LISTEN_BACKLOG });
    await once(instance.server, 'listening');
    const { address, port } = instance.address();
    options.logger.info({ address, port, ready: instance.ready, startupMs: Math.round(process.uptime() * 1000) }, 'listening');
    return instance;
  }

  /** Decision workers running now: started by a large review, gone after a while without one. */
  get decisionWorkers(): number {
    return this.pool.running;
  }

  address(): AddressInfo {
    return this.server.address() as AddressInfo;
  }

  get ready(): boolean {
    return this.hasCertificate && !this.shuttingDown;
  }

  /**
   * Validates the pair, then swaps it in for new connections (open ones keep theirs). Returns a reason
   * when the pair is unusable, in which case the previous certificate stays in use.
   */
  setCertificate(pair: CertificatePair): string | undefined {
    const check = checkKeyPair(pair.cert, pair.key, this.now());
    if (!check.ok) return check.reason;
    const secureOptions = { ...TLS_SETTINGS, cert: pair.cert, key: pair.key };
    try {
      createSecureContext(secureOptions);
    } catch (error) {
      return (error as Error).message;
    }
    this.server.setSecureContext(secureOptions);
    this.hasCertificate = true;
    this.metrics.setCertificateExpiry(check.notAfter);
    this.options.logger.info({ notAfter: check.notAfter.toISOString() }, 'serving certificate loaded');
    return undefined;
  }

  /** Readiness fails at once; the listener closes after the shutdown delay; resolves once all requests finished. */
  shutdown(): Promise<void> {
    this.stopped ??= this.runShutdown();
    return this.stopped;
  }

  private async runShutdown(): Promise<void> {
    const { logger, shutdownDelayMs, drainTimeoutMs = 5_000 } = this.options;
    this.shuttingDown = true;
    logger.info({ shutdownDelayMs }, 'shutting down: readiness failing, still serving');
    // Product behaviour, not test synchronisation: endpoints take a few seconds to leave every kube-proxy/API server.
    await new Promise((resolve) => setTimeout(resolve, shutdownDelayMs));
    logger.info('no longer accepting connections; finishing in-flight requests');
    // Stop accepting, but not through https.Server#close: that also destroys "idle" connections, which
    // include one whose handshake just finished and whose first request is already on the wire. Open
    // connections instead end on their own: every response now says `Connection: close`.
    const closed = new Promise<void>((resolve) => TlsServer.prototype.close.call(this.server, () => resolve()));
    // Bounded anyway: idle keep-alive sockets go after drainTimeout, anything still open after twice that.
    const closeIdle = setTimeout(() => this.server.closeIdleConnections(), drainTimeoutMs);
    const closeAll = setTimeout(() => {
      logger.warn({ drainTimeoutMs }, 'requests still running after the drain timeout; closing their connections');
      this.server.closeAllConnections();
    }, 2 * drainTimeoutMs);
    await closed;
    clearTimeout(closeIdle);
    clearTimeout(closeAll);
    await this.pool.close();
    logger.info('stopped');
  }

  /** Immediate stop for tests and failed starts. */
  async close(): Promise<void> {
    this.shuttingDown = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
    await this.pool.close();
  }
}

/**
 * Makes Node's HTTP parser read this TLS connection through its stream events rather than straight
 * from the TLS handle. On the direct path, pausing a connection (Node does so when a client pipelines
 * requests faster than it reads the answers) does not stop TLS records that were already decrypted from
 * reaching the paused parser, which then fails with HPE_PAUSED and drops the connection with every
 * request still on it. Through the stream, a paused connection buffers instead, and reading resumes
 * once the client has taken its answers. The HTTP server only takes the direct path for a handle not
 * already marked as consumed, so marking it here, before the server sees the connection, is enough.
 */
function parseFromStream(socket: TLSSocket): void {
  const handle = (socket as unknown as { _handle?: { _consumed?: boolean } })._handle;
  if (handle) handle._consumed = true;
}
