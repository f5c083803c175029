/**
 * An Envoy admin API simulator, faithful to docs/design.md, "Envoy's admin API", for testing `envoy-shutdown` without an Envoy
 * binary. It serves the admin API over a unix socket and/or loopback TCP and owns real listener
 * sockets: connections that tests open to them are counted into the listener gauges exactly as Envoy
 * would count them (per listener, per worker, and the admin listener counting admin connections,
 * including the poller's own), and datagrams sent to its UDP proxies open sessions that end at their
 * idle timeout (envoy/udp-proxy.ts). It answers as the release it plays: its `/server_info` version
 * decides what `/drain_listeners` does (envoy/drain-manager.ts, 1.40's semantics beside the older ones).
 *
 * Every admin request is recorded (method, raw path, time) so tests can assert call order and timing,
 * and the simulator emits `change` on every request and connection change so tests wait on conditions
 * instead of sleeping. Faults are switched on through `faults` at any time.
 */
import { EventEmitter } from 'node:events';
import { rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { SimulatedDrainManager, type DrainDirection, type RuntimeGuards, type TrafficDirection } from './envoy/drain-manager';
import { buildServerInfo, compareVersion, parseVersion, type EnvoyState, type SimulatedVersion } from './envoy/server-info';
import { renderStats, sanitizeStatsName, type StatsModel } from './envoy/stats';
import { SimulatedUdpProxy, type UdpProxySpec } from './envoy/udp-proxy';

export interface ListenerSpec {
  /**
   * What names the listener in its stats (Envoy's `stat_prefix`, or its address `<ip>:<port>`), made a stat
   * name segment as Envoy makes it (`sanitizeStatsName`: `[::]:8443` is `[__]_8443`); default `127.0.0.1_<port>`.
   */
  statName?: string;
  /** Where the listener accepts connections; default 127.0.0.1 on a free port. */
  address?: { host: string; port: number };
  /** `traffic_direction`: `inboundonly` stops (and from 1.34 drains) only INBOUND listeners. Default UNSPECIFIED. */
  direction?: TrafficDirection;
  /**
   * `drain_type`: with DEFAULT (Envoy's default) a failed health check alone drain-closes the
   * listener's connections; MODIFY_ONLY ones learn only of a drain sequence.
   */
  drainType?: 'DEFAULT' | 'MODIFY_ONLY';
}

export interface SimulatorOptions {
  /** Envoy release to imitate, `x.y.z`; default 1.31.2. Drives the version matrix. */
  version?: string;
  state?: EnvoyState;
  /** Serve the admin API on this unix socket path. */
  unixSocketPath?: string;
  /** Serve the admin API on 127.0.0.1 (random port); default true when no unix socket is given. */
  tcp?: boolean;
  /** Serve the admin API over TCP at this address instead of 127.0.0.1 on a random port (an Envoy in a pod's network namespace). */
  tcpAddress?: { host: string; port: number };
  listeners?: ListenerSpec[];
  /** `--concurrency`: connections are spread round robin over this many workers. Default 2. */
  workers?: number;
  /** `--drain-time-s`: after a graceful drain starts, listeners stop after this long unless skip_exit. */
  drainTimeS?: number;
  drainStrategy?: 'Gradual' | 'Immediate';
  /**
   * Listeners that exist only in the stats (no socket, never a connection): `idle_listener_<n>`, each
   * with its per-worker copies. For an Envoy with tens of thousands of listeners.
   */
  idleListeners?: number;
  /** UDP listeners with a UDP proxy each: real UDP sockets whose sessions end at their idle timeout. */
  udpProxies?: UdpProxySpec[];
  /** Runtime guards set on the simulated Envoy (only those that change the admin API are modelled). */
  runtimeGuards?: RuntimeGuards;
}

export interface RecordedRequest {
  method: string;
  /** The path as sent, query string included (before `//` normalisation). */
  path: string;
  /** performance.now() of the test process when the request arrived. */
  at: number;
  /**
   * performance.now() when the whole answer was handed to the socket (`finish`), so tests can order the
   * program's retries against the answers it had; absent while unanswered (or never answered: a hang, a reset).
   */
  answeredAt?: number;
}

/** A fault applies to requests whose normalised path matches `paths` (all requests when absent). */
interface PathFault {
  paths?: RegExp;
}

export interface Faults {
  /** Accept the connection and read the request, but never answer. */
  hang?: PathFault;
  /** Read the request, then close the connection before any byte of an answer. */
  reset?: PathFault;
  /** Answer only after `ms`. */
  slow?: PathFault & { ms: number };
  /** Answer matching requests with this status instead (e.g. 503, 404, 405); the first match wins. */
  errors?: Array<PathFault & { code: number; body?: string }>;
  /** A stats matcher (`stats_config.stats_matcher`) rejects all `listener.*` stats. */
  statsHidden?: boolean;
  /** Successive stats answers report these totals on the first listener instead of the real count. */
  bouncingCounts?: number[];
  /**
   * `/stats` answers are padded to about `bytes` bytes with other gauges sorted before the listener
   * ones (still valid JSON), streamed as they are sent; `Infinity`: the answer never ends.
   */
  hugeStats?: { bytes: number };
}

interface SimulatedListener {
  statName: string;
  direction: TrafficDirection;
  drainType: 'DEFAULT' | 'MODIFY_ONLY';
  server: NetServer;
  port: number;
  /** Open connections per worker index. */
  perWorker: number[];
  accepting: boolean;
  sockets: Set<Socket>;
}

const MUTATING_PATHS = new Set(['/healthcheck/fail', '/healthcheck/ok', '/drain_listeners', '/quitquitquit']);
const KNOWN_GET_PATHS = new Set(['/server_info', '/ready', '/stats']);
/** Envoy answers a GET on a mutating endpoint with 405 since this release, 400 before (docs/design.md, "Envoy's admin API"). */
const METHOD_NOT_ALLOWED_SINCE: SimulatedVersion = { major: 1, minor: 23, patch: 0 };

export class EnvoyAdminSimulator extends EventEmitter {
  readonly requests: RecordedRequest[] = [];
  faults: Faults = {};
  state: EnvoyState;
  readonly version: SimulatedVersion;
  /** Envoy's drain manager and `/drain_listeners` handler, as the played release has them. */
  readonly drainManager: SimulatedDrainManager;
  /** True once every listener has stopped accepting (drain timer ran out, or a non-graceful drain of all). */
  listenersStopped = false;
  quitRequested = false;

  private readonly options: SimulatorOptions;
  private readonly envoyListeners: SimulatedListener[] = [];
  readonly udpProxies: SimulatedUdpProxy[] = [];
  private readonly adminServers: HttpServer[] = [];
  private readonly adminSockets = new Set<Socket>();
  private readonly startedAt = performance.now();
  private nextWorker = 0;
  private bounceIndex = 0;
  private dead = false;
  adminPort: number | undefined;

  private constructor(options: SimulatorOptions) {
    super();
    this.options = options;
    this.state = options.state ?? 'LIVE';
    this.version = parseVersion(options.version ?? '1.31.2');
    this.drainManager = new SimulatedDrainManager(this.version, options.drainTimeS ?? 600, options.runtimeGuards ?? {}, (direction) => this.stopListeners(direction), () => this.emit('drain-sequence-ended'));
  }

  /** The first drain sequence `/drain_listeners?graceful` started, if one did. */
  get gracefulDrain() {
    return this.drainManager.sequences.find((sequence) => sequence.graceful);
  }

  static async start(options: SimulatorOptions = {}): Promise<EnvoyAdminSimulator> {
    const simulator = new EnvoyAdminSimulator(options);
    await simulator.listen();
    return simulator;
  }

  /** The `--admin` value that reaches this simulator (unix socket preferred). */
  get adminAddress(): string {
    if (this.options.unixSocketPath) return `unix:${this.options.unixSocketPath}`;
    return `http://${this.options.tcpAddress?.host ?? '127.0.0.1'}:${this.adminPort}`;
  }

  get listenerPorts(): number[] {
    return this.envoyListeners.map((l) => l.port);
  }

  listenerStatNames(): string[] {
    return this.envoyListeners.map((l) => l.statName);
  }

  /** Open client connections per listener, as the gauges report them. */
  activeConnections(statName?: string): number {
    return this.envoyListeners
      .filter((l) => statName === undefined || l.statName === statName)
      .reduce((sum, l) => sum + l.perWorker.reduce((a, b) => a + b, 0), 0);
  }

  adminConnections(): number {
    return this.adminSockets.size;
  }

  /**
   * Open connections Envoy has begun to drain-close (`Connection: close`, GOAWAY): those of a DEFAULT
   * listener once the health check failed, and those of a listener a drain sequence covers.
   */
  connectionsToldToDrain(statName?: string): number {
    const failed = this.state === 'DRAINING';
    return this.envoyListeners
      .filter((l) => statName === undefined || l.statName === statName)
      .filter((l) => (failed && l.drainType === 'DEFAULT') || this.drainManager.covers(l.direction))
      .reduce((sum, l) => sum + l.perWorker.reduce((a, b) => a + b, 0), 0);
  }

  /** Open UDP sessions (`downstream_sess_active`), of one UDP proxy or of all. */
  udpSessions(statPrefix?: string): number {
    return this.udpProxies.filter((p) => statPrefix === undefined || p.statPrefix === statPrefix).reduce((sum, p) => sum + p.activeSessions, 0);
  }

  /** The port of a UDP proxy's listener (the first one by default). */
  udpPort(statPrefix?: string): number {
    const proxy = this.udpProxies.find((p) => statPrefix === undefined || p.statPrefix === statPrefix);
    if (!proxy) throw new Error(`simulator: no UDP proxy ${statPrefix ?? ''}`);
    return proxy.port;
  }

  /** Resolves once `predicate` holds; re-checked on every request and connection change. */
  waitFor(predicate: () => boolean, timeoutMs = 20000): Promise<void> {
    if (predicate()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        reject(new Error('simulator: condition not reached in time'));
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.off('change', check);
      };
      this.on('change', check);
    });
  }

  /** Resolves with the first recorded request (past or future) whose path matches. */
  async waitForRequest(path: RegExp, method?: string, timeoutMs?: number): Promise<RecordedRequest> {
    const find = () => this.requests.find((r) => path.test(r.path) && (method === undefined || r.method === method));
    await this.waitFor(() => find() !== undefined, timeoutMs);
    return find() as RecordedRequest;
  }

  /** Envoy dies: the admin socket disappears, and every listener and connection goes with it. */
  async die(): Promise<void> {
    if (this.dead) return;
    this.dead = true;
    this.drainManager.stop();
    for (const socket of this.adminSockets) socket.destroy();
    for (const proxy of this.udpProxies) proxy.stopListening();
    for (const listener of this.envoyListeners) for (const socket of listener.sockets) socket.destroy();
    await Promise.all([
      ...this.adminServers.map((server) => closeServer(server)),
      ...this.envoyListeners.filter((l) => l.accepting).map((l) => closeServer(l.server)),
    ]);
    if (this.options.unixSocketPath) rmSync(this.options.unixSocketPath, { force: true });
    this.emit('change');
  }

  async stop(): Promise<void> {
    await this.die();
  }

  private async listen(): Promise<void> {
    for (const spec of this.options.listeners ?? [{}]) await this.openListener(spec);
    for (const spec of this.options.udpProxies ?? []) this.udpProxies.push(await SimulatedUdpProxy.start(spec, () => this.emit('change')));
    const handler = (req: IncomingMessage, res: ServerResponse) => this.handle(req, res);
    if (this.options.unixSocketPath) {
      rmSync(this.options.unixSocketPath, { force: true });
      await this.openAdminServer(handler, (server, ready) => server.listen(this.options.unixSocketPath, ready));
    }
    if (this.options.tcpAddress || (this.options.tcp ?? !this.options.unixSocketPath)) {
      const { host, port } = this.options.tcpAddress ?? { host: '127.0.0.1', port: 0 };
      const server = await this.openAdminServer(handler, (s, ready) => s.listen(port, host, ready));
      this.adminPort = (server.address() as AddressInfo).port;
    }
  }

  private async openAdminServer(
    handler: (req: IncomingMessage, res: ServerResponse) => void,
    bind: (server: HttpServer, ready: () => void) => void,
  ): Promise<HttpServer> {
    const server = createHttpServer(handler);
    // Envoy's admin listener counts its connections like any listener (docs/design.md, "Envoy's admin API").
    server.on('connection', (socket: Socket) => {
      this.adminSockets.add(socket);
      this.emit('change');
      socket.on('close', () => {
        this.adminSockets.delete(socket);
        this.emit('change');
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      bind(server, resolve);
    });
    this.adminServers.push(server);
    return server;
  }

  private async openListener(spec: ListenerSpec): Promise<void> {
    const server = createNetServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(spec.address?.port ?? 0, spec.address?.host ?? '127.0.0.1', resolve);
    });
    const port = (server.address() as AddressInfo).port;
    const listener: SimulatedListener = {
      statName: sanitizeStatsName(spec.statName ?? `127.0.0.1:${port}`),
      direction: spec.direction ?? 'UNSPECIFIED',
      drainType: spec.drainType ?? 'DEFAULT',
      server,
      port,
      perWorker: new Array<number>(this.options.workers ?? 2).fill(0),
      accepting: true,
      sockets: new Set(),
    };
    server.on('connection', (socket) => {
      const worker = this.nextWorker++ % listener.perWorker.length;
      listener.perWorker[worker] = (listener.perWorker[worker] ?? 0) + 1;
      listener.sockets.add(socket);
      socket.on('error', () => undefined);
      socket.on('close', () => {
        listener.perWorker[worker] = (listener.perWorker[worker] ?? 1) - 1;
        listener.sockets.delete(socket);
        this.emit('change');
      });
      this.emit('change');
    });
    this.envoyListeners.push(listener);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const rawPath = req.url ?? '/';
    const recorded: RecordedRequest = { method: req.method ?? '', path: rawPath, at: performance.now() };
    this.requests.push(recorded);
    res.on('finish', () => {
      recorded.answeredAt = performance.now();
      this.emit('change');
    });
    this.emit('change');
    // Envoy collapses repeated leading slashes: `//stats` is `/stats`.
    const url = new URL(rawPath.replace(/^\/+/, '/'), 'http://admin');
    const { hang, reset, slow, errors } = this.faults;
    if (hang && matches(hang, url.pathname)) return; // the connection stays open, unanswered
    if (reset && matches(reset, url.pathname)) {
      req.socket.destroy();
      return;
    }
    const answer = () => {
      if (this.dead) return;
      const error = errors?.find((e) => matches(e, url.pathname));
      if (error) return send(res, error.code, error.body ?? 'simulated failure\n');
      this.route(req.method ?? 'GET', url, res);
    };
    if (slow && matches(slow, url.pathname)) setTimeout(answer, slow.ms);
    else answer();
  }

  private route(method: string, url: URL, res: ServerResponse): void {
    const path = url.pathname;
    if (MUTATING_PATHS.has(path)) {
      if (method !== 'POST') {
        const code = compareVersion(this.version, METHOD_NOT_ALLOWED_SINCE) >= 0 ? 405 : 400;
        return send(res, code, `Method ${method} not allowed, POST required.`);
      }
      return this.mutate(path, url.searchParams, res);
    }
    if (!KNOWN_GET_PATHS.has(path)) {
      return send(res, 404, `invalid path. admin commands are:\n${[...KNOWN_GET_PATHS, ...MUTATING_PATHS].sort().map((p) => `  ${p}\n`).join('')}`);
    }
    switch (path) {
      case '/server_info':
        return send(res, 200, `${JSON.stringify(this.serverInfo(), null, 1)}\n`, 'application/json');
      case '/ready':
        return send(res, this.state === 'LIVE' ? 200 : 503, `${this.state}\n`);
      default: {
        const rendered = renderStats(this.statsModel(), url.searchParams);
        if (this.faults.hugeStats && rendered.status === 200) {
          return this.sendPadded(res, rendered.body, this.faults.hugeStats.bytes, url.searchParams.get('format') === 'json' ? 'json' : 'text');
        }
        return send(res, rendered.status, rendered.body, rendered.contentType);
      }
    }
  }

  private mutate(path: string, params: URLSearchParams, res: ServerResponse): void {
    switch (path) {
      case '/healthcheck/fail':
        this.state = 'DRAINING';
        break;
      case '/healthcheck/ok':
        if (this.state === 'DRAINING') this.state = 'LIVE';
        break;
      case '/quitquitquit':
        this.quitRequested = true;
        send(res, 200, 'OK\n');
        void this.die();
        return;
      case '/drain_listeners': {
        const effects = this.drainManager.handle(params);
        if ('error' in effects) return send(res, 400, effects.error);
        if (effects.stopNow) this.stopListeners(effects.stopNow);
        break;
      }
    }
    this.emit('change');
    send(res, 200, 'OK\n');
  }

  /**
   * `ListenerManager::stopListeners`: every listener, or (`InboundOnly`) the INBOUND ones, stops
   * accepting; existing TCP connections stay until their clients close them, a stopped UDP listener's
   * sessions end with it (envoy/udp-proxy.ts). UDP listeners here have no traffic direction.
   */
  private stopListeners(direction: DrainDirection): void {
    for (const listener of this.envoyListeners) {
      if (!listener.accepting || (direction === 'InboundOnly' && listener.direction !== 'INBOUND')) continue;
      listener.accepting = false;
      listener.server.close();
    }
    if (direction === 'All') for (const proxy of this.udpProxies) proxy.stopListening();
    this.listenersStopped = this.envoyListeners.every((l) => !l.accepting);
    this.emit('change');
  }

  /**
   * The `hugeStats` fault: padding gauges sorted before the real ones, then the real answer (in JSON:
   * `{"stats":[` + padding + the real elements), streamed with back-pressure so that neither side holds
   * the whole answer. Emits `stats-bytes` as it goes.
   */
  private sendPadded(res: ServerResponse, body: string, bytes: number, format: 'json' | 'text'): void {
    const head = format === 'json' ? '{"stats":[' : '';
    // The real elements and `]}` (JSON), or the real lines (text).
    const tail = body.slice(head.length);
    let left = bytes - body.length;
    let index = 0;
    let sent = 0;
    res.writeHead(200, { 'content-type': format === 'json' ? 'application/json' : 'text/plain; charset=UTF-8', 'transfer-encoding': 'chunked' });
    const padding = (i: number): string => {
      const name = `cluster.padding_${String(i).padStart(10, '0')}.upstream_cx_active`;
      return format === 'json' ? `${i === 0 ? '' : ','}{"name":"${name}","value":0}` : `${name}: 0\n`;
    };
    const piece = (): string | undefined => {
      if (index === -1) return undefined;
      if (left <= 0) {
        const whole = index === 0;
        index = -1;
        if (whole) return body;
        if (format === 'text') return tail;
        // The real elements follow the padding (or the array just closes when there are none).
        return tail === ']}' ? tail : `,${tail}`;
      }
      let text = index === 0 ? head : '';
      while (text.length < 64 * 1024 && left > 0) {
        const element = padding(index++);
        text += element;
        left -= element.length;
      }
      return text;
    };
    const pump = (): void => {
      for (;;) {
        if (res.destroyed || this.dead) return;
        const text = piece();
        if (text === undefined) {
          res.end();
          return;
        }
        sent += text.length;
        this.emit('stats-bytes', sent);
        if (!res.write(text)) {
          res.once('drain', pump);
          return;
        }
      }
    };
    pump();
  }

  private serverInfo(): object {
    return buildServerInfo({
      version: this.version,
      state: this.state,
      uptimeS: Math.floor((performance.now() - this.startedAt) / 1000),
      workers: this.options.workers ?? 2,
      drainTimeS: this.options.drainTimeS ?? 600,
      drainStrategy: this.options.drainStrategy ?? 'Gradual',
    });
  }

  private statsModel(): StatsModel {
    const gauges = new Map<string, number>();
    const admin = this.adminSockets.size;
    gauges.set('listener.admin.downstream_cx_active', admin);
    gauges.set('listener.admin.main_thread.downstream_cx_active', admin);
    const bounced = this.faults.bouncingCounts;
    this.envoyListeners.forEach((listener, index) => {
      let total = listener.perWorker.reduce((a, b) => a + b, 0);
      if (index === 0 && bounced && bounced.length > 0) total = bounced[this.bounceIndex++ % bounced.length] as number;
      gauges.set(`listener.${listener.statName}.downstream_cx_active`, total);
      listener.perWorker.forEach((count, worker) => gauges.set(`listener.${listener.statName}.worker_${worker}.downstream_cx_active`, count));
    });
    const idleListener = (statName: string) => {
      gauges.set(`listener.${statName}.downstream_cx_active`, 0);
      for (let worker = 0; worker < (this.options.workers ?? 2); worker++) gauges.set(`listener.${statName}.worker_${worker}.downstream_cx_active`, 0);
    };
    for (let i = 0; i < (this.options.idleListeners ?? 0); i++) idleListener(`idle_listener_${i}`);
    const udpCounters: [string, number][] = [];
    for (const proxy of this.udpProxies) {
      // A UDP listener has the listener gauges of any listener, never above 0 (it has no connections).
      idleListener(proxy.listenerStatName);
      gauges.set(`udp.${proxy.statPrefix}.downstream_sess_active`, proxy.activeSessions);
      udpCounters.push([`udp.${proxy.statPrefix}.downstream_sess_total`, proxy.sessionsTotal], [`udp.${proxy.statPrefix}.idle_timeout`, proxy.idleTimeouts]);
    }
    if (this.faults.statsHidden) for (const name of [...gauges.keys()]) if (name.startsWith('listener.')) gauges.delete(name);
    gauges.set('server.live', this.state === 'LIVE' ? 1 : 0);
    gauges.set('server.state', ['LIVE', 'DRAINING', 'PRE_INITIALIZING', 'INITIALIZING'].indexOf(this.state));
    // Refreshed only at stats flush in real Envoy, and it includes probe connections: frozen here so a
    // program that (wrongly) relied on it would never see the drain finish.
    gauges.set('server.total_connections', 7);
    gauges.set('server.concurrency', this.options.workers ?? 2);
    return {
      textReadouts: new Map([['control_plane.identifier', '']]),
      counters: new Map([
        ['http.admin.downstream_rq_total', this.requests.length],
        ['listener_manager.listener_added', this.envoyListeners.length + this.udpProxies.length],
        ...udpCounters,
      ]),
      gauges,
      histograms: ['listener.admin.downstream_cx_length_ms', 'server.initialization_time_ms'],
    };
  }
}

function matches(fault: PathFault, path: string): boolean {
  return fault.paths === undefined || fault.paths.test(path);
}

/** Envoy's admin streams every answer in chunks of at most 2 MiB (chunked transfer encoding, no Content-Length). */
const ADMIN_CHUNK_BYTES = 2 * 1024 * 1024;

function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=UTF-8'): void {
  if (res.writableEnded || res.destroyed) return;
  res.writeHead(status, {
    'content-type': contentType,
    'cache-control': 'no-cache, max-age=0',
    'x-content-type-options': 'nosniff',
    'transfer-encoding': 'chunked',
  });
  for (let start = 0; start < body.length; start += ADMIN_CHUNK_BYTES) res.write(body.slice(start, start + ADMIN_CHUNK_BYTES));
  res.end();
}

function closeServer(server: NetServer | HttpServer): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}
