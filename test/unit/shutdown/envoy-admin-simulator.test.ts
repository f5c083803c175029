import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { request } from 'node:http';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LISTENER_GAUGES_PATH } from '../../../src/shutdown/listener-stats';
import { EnvoyAdminSimulator, type SimulatorOptions } from '../../support/envoy-admin-simulator';
import { NON_GRACEFUL_DRAIN_NOTIFIES_GUARD } from '../../support/envoy/drain-manager';

interface Reply {
  status: number;
  body: string;
  contentType: string | undefined;
  transferEncoding?: string | undefined;
}

/** A raw admin call (no client library shortcuts: the path is sent exactly as given). */
function call(sim: EnvoyAdminSimulator, method: string, path: string, viaUnix = false): Promise<Reply> {
  const target = viaUnix ? { socketPath: sim.adminAddress.slice('unix:'.length) } : { host: '127.0.0.1', port: sim.adminPort };
  return new Promise((resolve, reject) => {
    const req = request({ ...target, method, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, contentType: res.headers['content-type'], transferEncoding: res.headers['transfer-encoding'] }));
    });
    req.on('error', reject);
    req.end();
  });
}

const sims: EnvoyAdminSimulator[] = [];
const sockets: Socket[] = [];
const udpClients: UdpSocket[] = [];
async function simulator(options: SimulatorOptions = {}): Promise<EnvoyAdminSimulator> {
  const sim = await EnvoyAdminSimulator.start(options);
  sims.push(sim);
  return sim;
}
function openClient(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => resolve(socket));
    sockets.push(socket);
  });
}
/** A UDP client bound to its own port (one client address: one session). */
async function udpClient(): Promise<UdpSocket> {
  const socket = createSocket('udp4');
  udpClients.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
  return socket;
}
/** Sends a datagram to `port` and resolves with the answer the UDP proxy's upstream sends back. */
function exchange(client: UdpSocket, port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    client.once('message', (message) => resolve(message.toString()));
    client.send(text, port, '127.0.0.1');
  });
}
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const u of udpClients.splice(0)) u.close();
  await Promise.all(sims.splice(0).map((s) => s.stop()));
});

/** Every listener gauge, per-handler copies included, in JSON (what the drain asked for until issue 25 item 7). */
const GAUGES = '/stats?format=json&type=Gauges&filter=%5Elistener%5C..*%5C.downstream_cx_active%24';
type Stat = { name: string; value: number };
const statsOf = (reply: Reply) => (JSON.parse(reply.body) as { stats: Stat[] }).stats;

describe('transport and routing', () => {
  test('serves both unix socket and TCP; // is normalised', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-'));
    const sim = await simulator({ unixSocketPath: join(dir, 'admin.sock'), tcp: true });
    expect((await call(sim, 'GET', '/ready', true)).body).toBe('LIVE\n');
    expect((await call(sim, 'GET', '/ready')).status).toBe(200);
    expect((await call(sim, 'GET', '//stats?format=json')).status).toBe(200);
    expect(sim.requests.map((r) => r.path)).toEqual(['/ready', '/ready', '//stats?format=json']);
  });

  test('mutating endpoints are POST only (405, or 400 on old Envoy); unknown paths 404', async () => {
    const sim = await simulator();
    for (const path of ['/healthcheck/fail', '/healthcheck/ok', '/drain_listeners', '/quitquitquit']) {
      expect(await call(sim, 'GET', path)).toMatchObject({ status: 405, body: 'Method GET not allowed, POST required.' });
    }
    expect(sim.state).toBe('LIVE');
    expect((await call(sim, 'GET', '/nope')).status).toBe(404);
    const old = await simulator({ version: '1.20.0' });
    expect((await call(old, 'GET', '/healthcheck/fail')).status).toBe(400);
  });

  test('success is 200 OK\\n text/plain, chunked like every admin answer', async () => {
    const sim = await simulator();
    expect(await call(sim, 'POST', '/healthcheck/ok')).toEqual({ status: 200, body: 'OK\n', contentType: 'text/plain; charset=UTF-8', transferEncoding: 'chunked' });
  });
});

describe('state machine', () => {
  test('healthcheck/fail → DRAINING at once, reversible; drain_listeners leaves state alone', async () => {
    const sim = await simulator();
    await call(sim, 'POST', '/drain_listeners?graceful');
    expect((await call(sim, 'GET', '/ready')).status).toBe(200);
    await call(sim, 'POST', '/healthcheck/fail');
    expect(await call(sim, 'GET', '/ready')).toMatchObject({ status: 503, body: 'DRAINING\n' });
    expect(JSON.parse((await call(sim, 'GET', '/server_info')).body).state).toBe('DRAINING');
    await call(sim, 'POST', '/healthcheck/ok');
    expect(await call(sim, 'GET', '/ready')).toMatchObject({ status: 200, body: 'LIVE\n' });
  });

  test('server_info: pretty JSON, snake_case fields', async () => {
    const sim = await simulator({ version: '1.30.1', drainStrategy: 'Immediate' });
    const reply = await call(sim, 'GET', '/server_info');
    expect(reply.contentType).toBe('application/json');
    expect(reply.body).toMatch(/^\{\n "version": "[0-9a-f]{40}\/1\.30\.1\/Clean\/RELEASE\/BoringSSL",\n "state": "LIVE"/);
    const info = JSON.parse(reply.body);
    expect(info).toMatchObject({ hot_restart_version: expect.any(String), uptime_current_epoch: expect.stringMatching(/^\d+s$/), uptime_all_epochs: expect.stringMatching(/^\d+s$/) });
    expect(info.command_line_options).toMatchObject({ drain_time: '600s', drain_strategy: 'Immediate' });
    expect(info.node).toBeDefined();
  });
});

describe('/drain_listeners version matrix', () => {
  test.each([
    ['1.27.0', '/drain_listeners?skip_exit', 200],
    ['1.28.0', '/drain_listeners?skip_exit', 400],
    ['1.39.4', '/drain_listeners?skip_exit', 400],
    ['1.40.0', '/drain_listeners?skip_exit', 200],
    ['1.41.0', '/drain_listeners?skip_exit', 200],
    ['1.30.0', '/drain_listeners?graceful&skip_exit', 200],
  ])('Envoy %s %s → %d', async (version, path, status) => {
    const sim = await simulator({ version });
    const reply = await call(sim, 'POST', path);
    expect(reply.status).toBe(status);
    if (status === 400) expect(reply.body).toBe('skip_exit requires graceful\n');
  });

  test('flags count by presence; a repeated graceful drain is a no-op', async () => {
    const sim = await simulator({ version: '1.30.0' });
    await call(sim, 'POST', '/drain_listeners?graceful=false&skip_exit=0');
    expect(sim.gracefulDrain).toMatchObject({ skipExit: true });
    const first = sim.gracefulDrain;
    expect((await call(sim, 'POST', '/drain_listeners?graceful')).status).toBe(200);
    expect(sim.gracefulDrain).toBe(first);
  });

  test('before 1.28 skip_exit is ignored: the drain timer stops listeners', async () => {
    const sim = await simulator({ version: '1.27.0', drainTimeS: 0.05 });
    const ended = once(sim, 'drain-sequence-ended');
    await call(sim, 'POST', '/drain_listeners?graceful&skip_exit');
    await ended;
    expect(sim.listenersStopped).toBe(true);
    expect(sim.state).toBe('LIVE');
  });

  test('with skip_exit listeners keep accepting after the drain time', async () => {
    const sim = await simulator({ version: '1.30.0', drainTimeS: 0.05 });
    const ended = once(sim, 'drain-sequence-ended');
    await call(sim, 'POST', '/drain_listeners?graceful&skip_exit');
    await ended; // the drain time is over: the listeners must still accept
    expect(sim.listenersStopped).toBe(false);
    await openClient(sim.listenerPorts[0] as number);
    await sim.waitFor(() => sim.activeConnections() === 1);
  });
});

describe("/drain_listeners on 1.40 (PR #47042) and before", () => {
  /** After the call: its status, whether the listener stopped, how many connections learnt of a drain. */
  test.each([
    // [release, runtime guard non_graceful_drain_notifies_connections, path, status, listener stopped, connections told]
    ['1.39.0', undefined, '/drain_listeners', 200, true, 0],
    ['1.40.0', undefined, '/drain_listeners', 200, true, 1],
    ['1.40.0', false, '/drain_listeners', 200, true, 0],
    ['1.39.0', undefined, '/drain_listeners?skip_exit', 400, false, 0],
    ['1.40.0', undefined, '/drain_listeners?skip_exit', 200, false, 1],
    ['1.40.0', false, '/drain_listeners?skip_exit', 400, false, 0],
    ['1.39.0', undefined, '/drain_listeners?graceful&skip_exit', 200, false, 1],
    ['1.40.0', undefined, '/drain_listeners?graceful&skip_exit', 200, false, 1],
    ['1.40.0', false, '/drain_listeners?graceful&skip_exit', 200, false, 1],
    ['1.40.0', undefined, '/drain_listeners?graceful', 200, false, 1],
  ] as const)('Envoy %s (guard %s): POST %s → %d, listener stopped %s, %d connection told to drain', async (version, guard, path, status, stopped, told) => {
    const runtimeGuards = guard === undefined ? {} : { [NON_GRACEFUL_DRAIN_NOTIFIES_GUARD]: guard };
    // MODIFY_ONLY: only a drain sequence, never the health check, tells its connections.
    const sim = await simulator({ version, runtimeGuards, listeners: [{ drainType: 'MODIFY_ONLY' }] });
    await openClient(sim.listenerPorts[0] as number);
    await sim.waitFor(() => sim.activeConnections() === 1);
    const reply = await call(sim, 'POST', path);
    expect(reply.status).toBe(status);
    expect(reply.body).toBe(status === 400 ? 'skip_exit requires graceful\n' : 'OK\n');
    expect(sim.listenersStopped).toBe(stopped);
    expect(sim.connectionsToldToDrain()).toBe(told);
    expect(sim.state).toBe('LIVE');
  });

  test('a failed health check tells the connections of DEFAULT listeners, not MODIFY_ONLY ones', async () => {
    const sim = await simulator({ version: '1.40.0', listeners: [{ statName: 'default' }, { statName: 'modify_only', drainType: 'MODIFY_ONLY' }] });
    for (const port of sim.listenerPorts) await openClient(port);
    await sim.waitFor(() => sim.activeConnections() === 2);
    expect(sim.connectionsToldToDrain()).toBe(0);
    await call(sim, 'POST', '/healthcheck/fail');
    expect([sim.connectionsToldToDrain('default'), sim.connectionsToldToDrain('modify_only')]).toEqual([1, 0]);
  });

  test('a connection accepted after the drain started learns of it too', async () => {
    const sim = await simulator({ version: '1.40.0', listeners: [{ drainType: 'MODIFY_ONLY' }] });
    await call(sim, 'POST', '/drain_listeners?skip_exit');
    await openClient(sim.listenerPorts[0] as number);
    await sim.waitFor(() => sim.activeConnections() === 1);
    expect(sim.connectionsToldToDrain()).toBe(1);
  });

  test.each([
    // [release, drain sequences after graceful&inboundonly then graceful]
    ['1.33.0', 1],
    ['1.34.0', 2],
    ['1.40.0', 2],
  ] as const)('Envoy %s: an inbound-only drain, then a drain of all: %d drain sequences', async (version, sequences) => {
    const sim = await simulator({ version, listeners: [{ statName: 'in', direction: 'INBOUND', drainType: 'MODIFY_ONLY' }, { statName: 'out', direction: 'OUTBOUND', drainType: 'MODIFY_ONLY' }] });
    for (const port of sim.listenerPorts) await openClient(port);
    await sim.waitFor(() => sim.activeConnections() === 2);
    await call(sim, 'POST', '/drain_listeners?graceful&skip_exit&inboundonly');
    // From 1.34 the drain has a direction: the outbound listener's connection is not told yet.
    expect(sim.connectionsToldToDrain('out')).toBe(version === '1.33.0' ? 1 : 0);
    expect(sim.connectionsToldToDrain('in')).toBe(1);
    await call(sim, 'POST', '/drain_listeners?graceful&skip_exit');
    expect(sim.drainManager.sequences).toHaveLength(sequences);
    expect(sim.connectionsToldToDrain()).toBe(2);
  });

  test('inboundonly stops only the INBOUND listeners', async () => {
    const sim = await simulator({ version: '1.39.0', listeners: [{ statName: 'in', direction: 'INBOUND' }, { statName: 'plain' }] });
    await call(sim, 'POST', '/drain_listeners?inboundonly');
    expect(sim.listenersStopped).toBe(false);
    await openClient(sim.listenerPorts[1] as number);
    await sim.waitFor(() => sim.activeConnections('plain') === 1);
    await call(sim, 'POST', '/drain_listeners');
    expect(sim.listenersStopped).toBe(true);
  });
});

describe('UDP proxies: sessions end at their idle timeout', () => {
  const sessionGauges = async (sim: EnvoyAdminSimulator) => {
    const text = (await call(sim, 'GET', LISTENER_GAUGES_PATH)).body;
    return text.split('\n').filter((line) => line !== '');
  };

  test("a client address's first datagram opens a session; the upstream answers; the gauges say so", async () => {
    const sim = await simulator({ version: '1.40.0', udpProxies: [{ statPrefix: 'dns' }] });
    const [a, b] = [await udpClient(), await udpClient()];
    expect(await exchange(a, sim.udpPort(), 'one')).toBe('one');
    expect(await exchange(a, sim.udpPort(), 'two')).toBe('two');
    expect(sim.udpSessions('dns')).toBe(1);
    await exchange(b, sim.udpPort(), 'three');
    expect(sim.udpSessions()).toBe(2);
    const udpListener = sim.udpProxies[0]!.listenerStatName;
    // What the drain reads: the listener-level gauges (the UDP listener's is 0) and the session gauge, by name.
    expect(await sessionGauges(sim)).toEqual(
      [
        `listener.127.0.0.1_${sim.listenerPorts[0]}.downstream_cx_active: 0`,
        `listener.${udpListener}.downstream_cx_active: 0`,
        'listener.admin.downstream_cx_active: 1',
        'udp.dns.downstream_sess_active: 2',
      ].sort(),
    );
    const all = (await call(sim, 'GET', '/stats')).body;
    expect(all).toContain('udp.dns.downstream_sess_total: 2\n');
    expect(all).toContain(`listener.${udpListener}.worker_1.downstream_cx_active: 0\n`);
  });

  test('neither a failed health check nor a graceful drain ends a session', async () => {
    const sim = await simulator({ version: '1.40.0', udpProxies: [{ statPrefix: 'game' }] });
    await exchange(await udpClient(), sim.udpPort(), 'hello');
    await call(sim, 'POST', '/healthcheck/fail');
    await call(sim, 'POST', '/drain_listeners?graceful&skip_exit');
    expect(sim.udpSessions()).toBe(1);
    expect(sim.udpProxies[0]!.history).toEqual([expect.not.objectContaining({ endedAt: expect.anything() })]);
  });

  test('a session ends at its idle timeout, counted from its last datagram either way', async () => {
    const sim = await simulator({ udpProxies: [{ statPrefix: 'game', idleTimeoutMs: 200 }] });
    const client = await udpClient();
    for (let i = 0; i < 3; i++) await exchange(client, sim.udpPort(), `beat ${i}`);
    await sim.waitFor(() => sim.udpSessions() === 0);
    // However the beats were spread (a loaded machine may let one idle out before the next), every
    // session ended by its idle timer, no sooner than 200 ms after its last datagram.
    const { history } = sim.udpProxies[0]!;
    for (const session of history) {
      expect(session.endedBy).toBe('idle-timeout');
      expect(session.endedAt as number).toBeGreaterThanOrEqual(session.lastDatagramAt + 200 - 1);
    }
    expect(sim.udpProxies[0]!.idleTimeouts).toBe(history.length);
    expect(sim.udpProxies[0]!.lastSessionEndedAt).toBe(history.at(-1)?.endedAt);
  });

  test('a stopped UDP listener takes its sessions with it (its UDP proxy is deleted)', async () => {
    const sim = await simulator({ version: '1.39.0', udpProxies: [{ statPrefix: 'dns' }] });
    await exchange(await udpClient(), sim.udpPort(), 'q');
    await call(sim, 'POST', '/drain_listeners');
    expect(sim.udpSessions()).toBe(0);
    expect(sim.udpProxies[0]!.history).toEqual([expect.objectContaining({ endedBy: 'listener-stopped' })]);
    expect(sim.udpProxies[0]!.idleTimeouts).toBe(0);
  });
});

describe('/stats', () => {
  test('real connections are counted per listener, per worker and admin', async () => {
    const sim = await simulator({ listeners: [{}, { statName: '0.0.0.0_8002' }], workers: 2 });
    const [port] = sim.listenerPorts as [number];
    const clients = await Promise.all([openClient(port), openClient(port), openClient(port)]);
    await sim.waitFor(() => sim.activeConnections() === 3);
    const stats = statsOf(await call(sim, 'GET', GAUGES));
    const name = sim.listenerStatNames()[0] as string;
    expect(stats).toEqual([
      { name: 'listener.0.0.0.0_8002.downstream_cx_active', value: 0 },
      { name: 'listener.0.0.0.0_8002.worker_0.downstream_cx_active', value: 0 },
      { name: 'listener.0.0.0.0_8002.worker_1.downstream_cx_active', value: 0 },
      { name: `listener.${name}.downstream_cx_active`, value: 3 },
      { name: `listener.${name}.worker_0.downstream_cx_active`, value: 2 },
      { name: `listener.${name}.worker_1.downstream_cx_active`, value: 1 },
      { name: 'listener.admin.downstream_cx_active', value: 1 },
      { name: 'listener.admin.main_thread.downstream_cx_active', value: 1 },
    ]);
    // The drain's query: plain text, and the filter leaves out the per-handler copies.
    expect(await call(sim, 'GET', LISTENER_GAUGES_PATH)).toMatchObject({
      status: 200,
      contentType: 'text/plain; charset=UTF-8',
      body: `listener.0.0.0.0_8002.downstream_cx_active: 0\nlistener.${name}.downstream_cx_active: 3\nlistener.admin.downstream_cx_active: 1\n`,
    });
    clients[0]?.end();
    await sim.waitFor(() => sim.activeConnections() === 2);
  });

  test("a listener's name is made a stat name as Envoy makes it: no ':' in it", async () => {
    const sim = await simulator({ listeners: [{ statName: '[::]:8443' }, { statName: '.ingress:https.' }] });
    expect(sim.listenerStatNames()).toEqual(['[__]_8443', 'ingress_https']);
    expect((await call(sim, 'GET', LISTENER_GAUGES_PATH)).body).toBe(
      'listener.[__]_8443.downstream_cx_active: 0\nlistener.admin.downstream_cx_active: 1\nlistener.ingress_https.downstream_cx_active: 0\n',
    );
  });

  test('plain text by default: text readouts quoted, counters and gauges by name, histograms last; other formats refused', async () => {
    const sim = await simulator();
    const text = (await call(sim, 'GET', '/stats')).body;
    const lines = text.split('\n');
    expect(lines[0]).toBe('control_plane.identifier: ""');
    expect(lines.at(-1)).toBe('');
    expect(lines.at(-2)).toBe('server.initialization_time_ms: No recorded values');
    expect(lines.every((line) => line === '' || /^[^:]+: /.test(line))).toBe(true);
    // The same lines asked for by name (only the admin request counter has moved on).
    const withoutRequests = (body: string) => body.replace(/^http\.admin\.downstream_rq_total: \d+$/m, '');
    expect(withoutRequests((await call(sim, 'GET', '/stats?format=text')).body)).toBe(withoutRequests(text));
    expect((await call(sim, 'GET', '/stats?format=bogus')).status).toBe(400);
  });

  test('ordering: text readouts, then counters and gauges by name, histograms last', async () => {
    const sim = await simulator();
    const stats = JSON.parse((await call(sim, 'GET', '/stats?format=json')).body).stats as Array<Record<string, unknown>>;
    expect(stats[0]).toEqual({ name: 'control_plane.identifier', value: '' });
    const names = stats.slice(1, -1).map((s) => s.name as string);
    expect(names).toEqual([...names].sort());
    expect(stats.at(-1)).toHaveProperty('histograms.computed_quantiles');
  });

  test('nothing matching is {"stats":[]}, or no line at all; a bad regex is 400', async () => {
    const sim = await simulator();
    expect((await call(sim, 'GET', '/stats?format=json&filter=nomatch')).body).toBe('{"stats":[]}');
    expect(await call(sim, 'GET', '/stats?filter=nomatch')).toMatchObject({ status: 200, body: '' });
    expect(await call(sim, 'GET', '/stats?format=json&filter=(')).toMatchObject({ status: 400, body: 'Invalid re2 regex' });
    expect((await call(sim, 'GET', '/stats?format=json&filter=(?=x)')).status).toBe(400);
  });
});

describe('large Envoys and huge answers', () => {
  test('idle listeners appear in the stats with their per-worker copies, never connected', async () => {
    const sim = await simulator({ idleListeners: 3, workers: 2 });
    const names = statsOf(await call(sim, 'GET', GAUGES)).map((s) => s.name);
    expect(names.filter((n) => n.startsWith('listener.idle_listener_'))).toHaveLength(9);
    expect(names).toContain('listener.idle_listener_2.worker_1.downstream_cx_active');
    expect(sim.activeConnections()).toBe(0);
  });

  test('hugeStats pads the answer with other gauges first and stays valid JSON with the real gauges last', async () => {
    const sim = await simulator();
    sim.faults.hugeStats = { bytes: 300_000 };
    const reply = await call(sim, 'GET', GAUGES);
    expect(reply.body.length).toBeGreaterThanOrEqual(300_000);
    const stats = statsOf(reply);
    expect(stats[0]?.name).toMatch(/^cluster\.padding_/);
    expect(stats.at(-1)?.name).toMatch(/^listener\./);
  });

  test('in plain text too: padding lines first, the real gauges last', async () => {
    const sim = await simulator();
    sim.faults.hugeStats = { bytes: 300_000 };
    const body = (await call(sim, 'GET', LISTENER_GAUGES_PATH)).body;
    expect(body.length).toBeGreaterThanOrEqual(300_000);
    const lines = body.split('\n');
    expect(lines[0]).toMatch(/^cluster\.padding_0+\.upstream_cx_active: 0$/);
    expect(lines.slice(-2)).toEqual(['listener.admin.downstream_cx_active: 1', '']);
    expect(lines.slice(0, -1).every((line) => /^[^:]+: [01]$/.test(line))).toBe(true);
  });

  test('an endless answer keeps streaming until the client goes', async () => {
    const sim = await simulator();
    sim.faults.hugeStats = { bytes: Infinity };
    let received = 0;
    await new Promise<void>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: sim.adminPort, path: GAUGES, agent: false }, (res) => {
        res.on('data', (c: Buffer) => {
          received += c.length;
          if (received > 5_000_000) {
            req.destroy();
            resolve();
          }
        });
        res.on('end', () => reject(new Error('the endless answer ended')));
      });
      req.on('error', () => undefined);
      req.end();
    });
    expect(received).toBeGreaterThan(5_000_000);
  });
});

describe('faults', () => {
  test('stats hidden by a matcher', async () => {
    const sim = await simulator();
    sim.faults.statsHidden = true;
    expect((await call(sim, 'GET', GAUGES)).body).toBe('{"stats":[]}');
    expect((await call(sim, 'GET', LISTENER_GAUGES_PATH)).body).toBe('');
  });

  test('5xx, slow and bouncing counts', async () => {
    const sim = await simulator();
    sim.faults = { errors: [{ code: 503, paths: /^\/server_info$/ }], slow: { ms: 50, paths: /^\/ready$/ }, bouncingCounts: [2, 0] };
    expect((await call(sim, 'GET', '/server_info')).status).toBe(503);
    const before = performance.now();
    await call(sim, 'GET', '/ready');
    expect(performance.now() - before).toBeGreaterThanOrEqual(45);
    const totals = [];
    for (let i = 0; i < 3; i++) totals.push(statsOf(await call(sim, 'GET', GAUGES))[0]?.value);
    expect(totals).toEqual([2, 0, 2]);
  });

  test('hanging: the request is read and recorded but never answered', async () => {
    const sim = await simulator();
    sim.faults.hang = {};
    const pending = call(sim, 'GET', '/server_info').catch(() => 'closed');
    await sim.waitForRequest(/^\/server_info$/);
    await sim.waitFor(() => sim.adminConnections() === 1);
    await sim.die();
    expect(await pending).toBe('closed');
  });

  test('dying: the socket vanishes and listener connections drop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-'));
    const sim = await simulator({ unixSocketPath: join(dir, 'admin.sock') });
    const client = await openClient(sim.listenerPorts[0] as number);
    const closed = new Promise((r) => client.on('close', r));
    await sim.die();
    await closed;
    await expect(call(sim, 'GET', '/ready', true)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  test('quitquitquit is recorded (the drain must never send it)', async () => {
    const sim = await simulator();
    await call(sim, 'POST', '/quitquitquit');
    expect(sim.quitRequested).toBe(true);
  });
});

test('the reset fault closes a matching request\'s connection before any byte of an answer; others are answered', async () => {
  const sim = await EnvoyAdminSimulator.start({});
  try {
    sim.faults.reset = { paths: /^\/stats$/ };
    await expect(fetch(`http://127.0.0.1:${sim.adminPort}/stats?format=json`)).rejects.toThrow();
    expect((await fetch(`http://127.0.0.1:${sim.adminPort}/ready`)).status).toBe(200);
  } finally {
    await sim.stop();
  }
});
