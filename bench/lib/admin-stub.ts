/**
 * A load fixture for `bench/shutdown.ts`: the few Envoy admin answers a drain needs, over a unix socket,
 * with a stats answer as large as a big Envoy's. Not a simulator (that is the tests' job): it has no
 * listener sockets, no version matrix, and of Envoy's state machine only what the drain confirms. It answers
 *
 * - `GET /server_info`: an Envoy 1.31.2, LIVE until `/healthcheck/fail`, then DRAINING (as Envoy reports
 *   it, and as the drain checks before it goes on);
 * - `POST /healthcheck/fail` and `POST /drain_listeners…`: `OK`;
 * - `GET /stats…`: the `downstream_cx_active` gauges of `listeners` listeners as Envoy renders them,
 *   each listener's gauge followed by its per-worker copies, then the admin listener's, so a stats
 *   answer for 10,000 listeners is as many bytes as the real one. Like Envoy's admin it honours the query:
 *   `filter` (a regular expression a gauge's name must contain a match of; RE2 and JavaScript agree on the
 *   syntax the drain sends) and `format` (`json`; plain text `name: value` lines when absent). The open
 *   connections are whatever the bench sets with `setActiveConnections` (counted on the first listener and
 *   its first worker), or none from the poll after `drainedAfterPolls`;
 * - anything else: 404.
 *
 * Every request is recorded with its arrival time (performance.now()).
 */
import { rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';

export interface StubRequest {
  method: string;
  /** As sent, query string included. */
  path: string;
  at: number;
}

export interface AdminStubOptions {
  socketPath: string;
  listeners: number;
  /** Envoy's `--concurrency`: how many per-worker copies each listener gauge has. Default 2. */
  workers?: number;
  /**
   * Stats polls after `/healthcheck/fail` that still see the connections; every later one sees none, so a
   * drain makes exactly this many polls plus one (for counting instructions per poll).
   */
  drainedAfterPolls?: number;
}

/** Only the fields the drain program reads, with Envoy's version format `<sha>/<x.y.z>/<status>/<build>/<ssl>`. */
const serverInfo = (state: 'LIVE' | 'DRAINING') =>
  `${JSON.stringify({ version: '7ed31beba8cbcc0fc2b1e6d2f1a25e7a1a3ec7c1/1.31.2/Clean/RELEASE/BoringSSL', state, uptime_current_epoch: '3600s' }, null, 1)}\n`;

/** One listener gauge: its name without the `listener.` prefix and `.downstream_cx_active` suffix. */
interface Gauge {
  name: string;
  value: number;
}

export class AdminStub {
  readonly requests: StubRequest[] = [];
  readonly address: string;
  private active = 0;
  private draining = false;
  private pollsSinceFailed = 0;
  /**
   * The stats answers, by query, rendered when the count changes: rendering 30,000 gauges takes Node
   * 20–60 ms, which must not land on the request that follows a change (the reaction time would measure
   * the stub). A query seen for the first time is rendered on its request and kept.
   */
  private readonly answers = new Map<string, { drained: Rendered; current: Rendered }>();
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly server: Server,
    private readonly options: AdminStubOptions,
  ) {
    this.address = `unix:${options.socketPath}`;
  }

  static async start(options: AdminStubOptions): Promise<AdminStub> {
    rmSync(options.socketPath, { force: true });
    let stub: AdminStub | undefined;
    const server = createServer((req, res) => stub?.answer(req, res));
    stub = new AdminStub(server, options);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.socketPath, resolve);
    });
    return stub;
  }

  /** The open connections the stats answer reports from now on. */
  setActiveConnections(count: number): void {
    this.active = count;
    for (const [query, rendered] of this.answers) rendered.current = this.renderStats(query, count);
  }

  /** Resolves with the first recorded request (already recorded or still to come) that `match` accepts. */
  request(match: (request: StubRequest) => boolean, timeoutMs = 120_000): Promise<StubRequest> {
    const found = this.requests.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const check = () => {
        const request = this.requests.find(match);
        if (!request) return;
        done();
        resolve(request);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`admin stub: no matching request within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.options.socketPath, { force: true });
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? '/';
    const method = req.method ?? '';
    this.requests.push({ method, path, at: performance.now() });
    for (const check of [...this.waiters]) check();
    const mark = path.indexOf('?');
    const route = `${method} ${mark < 0 ? path : path.slice(0, mark)}`;
    const query = mark < 0 ? '' : path.slice(mark + 1);
    if (route === 'GET /server_info') return send(res, 200, serverInfo(this.draining ? 'DRAINING' : 'LIVE'), 'application/json');
    if (route === 'POST /healthcheck/fail') this.draining = true;
    if (route === 'POST /healthcheck/fail' || route === 'POST /drain_listeners') return send(res, 200, 'OK\n');
    if (route === 'GET /stats') {
      let rendered = this.answers.get(query);
      if (!rendered) {
        rendered = { drained: this.renderStats(query, 0), current: this.renderStats(query, this.active) };
        this.answers.set(query, rendered);
      }
      if (this.draining) this.pollsSinceFailed++;
      const drained = this.options.drainedAfterPolls !== undefined && this.pollsSinceFailed > this.options.drainedAfterPolls;
      const { status, body, contentType } = drained ? rendered.drained : rendered.current;
      return send(res, status, body, contentType);
    }
    send(res, 404, 'not part of the benchmark stub\n');
  }

  /** Sorted by name, as Envoy sorts them: `0.0.0.0_<port>` listeners, then `admin` (whose one connection is the poller's). */
  private gauges(active: number): Gauge[] {
    const workers = this.options.workers ?? 2;
    const gauges: Gauge[] = [];
    for (let i = 0; i < this.options.listeners; i++) {
      const name = `0.0.0.0_${10_000 + i}`;
      const count = i === 0 ? active : 0;
      gauges.push({ name, value: count });
      for (let worker = 0; worker < workers; worker++) gauges.push({ name: `${name}.worker_${worker}`, value: worker === 0 ? count : 0 });
    }
    gauges.push({ name: 'admin', value: 1 }, { name: 'admin.main_thread', value: 1 });
    return gauges;
  }

  /** What Envoy's `/stats` answers to `query` (see the header comment for what of it is honoured). */
  private renderStats(query: string, active: number): Rendered {
    const params = new URLSearchParams(query);
    const format = params.get('format');
    if (format !== null && format !== 'json') return { status: 400, body: 'usage: /stats?format=(html|active-html|json|prometheus|text)\n\n', contentType: 'text/plain' };
    let filter: RegExp | undefined;
    try {
      filter = params.has('filter') ? new RegExp(params.get('filter') as string) : undefined;
    } catch {
      return { status: 400, body: 'Invalid re2 regex', contentType: 'text/plain' };
    }
    const named = this.gauges(active)
      .map(({ name, value }) => ({ name: `listener.${name}.downstream_cx_active`, value }))
      .filter(({ name }) => filter === undefined || filter.test(name));
    if (format === 'json') return { status: 200, body: `{"stats":[${named.map(({ name, value }) => `{"name":"${name}","value":${value}}`).join(',')}]}`, contentType: 'application/json' };
    return { status: 200, body: named.map(({ name, value }) => `${name}: ${value}\n`).join(''), contentType: 'text/plain; charset=UTF-8' };
  }
}

interface Rendered {
  status: number;
  body: string;
  contentType: string;
}

/** Chunked, as Envoy's admin streams every answer. */
function send(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=UTF-8'): void {
  res.writeHead(status, { 'content-type': contentType });
  res.write(body);
  res.end();
}
