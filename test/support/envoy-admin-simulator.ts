/**
 * An Envoy admin API simulator, faithful to docs/design.md, "Envoy's admin API", for testing `envoy-shutdown` without an Envoy
 * binary. It serves the admin API over a unix socket and/or loopback TCP and owns real listener
 * sockets: connections that tests open to them are counted into the listener gauges exactly as Envoy
 * would count them (per listener, per worker, and the admin listener counting admin connections,
 * including the poller's own).
 *
 * Every admin request is recorded (method, raw path, time) so tests can assert call order and timing,
 * and the simulator emits `change` on every request and connection change so tests wait on conditions
 * instead of sleeping (and `drain-sequence-ended` when a graceful drain's --drain-time-s is over). Faults are switched on through `faults` at any time.
 */
import { EventEmitter } from 'node:events';
import { rmSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { buildServerInfo, compareVersion, parseVersion, type EnvoyState, type SimulatedVersion } from './envoy/server-info';
import { renderStats, sanitizeStatsName, type StatsModel } from './envoy/stats';

export interface ListenerSpec {
  /**
   * What names the listener in its stats (Envoy's `stat_prefix`, or its address `<ip>:<port>`), made a stat
   * name segment as Envoy makes it (`sanitizeStatsName`: `[::]:8443` is `[__]_8443`); default `127.0.0.1_<port>`.
   */
  statName?: string;
}

export interface SimulatorOptions {
  /** Envoy release to imitate, `x.y.z`; default 1.31.2. Drives the version matrix. */
  version?: string;
  state?: EnvoyState;
  /** Serve the admin API on this unix socket path. */
  unixSocketPath?: string;
  /** Serve the admin API on 127.0.0.1 (random port); default true when no unix socket is given. */
  tcp?: boolean;
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
const SKIP_EXIT_SINCE: SimulatedVersion = { major: 1, minor: 28, patch: 0 };
/** From this release `skip_exit` without `graceful` is accepted; 1.28–1.40 reject it. */
const SKIP_EXIT_ALONE_SINCE: SimulatedVersion = { major: 1, minor: 41, patch: 0 };

export class EnvoyAdminSimulator extends EventEmitter {
  readonly requests: RecordedRequest[] = [];
  faults: Faults = {};
  state: EnvoyState;
  readonly version: SimulatedVersion;
  /** Set once a graceful drain has started (by /drain_listeners?graceful). */
  gracefulDrain: { skipExit: boolean; inboundOnly: boolean; startedAt: number } | undefined;
  /** True once listeners have stopped accepting (drain timer ran out, or a non-graceful drain). */
  listenersStopped = false;
  quitRequested = false;

  private readonly options: SimulatorOptions;
  private readonly envoyListeners: SimulatedListener[] = [];
  private readonly adminServers: HttpServer[] = [];
  private readonly adminSockets = new Set<Socket>();
  private readonly startedAt = performance.now();
  private nextWorker = 0;
  private drainTimer: NodeJS.Timeout | undefined;
  private bounceIndex = 0;
  private dead = false;
  adminPort: number | undefined;

  private constructor(options: SimulatorOptions) {
    super();
    this.options = options;
    this.state = options.state ?? 'LIVE';
    this.version = parseVersion(options.version ?? '1.31.2');
  }

  static async start(options: SimulatorOptions = {}): Promise<EnvoyAdminSimulator> {
    const simulator = new EnvoyAdminSimulator(options);
    await simulator.listen();
    return simulator;
  }

  /** The `--admin` value that reaches this simulator (unix socket preferred). */
  get adminAddress(): string {
    if (this.options.unixSocketPath) return `unix:${this.options.unixSocketPath}`;
    return `http://127.0.0.1:${this.adminPort}`;
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
    clearTimeout(this.drainTimer);
    for (const socket of this.adminSockets) socket.destroy();
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
    const handler = (req: IncomingMessage, res: ServerResponse) => this.handle(req, res);
    if (this.options.unixSocketPath) {
      rmSync(this.options.unixSocketPath, { force: true });
      await this.openAdminServer(handler, (server, ready) => server.listen(this.options.unixSocketPath, ready));
    }
    if (this.options.tcp ?? !this.options.unixSocketPath) {
      const server = await this.openAdminServer(handler, (s, ready) => s.listen(0, '127.0.0.1', ready));
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
      server.listen(0, '127.0.0.1', resolve);
    });
    const port = (server.address() as AddressInfo).port;
    const listener: SimulatedListener = {
      statName: sanitizeStatsName(spec.statName ?? `127.0.0.1:${port}`),
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
        const error = this.drainListeners(params);
        if (error) return send(res, 400, error);
        break;
      }
    }
    this.emit('change');
    send(res, 200, 'OK\n');
  }

  /** The /drain_listeners version matrix (docs/design.md, "Envoy's admin API"). Returns an error body for a 400, else undefined. */
  private drainListeners(params: URLSearchParams): string | undefined {
    const graceful = params.has('graceful');
    const knowsSkipExit = compareVersion(this.version, SKIP_EXIT_SINCE) >= 0;
    const skipExit = knowsSkipExit && params.has('skip_exit');
    const inboundOnly = params.has('inboundonly');
    if (skipExit && !graceful && compareVersion(this.version, SKIP_EXIT_ALONE_SINCE) < 0) return 'skip_exit requires graceful\n';
    if (!graceful) {
      if (!skipExit) this.stopListeners();
      return undefined;
    }
    if (this.gracefulDrain) return undefined; // a repeated graceful drain is a no-op
    this.gracefulDrain = { skipExit, inboundOnly, startedAt: performance.now() };
    // Envoy's drain sequence runs for --drain-time-s whatever the flags; at its end its callback stops
    // the listeners unless skip_exit was given (ListenersHandler::handlerDrainListeners).
    this.drainTimer = setTimeout(() => {
      if (!skipExit) this.stopListeners();
      this.emit('drain-sequence-ended');
    }, (this.options.drainTimeS ?? 600) * 1000);
    this.drainTimer.unref();
    return undefined;
  }

  /** Listeners stop accepting; existing connections stay until their clients close them. */
  private stopListeners(): void {
    if (this.listenersStopped) return;
    this.listenersStopped = true;
    for (const listener of this.envoyListeners) {
      listener.accepting = false;
      listener.server.close();
    }
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
    for (let i = 0; i < (this.options.idleListeners ?? 0); i++) {
      gauges.set(`listener.idle_listener_${i}.downstream_cx_active`, 0);
      for (let worker = 0; worker < (this.options.workers ?? 2); worker++) gauges.set(`listener.idle_listener_${i}.worker_${worker}.downstream_cx_active`, 0);
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
        ['listener_manager.listener_added', this.envoyListeners.length],
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
