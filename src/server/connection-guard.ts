/**
 * The server's connections, counted and bounded (issue 20): at most `capacity` open, shared fairly
 * between sources (./connection-table decides who goes at the limit), and none kept that sends nothing.
 * A connection is counted from the moment it is accepted, before its TLS handshake, so connections
 * that never finish one count too (Node's `handshakeTimeout` ends those).
 *
 * Idle: a connection with no request under way (after its handshake, or after its last answer) must
 * bring a complete request head within `idleTimeoutMs`, or it is closed. That one bound covers a client
 * that sends nothing after the handshake, one that dribbles a head, and an idle keep-alive connection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Server } from 'node:https';
import type { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { ConnectionTable, type ConnectionState, type TrackedConnection } from './connection-table';

/**
 * How long a connection may stay idle. kube-apiserver calls webhooks over HTTP/1.1 only
 * (staging/src/k8s.io/apiserver/pkg/util/webhook/client.go, `cfg.NextProtos = []string{"http/1.1"}`,
 * kubernetes/kubernetes@05c351a9037bd79bf88c56171a951c3097b658da), through client-go's transport
 * (staging/src/k8s.io/client-go/transport/cache.go, kubernetes/kubernetes@0036586379f5b9958017200798c4bb7ae7d85519:
 * `TLSHandshakeTimeout: 10 * time.Second`, `MaxIdleConnsPerHost: 25`), whose `IdleConnTimeout` is
 * net/http's default of 90 s (staging/src/k8s.io/apimachinery/pkg/util/net/http.go, `SetOldTransportDefaults`,
 * kubernetes/kubernetes@0072a2a3c378142e8ee4095d76e35a9b8c1352fe). It writes a request the moment it
 * dials, so a connection of the API server is never silent after its handshake for more than a round
 * trip. It reuses idle connections for up to 90 s, most recently used first, and drops one from its pool
 * as soon as it reads the server's close, which a Go transport always waits for in the background. A
 * server close can only hurt a request written in the same instant (Go does not retry a POST whose
 * bytes went out), so the server closes idle connections early, at 5 s: long before any request of the
 * API server could be waiting to reuse them 90 s on, at a moment its client is not using them (an
 * idle one goes), and with the Keep-Alive header saying so. The cost is one TLS handshake after every 5 s
 * without a review.
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 5_000;

export type ClosedReason = 'evicted' | 'idle-timeout';

export interface ConnectionGuardOptions {
  capacity: number;
  idleTimeoutMs: number;
  /** A connection refused at the limit (nothing else could go). */
  onRefused: () => void;
  /** A connection the server closed: evicted at the limit, or idle past the bound. */
  onClosed: (reason: ClosedReason) => void;
}

interface Connection extends TrackedConnection {
  readonly socket: Socket;
  tls: TLSSocket | undefined;
  /** Requests whose head arrived and whose answer is not finished. */
  inFlight: number;
  /** Of those, admissions whose body has not been read yet. */
  unread: number;
  idleTimer: NodeJS.Timeout | undefined;
  open: boolean;
}

/** The client's address, one source however it is written (an IPv4 client on a dual-stack socket). */
export function sourceOf(socket: Socket): string {
  const address = socket.remoteAddress ?? 'unknown';
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
}

/** A connection's TCP socket and its TLS socket have the same peer: their key finds one from the other. */
function peerKey(socket: Socket): string {
  return `${socket.remoteAddress}|${socket.remotePort}`;
}

export class ConnectionGuard {
  private readonly table: ConnectionTable<Connection>;
  private readonly accepted = new Map<string, Connection>();
  private readonly secured = new WeakMap<Socket, Connection>();
  private readonly unreadBodies = new WeakSet<IncomingMessage>();

  constructor(
    server: Server,
    private readonly options: ConnectionGuardOptions,
  ) {
    this.table = new ConnectionTable(options.capacity);
    // Before the TLS server wraps the socket: a refused connection costs no handshake.
    server.prependListener('connection', (socket: Socket) => this.accept(socket));
    server.prependListener('secureConnection', (socket: TLSSocket) => this.secure(socket));
  }

  /** Connections open, by state (for the metrics). */
  count(state: ConnectionState): number {
    return this.table.count(state);
  }

  /** A request's head arrived; `bodyToRead`: an admission, whose handler calls `bodyReceived`. */
  requestStarted(req: IncomingMessage, res: ServerResponse, bodyToRead: boolean): void {
    const connection = this.secured.get(req.socket);
    if (connection === undefined) return;
    connection.inFlight += 1;
    if (bodyToRead) {
      connection.unread += 1;
      this.unreadBodies.add(req);
    }
    this.update(connection);
    res.once('close', () => {
      this.bodyDone(connection, req);
      connection.inFlight -= 1;
      this.update(connection);
    });
  }

  /** The admission's body is read: its connection is no longer receiving. */
  bodyReceived(req: IncomingMessage): void {
    const connection = this.secured.get(req.socket);
    if (connection !== undefined && this.bodyDone(connection, req)) this.update(connection);
  }

  private accept(socket: Socket): void {
    const connection: Connection = { source: sourceOf(socket), state: 'idle', socket, tls: undefined, inFlight: 0, unread: 0, idleTimer: undefined, open: true };
    const admission = this.table.admit(connection);
    if (!admission.admitted) {
      this.options.onRefused();
      socket.destroy();
      return;
    }
    if (admission.evicted) this.close(admission.evicted, 'evicted');
    const key = peerKey(socket);
    this.accepted.set(key, connection);
    socket.once('close', () => {
      connection.open = false;
      clearTimeout(connection.idleTimer);
      this.table.remove(connection);
      if (this.accepted.get(key) === connection) this.accepted.delete(key);
    });
  }

  private secure(socket: TLSSocket): void {
    const connection = this.accepted.get(peerKey(socket));
    if (connection === undefined || !connection.open) return;
    connection.tls = socket;
    this.secured.set(socket, connection);
    this.startIdleTimer(connection);
  }

  private bodyDone(connection: Connection, req: IncomingMessage): boolean {
    if (!this.unreadBodies.delete(req)) return false;
    connection.unread -= 1;
    return true;
  }

  private update(connection: Connection): void {
    const state: ConnectionState = connection.inFlight === 0 ? 'idle' : connection.unread > 0 ? 'receiving' : 'answering';
    if (state === connection.state) return;
    this.table.setState(connection, state);
    if (state === 'idle') this.startIdleTimer(connection);
    else clearTimeout(connection.idleTimer);
  }

  private startIdleTimer(connection: Connection): void {
    clearTimeout(connection.idleTimer);
    connection.idleTimer = setTimeout(() => {
      // Read whatever arrived while this process was busy before judging the connection: a request
      // head waiting in the socket is parsed in the poll phase, which runs before setImmediate.
      setImmediate(() => {
        if (connection.open && connection.state === 'idle') this.close(connection, 'idle-timeout');
      });
    }, this.options.idleTimeoutMs);
    connection.idleTimer.unref();
  }

  private close(connection: Connection, reason: ClosedReason): void {
    this.table.remove(connection);
    connection.open = false;
    clearTimeout(connection.idleTimer);
    this.options.onClosed(reason);
    (connection.tls ?? connection.socket).destroy();
  }
}
