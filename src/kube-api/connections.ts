/**
 * How the lean Kubernetes client (./client.ts) reaches the API server: a `Transport`. Two exist.
 *
 * `KeptAliveConnections`, for a server reached directly (every cluster without a `proxy-url`): TLS (or
 * TCP, for an `http:` server) connections of this module's own, kept alive, each carrying one request
 * at a time. A request is one write of its head and body; its answer is read as it arrives by the drain
 * program's HTTP/1.1 parser (src/shutdown/http1.ts, which reads Envoy's admin answers the same way),
 * whose limits bound what a head, a chunk-size line or trailers may take. Node's http client does far
 * more per request (a ClientRequest and an IncomingMessage with their streams and events, header
 * objects validated and lower-cased, the agent's pool lookups, per-request timers), which on the
 * reporter's benchmark was the largest part of its CPU per drain (docs/benchmarks.md, "Issue 33").
 *
 * `ProxiedRequests`, for a cluster behind a proxy: Node's http client with the agent client-node made
 * for that proxy (HTTP CONNECT or SOCKS), as before this module existed; a proxied cluster is rare, and
 * the proxy's own hop costs more than the client.
 */
import { request as httpRequest, type Agent, type ClientRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect as tcpConnect, isIP, type Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { HTTP_TOKEN, ProtocolError, ResponseParser, type BodyReader } from '../shutdown/http1';

/** TLS settings of a connection; a change of any of them needs new connections. */
export const TLS_FIELDS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

export type TlsSettings = Partial<Pick<ConnectionOptions, (typeof TLS_FIELDS)[number]>>;

/** What client-node's `applyToHTTPSOptions` fills in for a request. */
export type AppliedOptions = TlsSettings & { headers?: Record<string, unknown>; auth?: string; agent?: unknown };

/** A request as it goes out: credentials applied, the body already text. */
export interface OutgoingRequest {
  method: string;
  /** Origin-form: the server's own path prefix, then the call's path and query. */
  target: string;
  /** Every header but Host, Content-Type and Content-Length; shared by requests (never changed), so a transport may keep what it made of them. */
  headers: Readonly<Record<string, string>>;
  payload: string | undefined;
  /** The payload's type. */
  contentType: string;
}

/** Receives the answer's body as it arrives; `ok` when the status is 2xx. A throw ends the request with that error. */
export type Receive = (chunk: Buffer, ok: boolean) => void;

export interface Transport {
  /**
   * Sends `request`; resolves with the answer's status once its whole body went to `receive`, or with
   * 0 when `signal` ended it. Rejects with an Error saying why no complete answer came (the client
   * names the request), or with what `receive` threw.
   */
  send(request: OutgoingRequest, options: AppliedOptions, receive: Receive, idleTimeoutMs: number, signal: AbortSignal | undefined): Promise<number>;
  /** Closes every connection; a request under way fails. Later requests open new ones. */
  close(): void;
}

/** Idle kept-alive connections close after this long (kube-apiserver keeps an idle one 90 s or more). */
export const IDLE_SOCKET_MS = 30_000;

/** Control characters other than a tab end a header (CR, LF) or are refused by servers (Go's rule, httpguts.ValidHeaderFieldValue). */
const HEADER_VALUE_CONTROL = /[\0-\x08\x0a-\x1f\x7f]/;
/** Origin-form request targets: printable ASCII, no space (callers encode names with `segment`). */
const TARGET = /^\/[\x21-\x7e]*$/;

/**
 * Header lines (`name: value` CRLF each) for a request's head, sent as UTF-8 as Go's client sends
 * them. Throws for a header HTTP cannot carry: credentials from a kubeconfig are the only input from
 * outside.
 */
export function headerLines(headers: Readonly<Record<string, string>>): string {
  let lines = '';
  for (const name in headers) {
    const value = headers[name] as string;
    if (!HTTP_TOKEN.test(name)) throw new Error(`the request header name ${JSON.stringify(name.slice(0, 80))} is not an HTTP token`);
    if (HEADER_VALUE_CONTROL.test(value)) throw new Error(`the request header ${JSON.stringify(name)} holds a line break or another control character, which HTTP cannot carry`);
    lines += `${name}: ${value}\r\n`;
  }
  return lines;
}

/** A request's head and body as one string; `lines` are its headers' (headerLines). Throws for a target HTTP cannot carry. */
export function formatRequest(request: OutgoingRequest, host: string, lines: string): string {
  if (!TARGET.test(request.target)) throw new Error(`the request target ${JSON.stringify(request.target.slice(0, 200))} is not a printable origin-form path`);
  const head = `${request.method} ${request.target} HTTP/1.1\r\nHost: ${host}\r\n${lines}`;
  if (request.payload === undefined) return `${head}\r\n`;
  return `${head}Content-Type: ${request.contentType}\r\nContent-Length: ${Buffer.byteLength(request.payload)}\r\n\r\n${request.payload}`;
}

function sameTls(a: TlsSettings, b: TlsSettings): boolean {
  return TLS_FIELDS.every((field) => {
    const x = a[field] as unknown;
    const y = b[field] as unknown;
    return Buffer.isBuffer(x) && Buffer.isBuffer(y) ? x.equals(y) : x === y;
  });
}

function tlsSettingsOf(options: AppliedOptions): TlsSettings {
  const settings: TlsSettings = {};
  for (const field of TLS_FIELDS) if (options[field] !== undefined) (settings as Record<string, unknown>)[field] = options[field];
  return settings;
}

/**
 * The connection ended, or failed, before a single byte of the answer arrived. On a connection that
 * had carried requests before, the likeliest cause is the server closing it as idle just as this
 * request was written: see `KeptAliveConnections.send` for when it is sent again.
 */
class UnansweredError extends Error {}

/** One request on a connection, until its answer is complete or it failed. Reads the body for the parser. */
class Exchange implements BodyReader<void> {
  readonly parser: ResponseParser<void> = new ResponseParser<void>(this);
  received = 0;
  settled = false;
  private receiverError: { error: unknown } | undefined;

  constructor(
    readonly receive: Receive,
    /** `reusable`: the connection may carry the next request. */
    readonly done: (reusable: boolean) => void,
    readonly fail: (error: unknown) => void,
  ) {}

  push(bytes: Uint8Array): boolean {
    const status = this.parser.status;
    try {
      // The parser hands over pieces of the socket's Buffers (subarray keeps the class).
      this.receive(bytes as Buffer, status >= 200 && status < 300);
    } catch (error) {
      this.receiverError = { error };
      throw error;
    }
    return true;
  }

  finish(): void {}

  data(chunk: Buffer): void {
    this.received += chunk.length;
    try {
      if (this.parser.feed(chunk)) this.done(this.parser.used === chunk.length && this.parser.keepAlive);
    } catch (error) {
      this.failParsing(error);
    }
  }

  end(): void {
    if (this.received === 0) return this.fail(new UnansweredError('the API server closed the connection without answering'));
    try {
      this.parser.end();
      this.done(false);
    } catch (error) {
      this.failParsing(error);
    }
  }

  /** What the receiver threw, as it threw it; the parser's errors say the answer was unreadable. */
  private failParsing(error: unknown): void {
    if (this.receiverError?.error === error) return this.fail(error);
    this.fail(error instanceof ProtocolError ? new Error(`unreadable answer: ${error.message}`) : error);
  }
}

/** A kept-alive connection: one exchange at a time; bytes that arrive while it is idle end it. */
class Connection {
  exchange: Exchange | undefined;
  /** It carried a complete exchange before (a failure without an answer may then be its idle close). */
  reused = false;

  constructor(
    readonly socket: Socket,
    readonly tls: TlsSettings,
    onClose: (connection: Connection) => void,
  ) {
    socket.setNoDelay(true);
    socket.setKeepAlive(true, IDLE_SOCKET_MS);
    socket.on('data', (chunk: Buffer) => (this.exchange ? this.exchange.data(chunk) : socket.destroy()));
    socket.on('end', () => (this.exchange ? this.exchange.end() : socket.destroy()));
    socket.on('timeout', () => (this.exchange ? this.exchange.fail(new Error(`nothing received for ${socket.timeout} ms`)) : socket.destroy()));
    socket.on('error', (error) => {
      const exchange = this.exchange;
      if (exchange === undefined) return;
      const code = (error as { code?: unknown }).code;
      exchange.fail(exchange.received === 0 && (code === 'ECONNRESET' || code === 'EPIPE') ? new UnansweredError(`the API server closed the connection without answering (${code})`) : error);
    });
    socket.on('close', () => {
      this.exchange?.fail(this.exchange.received === 0 ? new UnansweredError('the API server closed the connection without answering') : new Error('the connection closed before the answer was complete'));
      onClose(this);
    });
  }
}

/** Connections of this client's own to a server reached directly (the module's comment). */
export class KeptAliveConnections implements Transport {
  private readonly idle: Connection[] = [];
  private readonly open = new Set<Connection>();
  private tls: TlsSettings | undefined;
  private optionsSeen: AppliedOptions | undefined;
  private readonly host: string;
  private readonly port: number;
  private readonly secure: boolean;
  /** `host[:port]` as the Host header carries it. */
  private readonly hostHeader: string;
  /** The header lines of the last headers object sent (the client's are the same object until its credentials change). */
  private lines: { headers: Readonly<Record<string, string>>; text: string } | undefined;

  constructor(server: URL) {
    this.secure = server.protocol === 'https:';
    // An IPv6 literal is bracketed in the URL and the Host header, bare for connect().
    this.host = server.hostname.replace(/^\[|\]$/g, '');
    this.port = Number(server.port) || (this.secure ? 443 : 80);
    this.hostHeader = server.host;
  }

  /**
   * A GET on a connection that had carried requests before and ended (or was reset) before any byte
   * of its answer is sent once more, on a new connection: the server most likely closed it as idle
   * just as the request went out, and a GET changes nothing even if it did arrive (Go's client does the
   * same for idempotent requests). Any other method fails with that reason: a POST, PUT, PATCH or
   * DELETE that reached the server may have been carried out, and repeating it is for its caller to
   * decide (the reporter's Events have fixed names, so its retry gets a 409 for one that was created).
   */
  async send(request: OutgoingRequest, options: AppliedOptions, receive: Receive, idleTimeoutMs: number, signal: AbortSignal | undefined): Promise<number> {
    if (this.lines?.headers !== request.headers) this.lines = { headers: request.headers, text: headerLines(request.headers) };
    const wire = formatRequest(request, this.hostHeader, this.lines.text);
    const connection = this.take(options);
    try {
      return await this.exchange(connection, wire, receive, idleTimeoutMs, signal);
    } catch (error) {
      if (!(error instanceof UnansweredError) || !connection.reused) throw error;
      if (request.method !== 'GET') {
        throw new Error(`${error.message} on a kept-alive connection (likely closed as idle just as the request was sent); not sent again, since the server may have carried it out`);
      }
      return this.exchange(this.connect(connection.tls), wire, receive, idleTimeoutMs, signal);
    }
  }

  close(): void {
    for (const connection of this.open) {
      // Failed as closed on purpose, never as a connection lost (which a GET would be sent again for).
      connection.exchange?.fail(new Error('the client was closed'));
      connection.socket.destroy();
    }
  }

  private exchange(connection: Connection, wire: string, receive: Receive, idleTimeoutMs: number, signal: AbortSignal | undefined): Promise<number> {
    const { socket } = connection;
    return new Promise<number>((resolve, reject) => {
      const settle = (reusable: boolean): boolean => {
        if (exchange.settled) return false;
        exchange.settled = true;
        signal?.removeEventListener('abort', abort);
        connection.exchange = undefined;
        if (reusable) this.release(connection);
        else socket.destroy();
        return true;
      };
      // Ended on purpose (`signal`): resolved as if the server had ended it.
      const abort = () => settle(false) && resolve(0);
      const exchange = new Exchange(
        receive,
        (reusable) => settle(reusable) && resolve(exchange.parser.status),
        (error) => settle(false) && (signal?.aborted ? resolve(0) : reject(error)),
      );
      if (signal?.aborted) return abort();
      connection.exchange = exchange;
      signal?.addEventListener('abort', abort, { once: true });
      if (socket.timeout !== idleTimeoutMs) socket.setTimeout(idleTimeoutMs);
      socket.write(wire);
    });
  }

  /** An idle connection made with the TLS settings of `options` (the one used last), or a new one; idle ones of other settings are closed. */
  private take(options: AppliedOptions): Connection {
    // The client passes the same options object until it applies its credentials again.
    if (this.tls === undefined || options !== this.optionsSeen) {
      const tls = tlsSettingsOf(options);
      if (this.tls === undefined || !sameTls(this.tls, tls)) {
        // Connections of the old settings finish what they carry and are not reused.
        for (const stale of this.idle.splice(0)) stale.socket.destroy();
        this.tls = tls;
      }
      this.optionsSeen = options;
    }
    for (let reused = this.idle.pop(); reused !== undefined; reused = this.idle.pop()) {
      // Ended by the server while idle, and noticed: never carries a request.
      if (reused.socket.readableEnded || reused.socket.destroyed || !reused.socket.writable) {
        reused.socket.destroy();
        continue;
      }
      reused.socket.ref();
      return reused;
    }
    return this.connect(this.tls);
  }

  private connect(tls: TlsSettings): Connection {
    const { host, port } = this;
    // SNI as node:https sends it: the host name, never an IP address.
    const socket = this.secure ? tlsConnect({ host, port, ...tls, ...(tls.servername === undefined && isIP(host) === 0 ? { servername: host } : {}) }) : tcpConnect({ host, port });
    const connection = new Connection(socket, tls, (closed) => {
      this.open.delete(closed);
      const index = this.idle.indexOf(closed);
      if (index !== -1) this.idle.splice(index, 1);
    });
    this.open.add(connection);
    return connection;
  }

  /**
   * Back to the idle connections (the most recent is used first), where it never keeps the process
   * alive. Closed once unused for IDLE_SOCKET_MS, or for its last request's timeout when that is
   * shorter: the socket's one timeout is then left as it is, not set twice per request.
   */
  private release(connection: Connection): void {
    const { socket } = connection;
    if (socket.destroyed || connection.tls !== this.tls) return void socket.destroy();
    connection.reused = true;
    if ((socket.timeout ?? 0) === 0 || (socket.timeout as number) > IDLE_SOCKET_MS) socket.setTimeout(IDLE_SOCKET_MS);
    socket.unref();
    this.idle.push(connection);
  }
}

/** Node's http client with the agent client-node made for the cluster's proxy (the module's comment). */
export class ProxiedRequests implements Transport {
  private readonly secure: boolean;
  private readonly agents = new Set<Agent>();

  constructor(private readonly server: URL) {
    this.secure = server.protocol === 'https:';
  }

  send(request: OutgoingRequest, options: AppliedOptions, receive: Receive, idleTimeoutMs: number, signal: AbortSignal | undefined): Promise<number> {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.payload !== undefined) {
      headers['Content-Type'] = request.contentType;
      headers['Content-Length'] = Buffer.byteLength(request.payload);
    }
    const agent = options.agent as Agent;
    this.agents.add(agent);
    const target = {
      protocol: this.server.protocol,
      hostname: this.server.hostname.replace(/^\[|\]$/g, ''),
      port: this.server.port,
      path: request.target,
      method: request.method,
      headers,
      agent,
      ...(signal ? { signal } : {}),
    };
    return new Promise<number>((resolve, reject) => {
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        outcome();
      };
      // Ended on purpose (`signal`): resolved as if the server had ended it, whatever error that raised.
      const fail = (error: unknown) => settle(() => (signal?.aborted ? resolve(0) : reject(error)));
      const req: ClientRequest = (this.secure ? httpsRequest : httpRequest)(target, (res: IncomingMessage) => {
        const status = res.statusCode ?? 0;
        const ok = status >= 200 && status < 300;
        res.on('data', (chunk: Buffer) => {
          try {
            receive(chunk, ok);
          } catch (error) {
            settle(() => reject(error));
            req.destroy();
          }
        });
        res.on('end', () => settle(() => resolve(status)));
        res.on('close', () => {
          if (!res.complete) fail(new Error('the answer was cut short'));
        });
        res.on('error', fail);
      });
      req.setTimeout(idleTimeoutMs, () => req.destroy(new Error(`nothing received for ${idleTimeoutMs} ms`)));
      req.on('error', fail);
      req.end(request.payload);
    });
  }

  close(): void {
    // client-node caches its proxy agent per cluster and user: its idle connections close, the agent stays usable.
    for (const agent of this.agents) agent.destroy();
  }
}
