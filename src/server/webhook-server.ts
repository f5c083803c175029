/**
 * The HTTPS server around the express app: TLS ≥ 1.2, certificates swapped in place without a restart,
 * readiness, and the shutdown sequence Kubernetes needs (fail readiness, keep serving while endpoints
 * are removed, stop accepting, let in-flight requests finish).
 */
import { createServer, type Server } from 'node:https';
import { Server as TlsServer, createSecureContext } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config/types';
import type { MutateFunction } from '../admission/decide';
import { checkKeyPair } from '../certs/inspect';
import { createWebhookApp } from './app';
import { WebhookMetrics } from './metrics';

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
  bodyLimitBytes?: number;
  core?: MutateFunction;
  now?: () => Date;
}

const TLS_MIN_VERSION = 'TLSv1.2';

/**
 * Requests Node's HTTP parser rejects before express sees them (a body cut short of its Content-Length,
 * oversized headers, timeouts) get the same JSON error shape as everything else, not a bare 400.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
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
  private readonly server: Server;
  private hasCertificate = false;
  private shuttingDown = false;
  private stopped: Promise<void> | undefined;
  private readonly now: () => Date;

  private constructor(private readonly options: WebhookServerOptions) {
    this.now = options.now ?? (() => new Date());
    const app = createWebhookApp({
      config: options.config,
      metrics: this.metrics,
      logger: options.logger,
      isReady: () => this.hasCertificate && !this.shuttingDown,
      isDraining: () => this.shuttingDown,
      ...(options.bodyLimitBytes !== undefined ? { bodyLimitBytes: options.bodyLimitBytes } : {}),
      ...(options.core ? { core: options.core } : {}),
    });
    this.server = createServer({ minVersion: TLS_MIN_VERSION }, app);
    // Bound slow clients: the API server's own webhook timeout is at most 30 s.
    this.server.requestTimeout = 30_000;
    this.server.headersTimeout = 10_000;
    // Longer than clients' idle timeouts (Go's default is 90 s), so the client closes idle connections
    // and never writes a request into one the server has just closed.
    this.server.keepAliveTimeout = 120_000;
    this.server.on('clientError', answerClientError);
  }

  static async start(options: WebhookServerOptions): Promise<WebhookServer> {
    const instance = new WebhookServer(options);
    if (options.certificate) {
      const problem = instance.setCertificate(options.certificate);
      if (problem) throw new Error(`TLS certificate unusable: ${problem}`);
    }
    instance.server.listen(options.port, options.host);
    await once(instance.server, 'listening');
    const { address, port } = instance.address();
    options.logger.info({ address, port, ready: instance.ready, startupMs: Math.round(process.uptime() * 1000) }, 'listening');
    return instance;
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
    const secureOptions = { cert: pair.cert, key: pair.key, minVersion: TLS_MIN_VERSION } as const;
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
    logger.info('stopped');
  }

  /** Immediate stop for tests and failed starts. */
  async close(): Promise<void> {
    this.shuttingDown = true;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await closed;
  }
}
