/**
 * A UDP listener with Envoy's UDP proxy filter, for the admin simulator: a real UDP socket whose
 * sessions are counted in `udp.<stat_prefix>.downstream_sess_active` as Envoy counts them (envoyproxy/envoy
 * `source/extensions/filters/udp/udp_proxy/udp_proxy_filter.cc`):
 *
 * - A datagram from a client address without a session creates one (`downstream_sess_total` and
 *   `downstream_sess_active` go up) and is proxied; the upstream's answer comes back to the client.
 *   The simulated upstream answers each datagram with the same bytes.
 * - Every datagram, either way, restarts the session's idle timer (`resetIdleTimer`); when it fires the
 *   session ends (`idle_timeout` goes up, `downstream_sess_active` down). A failed health check or a
 *   drain ends none: a UDP session has nothing to drain-close. The default idle timeout is 60 s
 *   (`idle_timeout` of `UdpProxyConfig`).
 * - The listener stopping is the one other end: `ActiveRawUdpListener::shutdownListener`
 *   (`source/server/active_udp_listener.h`) deletes the read filters, the UDP proxy with its sessions.
 *   drainguard's drain never stops listeners on Envoy 1.28 and later (`skip_exit`).
 * - The listener itself has listener gauges like any other (`listener.<address>.downstream_cx_active`
 *   and its per-worker copies), always 0: a UDP listener has no connections.
 */
import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { performance } from 'node:perf_hooks';

export interface UdpProxySpec {
  /** The UDP proxy's `stat_prefix`: its gauges are `udp.<statPrefix>.…`. */
  statPrefix: string;
  /** `idle_timeout`; default 60 s, Envoy's. */
  idleTimeoutMs?: number;
}

/** Envoy's default `idle_timeout` of a UDP proxy session. */
export const DEFAULT_UDP_IDLE_TIMEOUT_MS = 60_000;

/** One session, for tests to check when and why it ended (performance.now() times). */
export interface UdpSession {
  client: string;
  openedAt: number;
  /** The last datagram either way: the idle timer runs from here. */
  lastDatagramAt: number;
  endedAt?: number;
  endedBy?: 'idle-timeout' | 'listener-stopped';
}

export class SimulatedUdpProxy {
  readonly statPrefix: string;
  readonly idleTimeoutMs: number;
  /** Idle timer per client address (`ip:port`): one per session. */
  private readonly sessions = new Map<string, { timer: NodeJS.Timeout; session: UdpSession }>();
  /** Every session, oldest first. */
  readonly history: UdpSession[] = [];
  /** `downstream_sess_total`, `idle_timeout`. */
  sessionsTotal = 0;
  idleTimeouts = 0;
  /** performance.now() when the last session ended, if one has. */
  lastSessionEndedAt: number | undefined;
  private accepting = true;

  private constructor(
    spec: UdpProxySpec,
    readonly socket: Socket,
    readonly port: number,
    private readonly changed: () => void,
  ) {
    this.statPrefix = spec.statPrefix;
    this.idleTimeoutMs = spec.idleTimeoutMs ?? DEFAULT_UDP_IDLE_TIMEOUT_MS;
    socket.on('message', (message, peer) => this.onDatagram(message, peer));
  }

  static async start(spec: UdpProxySpec, changed: () => void): Promise<SimulatedUdpProxy> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(0, '127.0.0.1', () => resolve());
    });
    socket.on('error', () => undefined);
    return new SimulatedUdpProxy(spec, socket, socket.address().port, changed);
  }

  /** `downstream_sess_active`. */
  get activeSessions(): number {
    return this.sessions.size;
  }

  /** The listener's stat name segment: its address, as Envoy names a listener without a stat_prefix. */
  get listenerStatName(): string {
    return `127.0.0.1_${this.port}`;
  }

  private onDatagram(message: Buffer, peer: RemoteInfo): void {
    if (!this.accepting) return;
    const key = `${peer.address}:${peer.port}`;
    const isNew = !this.sessions.has(key);
    if (isNew) this.sessionsTotal++;
    this.resetIdleTimer(key, isNew);
    // The upstream's answer: it restarts the idle timer too (`onReadReady`), at the same moment here.
    this.socket.send(message, peer.port, peer.address, () => undefined);
    if (isNew) this.changed();
  }

  private resetIdleTimer(key: string, isNew: boolean): void {
    const now = performance.now();
    const known = this.sessions.get(key);
    clearTimeout(known?.timer);
    const session = known?.session ?? { client: key, openedAt: now, lastDatagramAt: now };
    if (isNew) this.history.push(session);
    session.lastDatagramAt = now;
    const timer = setTimeout(() => {
      this.sessions.delete(key);
      this.idleTimeouts++;
      this.end(session, 'idle-timeout');
    }, this.idleTimeoutMs);
    this.sessions.set(key, { timer, session });
  }

  private end(session: UdpSession, by: NonNullable<UdpSession['endedBy']>): void {
    session.endedAt = performance.now();
    session.endedBy = by;
    this.lastSessionEndedAt = session.endedAt;
    this.changed();
  }

  /** The listener stops: its UDP proxy goes, and its sessions with it. */
  stopListening(): void {
    if (!this.accepting) return;
    this.accepting = false;
    const ended = [...this.sessions.values()];
    this.sessions.clear();
    this.socket.close();
    for (const { timer, session } of ended) {
      clearTimeout(timer);
      this.end(session, 'listener-stopped');
    }
  }
}
