import { AdminCallError, type AdminClient, type AdminResponse } from '../../../src/shutdown/admin-client';
import type { Clock } from '../../../src/shutdown/clock';
import { encodeDrainRecord, readDrainRecord, type DrainRecord } from '../../../src/drain-record';
import { DrainRun, drainEnvoy, type DrainSettings } from '../../../src/shutdown/drain';
import type { RecordSink } from '../../../src/shutdown/record-file';
import { VERSION } from '../../../src/version';
import { DRAIN_CALL_ERAS, drainPosts } from '../../../src/drain-contract';
import { parseEnvoyVersion } from '../../../src/shutdown/envoy-version';
import { LISTENER_GAUGES_PATH } from '../../../src/shutdown/listener-stats';
import type { LogFields } from '../../../src/shutdown/log';

/** Virtual time: sleeping advances it instantly, so a 290 s timeline runs in microseconds. */
class FakeClock implements Clock {
  t = 0;
  now = () => this.t;
  sleep = async (ms: number) => {
    this.t += Math.max(0, ms);
  };
}

/** A scripted answer: status and body text (streamed into the call's reader), or a failure. */
type Answer = (AdminResponse<string> & { takesMs?: number }) | 'refused' | 'hang' | 'unreadable';
interface Call {
  method: string;
  path: string;
  at: number;
}

/** An admin API scripted as a function of (method, path, virtual time). */
function fakeAdmin(clock: FakeClock, script: (method: string, path: string, t: number) => Answer) {
  const calls: Call[] = [];
  const admin: AdminClient = {
    async call(method, path, timeoutMs, reader) {
      calls.push({ method, path, at: clock.t });
      const answer = script(method, path, clock.t);
      if (answer === 'refused') throw new AdminCallError('unreachable', 'ECONNREFUSED');
      if (answer === 'unreadable') throw new AdminCallError('failed', 'unreadable answer: connection closed before the end of the body');
      if (answer === 'hang') {
        clock.t += timeoutMs;
        throw new AdminCallError('timeout', 'no answer');
      }
      clock.t += answer.takesMs ?? 0;
      reader.push(Buffer.from(answer.body));
      return { status: answer.status, body: reader.finish() };
    },
  };
  return { admin, calls };
}

const ok = (body = 'OK\n'): AdminResponse<string> => ({ status: 200, body });
const serverInfo = (version: string, state = 'LIVE') => ok(JSON.stringify({ version: `abc/${version}/Clean/RELEASE/BoringSSL`, state }));
/** Envoy's plain-text `/stats` answer: one `name: value` line per gauge. */
const statLines = (gauges: Array<[string, number | string]>) => ok(gauges.map(([name, value]) => `${name}: ${value}\n`).join(''));
const gauges = (active: number) =>
  statLines([
    ['listener.0.0.0.0_8080.downstream_cx_active', active],
    ['listener.0.0.0.0_8080.worker_0.downstream_cx_active', active],
    ['listener.0.0.0.0_8002.downstream_cx_active', 4],
    ['listener.admin.downstream_cx_active', 1],
  ]);

/**
 * A healthy Envoy whose connection count over time is given by `connectionsAt`. Its server state follows
 * Envoy's: DRAINING on `/server_info` and `/ready` (503) once the health check is failed.
 */
function envoy(version: string, connectionsAt: (t: number) => number) {
  let draining = false;
  return (method: string, path: string, t: number): Answer => {
    if (path === '/server_info') return serverInfo(version, draining ? 'DRAINING' : 'LIVE');
    if (path === '/ready') return draining ? { status: 503, body: 'DRAINING\n' } : ok('LIVE\n');
    if (path === LISTENER_GAUGES_PATH) return gauges(connectionsAt(t));
    if (method === 'POST' && path === '/healthcheck/fail') draining = true;
    if (method === 'POST') return ok();
    return { status: 404, body: 'invalid path' };
  };
}

const settings = (overrides: Partial<DrainSettings> = {}): DrainSettings => ({
  deadlineMs: 60_000,
  drainDelayMs: 0,
  minDrainMs: 5_000,
  minConnections: 0,
  pollIntervalMs: 1_000,
  requestTimeoutMs: 1_000,
  excludeListeners: [/_8002$/],
  inboundOnly: false,
  ...overrides,
});

async function run(script: (method: string, path: string, t: number) => Answer, overrides: Partial<DrainSettings> = {}) {
  const clock = new FakeClock();
  const { admin, calls } = fakeAdmin(clock, script);
  const logs: Array<{ phase: string } & LogFields> = [];
  const summary = await drainEnvoy(settings(overrides), { admin, clock, log: (phase, fields = {}) => logs.push({ phase, ...fields }) });
  const posts = calls.filter((c) => c.method === 'POST').map((c) => c.path);
  return { summary, calls, logs, posts, clock };
}

describe('drainEnvoy', () => {
  test('calls the admin API in the documented order and exits when drained after the minimum drain', async () => {
    const { summary, calls, logs } = await run(envoy('1.31.2', (t) => Math.max(0, 3 - Math.floor(t / 2000))), { minDrainMs: 1000 });
    // The health check first; /server_info confirms it (and gives the version the drain flags need).
    expect(calls.slice(0, 4).map((c) => `${c.method} ${c.path}`)).toEqual([
      'POST /healthcheck/fail',
      'GET /server_info',
      `GET ${LISTENER_GAUGES_PATH}`,
      'POST /drain_listeners?graceful&skip_exit',
    ]);
    expect(calls.slice(4).every((c) => c.path === LISTENER_GAUGES_PATH)).toBe(true);
    expect(calls.some((c) => c.path.includes('quitquitquit'))).toBe(false);
    // 3 connections, one fewer every 2 s: zero from t=6 s, seen by the poll at t=6 s.
    expect(summary).toEqual({
      reason: 'drained',
      durationMs: 6000,
      connectionsAtStart: 3,
      connectionsAtEnd: 0,
      udpSessionsAtStart: 0,
      udpSessionsAtEnd: 0,
      envoyVersion: '1.31.2',
    });
    expect(logs.map((l) => l.phase)).toEqual([
      'start', 'healthcheck-fail', 'server-info', 'healthcheck-confirm', 'connections', 'drain-listeners', 'poll', 'poll', 'poll', 'poll', 'summary',
    ]);
    expect(logs.find((l) => l.phase === 'healthcheck-confirm')).toMatchObject({ state: 'DRAINING', via: '/server_info' });
  });

  test("asks for the listener gauges and the UDP proxies' session gauges in plain text, the filter percent-encoded", () => {
    expect(LISTENER_GAUGES_PATH).toMatch(/^\/stats\?type=Gauges&filter=%5E\(%3F%3Alistener%5C\.[%0-9A-Za-z_.*()-]+%5C\.downstream_cx_active%7Cudp%5C\.\.%2B%5C\.downstream_sess_active\)%24$/);
  });

  test('waits for the minimum drain even when nothing is connected, and not a poll interval longer', async () => {
    const { summary, logs } = await run(envoy('1.31.2', () => 0), { minDrainMs: 2500, pollIntervalMs: 1000 });
    expect(summary.reason).toBe('drained');
    expect(summary.durationMs).toBe(2500);
    // Each poll the minimum drain held says so, and how long is left: the last one wakes at its end.
    expect(logs.filter((l) => l.phase === 'min-drain')).toEqual([2500, 1500, 500].map((wait) => ({ phase: 'min-drain', connections: 0, udp_sessions: 0, wait_ms: wait })));
  });

  test('exits when connections are at or below --min-connections', async () => {
    const { summary } = await run(envoy('1.31.2', (t) => (t < 3000 ? 9 : 2)), { minConnections: 2, minDrainMs: 0 });
    expect(summary).toMatchObject({ reason: 'drained', durationMs: 3000, connectionsAtEnd: 2 });
  });

  test('exits at the deadline when connections never close', async () => {
    const { summary, clock } = await run(envoy('1.31.2', () => 5), { deadlineMs: 10_000 });
    expect(summary).toMatchObject({ reason: 'deadline', durationMs: 10_000, connectionsAtStart: 5, connectionsAtEnd: 5 });
    expect(clock.t).toBe(10_000);
  });

  test('a poll the deadline cuts short does not replace the last count: the summary says how many were still open', async () => {
    // Polls every 1 s; the one starting at 9 s gets the 0.5 s left before the deadline and times out.
    const base = envoy('1.31.2', () => 5);
    const { summary } = await run((method, path, t) => (path === LISTENER_GAUGES_PATH && t >= 9_000 ? 'hang' : base(method, path, t)), {
      deadlineMs: 9_500,
    });
    expect(summary).toMatchObject({ reason: 'deadline', connectionsAtStart: 5, connectionsAtEnd: 5 });
  });

  test('a poll that fails before the deadline does make the count unknown', async () => {
    const base = envoy('1.31.2', () => 5);
    const { summary } = await run((method, path, t) => (path === LISTENER_GAUGES_PATH && t >= 3_000 ? 'hang' : base(method, path, t)), {
      deadlineMs: 9_500,
    });
    expect(summary).toMatchObject({ reason: 'deadline', connectionsAtStart: 5, connectionsAtEnd: null });
  });

  test('the deadline also bounds the drain delay', async () => {
    const { summary, posts } = await run(envoy('1.31.2', () => 0), { deadlineMs: 3000, drainDelayMs: 10_000 });
    expect(summary).toMatchObject({ reason: 'deadline', durationMs: 3000 });
    expect(posts).toEqual(['/drain_listeners?graceful&skip_exit']);
  });

  test('an unreachable admin API ends the drain at once, after quick retries', async () => {
    const { summary, calls, logs } = await run(() => 'refused');
    expect(summary).toMatchObject({ reason: 'admin-unreachable', connectionsAtStart: null, envoyVersion: 'unknown' });
    expect(summary.durationMs).toBeLessThan(1000);
    // The health check, three times in quick succession, then whether anything of the admin API answers.
    expect(calls.map((c) => c.path)).toEqual(['/healthcheck/fail', '/healthcheck/fail', '/healthcheck/fail', '/ready']);
    expect(logs.at(-1)).toMatchObject({ phase: 'summary', reason: 'admin-unreachable', connections_at_start: 'unknown' });
  });

  test('an admin API that accepts but never answers is given until the deadline, not longer', async () => {
    const { summary, calls } = await run(() => 'hang', { deadlineMs: 7_500, requestTimeoutMs: 1000 });
    expect(summary).toMatchObject({ reason: 'deadline', durationMs: 7_500 });
    // Envoy is alive but slow: the drain still tried to fail the health check.
    expect(calls.some((c) => c.path === '/healthcheck/fail')).toBe(true);
  });

  test('Envoy disappearing mid-drain ends the drain promptly', async () => {
    const healthy = envoy('1.31.2', () => 4);
    const { summary } = await run((m, p, t) => (t >= 2000 ? 'refused' : healthy(m, p, t)), { deadlineMs: 60_000 });
    expect(summary.reason).toBe('admin-unreachable');
    expect(summary.durationMs).toBeLessThan(2000 + 1000);
    expect(summary.connectionsAtEnd).toBe(4);
  });

  test('listener stats hidden by a stats matcher mean "unknown", never zero', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { summary, logs } = await run(
      (m, p, t) => (p === LISTENER_GAUGES_PATH ? ok('') : healthy(m, p, t)),
      { deadlineMs: 8000 },
    );
    expect(summary).toMatchObject({ reason: 'deadline', connectionsAtStart: null, connectionsAtEnd: null });
    expect(logs.find((l) => l.phase === 'poll')).toMatchObject({ connections: 'unknown' });
  });

  test('5xx answers are retried and do not stop the drain', async () => {
    let failures = 2;
    const healthy = envoy('1.31.2', () => 0);
    const { summary, calls } = await run((m, p, t) => (p === '/healthcheck/fail' && failures-- > 0 ? { status: 503, body: '' } : healthy(m, p, t)), {
      minDrainMs: 0,
    });
    expect(calls.filter((c) => c.path === '/healthcheck/fail')).toHaveLength(3);
    expect(summary.reason).toBe('drained');
  });

  test('404 / 405 on the mutating endpoints are logged and the drain goes on', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { summary, logs } = await run((m, p, t) => (p.startsWith('/drain_listeners') ? { status: 404, body: 'invalid path' } : p === '/healthcheck/fail' ? { status: 405, body: '' } : healthy(m, p, t)), { minDrainMs: 0 });
    expect(summary.reason).toBe('drained');
    expect(logs.find((l) => l.phase === 'healthcheck-fail')).toMatchObject({ status: 405 });
    expect(logs.find((l) => l.phase === 'drain-listeners')).toMatchObject({ status: 404 });
  });

  test('a server_info that fails with 5xx leaves the version unknown: plain graceful drain', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { summary, posts } = await run((m, p, t) => (p === '/server_info' ? { status: 500, body: '' } : healthy(m, p, t)), { minDrainMs: 0 });
    expect(summary).toMatchObject({ reason: 'drained', envoyVersion: 'unknown' });
    expect(posts).toEqual(['/healthcheck/fail', '/drain_listeners?graceful']);
  });

  test('a 400 to skip_exit falls back to a plain graceful drain', async () => {
    const healthy = envoy('1.30.0', () => 0);
    const { posts } = await run((m, p, t) => (p.includes('skip_exit') ? { status: 400, body: 'skip_exit requires graceful\n' } : healthy(m, p, t)), { minDrainMs: 0 });
    expect(posts).toEqual(['/healthcheck/fail', '/drain_listeners?graceful&skip_exit', '/drain_listeners?graceful']);
  });

  test.each([
    ['shorter than the interval: each poll starts one interval after the previous one started', 300, [1000, 1000, 1000]],
    ['longer than the interval: the next poll starts as soon as the previous one ends', 1500, [1500, 1500, 1500]],
  ])('polls at a fixed rate; a poll %s', async (_case, takesMs, gaps) => {
    const healthy = envoy('1.31.2', () => 0);
    const { calls } = await run(
      (m, p, t) => (p === LISTENER_GAUGES_PATH ? { ...gauges(t < 10_000 ? 1 : 0), takesMs } : healthy(m, p, t)),
      { minDrainMs: 0, pollIntervalMs: 1000 },
    );
    // After the first reading and the drain calls, the polls of the drain loop.
    const polls = calls.slice(4).map((c) => c.at);
    expect(polls.slice(1, 4).map((at, i) => at - (polls[i] as number))).toEqual(gaps);
  });

  test('bouncing counts: only a count at or below the threshold after the minimum drain ends it', async () => {
    const sequence = [3, 0, 2, 0, 4, 1, 0];
    let poll = 0;
    const healthy = envoy('1.31.2', () => 0);
    const { summary } = await run((m, p, t) => (p === LISTENER_GAUGES_PATH ? gauges(sequence[Math.min(poll++, sequence.length - 1)] as number) : healthy(m, p, t)), {
      minDrainMs: 4000,
    });
    // polls: start=3, then t=0:0, 1:2, 2:0, 3:4, 4:1, 5:0 → first zero at or after 4 s is at 5 s.
    expect(summary).toMatchObject({ reason: 'drained', durationMs: 5000 });
  });

  describe("UDP sessions (a UDP proxy's session ends only at its idle timeout)", () => {
    /** An Envoy with a TCP listener and a UDP proxy `dns`, whose counts over time are given. */
    const withUdp = (connectionsAt: (t: number) => number, sessionsAt: (t: number) => number) => {
      const healthy = envoy('1.40.0', connectionsAt);
      return (method: string, path: string, t: number): Answer =>
        path === LISTENER_GAUGES_PATH
          ? statLines([
              ['listener.0.0.0.0_8080.downstream_cx_active', connectionsAt(t)],
              ['listener.0.0.0.0_5353.downstream_cx_active', 0],
              ['listener.admin.downstream_cx_active', 1],
              ['udp.dns.downstream_sess_active', sessionsAt(t)],
            ])
          : healthy(method, path, t);
    };

    test.each([
      // [case, connections over time, sessions over time, the poll that ends the drain]
      ['UDP only: the last session ends at 7 s', () => 0, (t: number) => (t < 7000 ? 2 : 0), 7000],
      ['TCP and UDP, the session last', (t: number) => (t < 3000 ? 1 : 0), (t: number) => (t < 5000 ? 1 : 0), 5000],
      ['TCP and UDP, the connection last', (t: number) => (t < 6000 ? 1 : 0), (t: number) => (t < 2000 ? 3 : 0), 6000],
    ])('%s: drained on the first poll with neither left, not before', async (_case, connectionsAt, sessionsAt, endsAt) => {
      const { summary, logs } = await run(withUdp(connectionsAt, sessionsAt), { minDrainMs: 0 });
      expect(summary).toMatchObject({ reason: 'drained', durationMs: endsAt, udpSessionsAtStart: sessionsAt(0), udpSessionsAtEnd: 0, connectionsAtEnd: 0 });
      const polls = logs.filter((l) => l.phase === 'poll');
      // Logged when either count changes; the drain never ended while one was above 0.
      expect(polls.at(-1)).toMatchObject({ connections: 0, udp_sessions: 0 });
      for (const poll of polls.slice(0, -1)) expect((poll.connections as number) + (poll.udp_sessions as number)).toBeGreaterThan(0);
      expect(logs.at(-1)).toMatchObject({ phase: 'summary', udp_sessions_at_start: sessionsAt(0), udp_sessions_at_end: 0 });
    });

    test('--min-connections bounds connections and sessions together', async () => {
      const { summary } = await run(withUdp((t) => (t < 4000 ? 1 : 0), () => 1), { minConnections: 1, minDrainMs: 0 });
      expect(summary).toMatchObject({ reason: 'drained', durationMs: 4000, connectionsAtEnd: 0, udpSessionsAtEnd: 1 });
    });

    test('sessions that never end hold the drain to its deadline, and the summary names their UDP proxy', async () => {
      const { summary, logs } = await run(withUdp(() => 0, () => 4), { minDrainMs: 0, deadlineMs: 5000 });
      expect(summary).toMatchObject({ reason: 'deadline', connectionsAtEnd: 0, udpSessionsAtEnd: 4 });
      expect(logs.at(-1)).toMatchObject({ phase: 'summary', open_udp_proxies: [{ name: 'dns', sessions: 4 }] });
    });

    test('an unreadable session gauge makes the reading unknown: the drain does not end on it', async () => {
      const healthy = envoy('1.40.0', () => 0);
      const { summary } = await run(
        (m, p, t) => (p === LISTENER_GAUGES_PATH ? statLines([['listener.0.0.0.0_8080.downstream_cx_active', 0], ['udp.dns.downstream_sess_active', '-1']]) : healthy(m, p, t)),
        { minDrainMs: 0, deadlineMs: 3000 },
      );
      expect(summary).toMatchObject({ reason: 'deadline', connectionsAtEnd: null, udpSessionsAtEnd: null });
    });
  });

  describe('version gates', () => {
    test.each([
      ['1.27.3', false, ['/healthcheck/fail', '/drain_listeners?graceful']],
      ['1.28.0', false, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.33.9', true, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.34.0', true, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit&inboundonly']],
      ['1.34.0', false, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.39.0', false, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.40.0', false, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']],
      ['1.40.0', true, ['/healthcheck/fail', '/drain_listeners?graceful&skip_exit&inboundonly']],
    ])('Envoy %s, inbound-only %s', async (version, inboundOnly, expected) => {
      const { posts } = await run(envoy(version, () => 0), { inboundOnly, minDrainMs: 0 });
      expect(posts).toEqual(expected);
    });

    // The loop follows the drain contract's table, at every release where the table changes.
    test.each(DRAIN_CALL_ERAS.map((era) => [era.releases, era.since === undefined ? '1.27.0' : `${era.since[0]}.${era.since[1]}.0`]))(
      'the %s era (Envoy %s): the POSTs the contract lists, with and without a drain delay and --inbound-only',
      async (_era, version) => {
        for (const drainDelay of [false, true]) {
          for (const inboundOnly of [false, true]) {
            const { posts } = await run(envoy(version, () => 0), { inboundOnly, drainDelayMs: drainDelay ? 2000 : 0, minDrainMs: 0 });
            expect(posts).toEqual(drainPosts(parseEnvoyVersion(`x/${version}/y`), { inboundOnly, drainDelay }));
          }
        }
      },
    );

    test('drain delay on >= 1.28 starts a graceful skip_exit drain first, then fails the health check after the delay', async () => {
      const { calls } = await run(envoy('1.29.1', () => 0), { drainDelayMs: 4000, minDrainMs: 1000 });
      const posts = calls.filter((c) => c.method === 'POST');
      expect(posts.map((c) => [c.path, c.at])).toEqual([
        ['/drain_listeners?graceful&skip_exit', 0],
        ['/healthcheck/fail', 4000],
        ['/drain_listeners?graceful&skip_exit', 4000],
      ]);
    });

    test('drain delay before 1.28 only waits', async () => {
      const { calls } = await run(envoy('1.27.0', () => 0), { drainDelayMs: 4000, minDrainMs: 1000 });
      expect(calls.filter((c) => c.method === 'POST').map((c) => [c.path, c.at])).toEqual([
        ['/healthcheck/fail', 4000],
        ['/drain_listeners?graceful', 4000],
      ]);
    });
  });
});

describe('the drain record', () => {
  /** A record sink that keeps what it was given, with the virtual time of each write. */
  function recordingSink(clock: FakeClock, fail = false): RecordSink & { written: Array<{ record: DrainRecord; at: number }> } {
    const written: Array<{ record: DrainRecord; at: number }> = [];
    return {
      path: '/dev/termination-log',
      written,
      write(record) {
        written.push({ record, at: clock.t });
        return fail ? { ok: false, error: '/dev/termination-log: No space left on device (ENOSPC)' } : { ok: true, bytes: 100 };
      },
    };
  }

  async function runWithRecord(script: (method: string, path: string, t: number) => Answer, overrides: Partial<DrainSettings> = {}, fail = false) {
    const clock = new FakeClock();
    const { admin, calls } = fakeAdmin(clock, script);
    const logs: Array<{ phase: string } & LogFields> = [];
    const sink = recordingSink(clock, fail);
    const summary = await drainEnvoy(settings(overrides), {
      admin,
      clock,
      log: (phase, fields = {}) => logs.push({ phase, ...fields }),
      record: sink,
      wallClock: () => new Date(Date.UTC(2026, 11, 1, 21, 0, 0)),
    });
    return { summary, calls, logs, written: sink.written, clock };
  }

  const twoListeners = (a: number, b: number) =>
    statLines([
      ['listener.0.0.0.0_8002.downstream_cx_active', 4],
      ['listener.ingress_http.downstream_cx_active', a],
      ['listener.ingress_http.worker_0.downstream_cx_active', a],
      ['listener.ingress_https.downstream_cx_active', b],
    ]);

  test('a started record is written before the first admin call, and the finished one at the end', async () => {
    const { written, calls, summary } = await runWithRecord(envoy('1.31.2', (t) => (t < 3000 ? 2 : 0)), { minDrainMs: 1000 });
    expect(written.map((w) => w.record.state)).toEqual(['started', 'finished']);
    expect(written[0]?.at).toBe(0);
    expect(calls[0]?.at).toBe(0);
    expect(written[0]?.record).toEqual({ state: 'started', version: VERSION, startedAt: '2026-12-01T21:00:00.000Z', deadlineMs: 60_000 });
    expect(written[1]?.record).toEqual({
      state: 'finished',
      version: VERSION,
      startedAt: '2026-12-01T21:00:00.000Z',
      deadlineMs: 60_000,
      reason: 'drained',
      durationMs: summary.durationMs,
      connectionsAtStart: 2,
      connectionsAtEnd: 0,
      openListeners: [],
      openListenersOmitted: 0,
      udpSessionsAtStart: 0,
      udpSessionsAtEnd: 0,
      openUdpProxies: [],
      openUdpProxiesOmitted: 0,
      healthcheckFailedAtMs: 0,
      envoyVersion: '1.31.2',
    });
    // Both readable by the reporter's strict reader.
    for (const { record } of written) expect(readDrainRecord(encodeDrainRecord(record))).toEqual({ kind: 'record', record });
  });

  test('a deadline record names the listeners still open, most connections first, and when the health check was failed', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { written, logs } = await runWithRecord(
      (m, p, t) => (p === LISTENER_GAUGES_PATH ? twoListeners(3, 7) : healthy(m, p, t)),
      { deadlineMs: 10_000, drainDelayMs: 2000 },
    );
    expect(written.at(-1)?.record).toMatchObject({
      state: 'finished',
      reason: 'deadline',
      connectionsAtStart: 10,
      connectionsAtEnd: 10,
      openListeners: [
        { name: 'ingress_https', connections: 7 },
        { name: 'ingress_http', connections: 3 },
      ],
      openListenersOmitted: 0,
      healthcheckFailedAtMs: 2000,
    });
    expect(logs.at(-1)).toMatchObject({ phase: 'summary', reason: 'deadline', healthcheck_failed_at_ms: 2000, record: 'written (100 bytes)' });
  });

  test('a deadline that runs out while the health check is being confirmed: the record says when Envoy took it', async () => {
    const healthy = envoy('1.31.2', () => 0);
    // Envoy takes the POST at t=0 and then answers nothing in time: the confirmation never completes.
    const { written, logs } = await runWithRecord((m, p, t) => (p === '/server_info' || p === '/ready' ? 'hang' : healthy(m, p, t)), { deadlineMs: 2500, requestTimeoutMs: 1000 });
    expect(logs.some((l) => l.phase === 'healthcheck-confirm')).toBe(false);
    expect(written.at(-1)?.record).toMatchObject({ reason: 'deadline', healthcheckFailedAtMs: 0 });
    expect(logs.at(-1)).toMatchObject({ phase: 'summary', healthcheck_failed_at_ms: 0 });
  });

  test('a deadline record names the UDP proxies still holding sessions, and reads back as written', async () => {
    const healthy = envoy('1.40.0', () => 0);
    const { written } = await runWithRecord(
      (m, p, t) =>
        p === LISTENER_GAUGES_PATH
          ? statLines([['listener.ingress_https.downstream_cx_active', 1], ['udp.dns.downstream_sess_active', 2], ['udp.game.downstream_sess_active', 5]])
          : healthy(m, p, t),
      { minDrainMs: 0, deadlineMs: 3000 },
    );
    const record = written.at(-1)?.record;
    expect(record).toMatchObject({
      reason: 'deadline',
      connectionsAtEnd: 1,
      udpSessionsAtStart: 7,
      udpSessionsAtEnd: 7,
      openListeners: [{ name: 'ingress_https', connections: 1 }],
      openUdpProxies: [
        { name: 'game', sessions: 5 },
        { name: 'dns', sessions: 2 },
      ],
      openUdpProxiesOmitted: 0,
    });
    expect(readDrainRecord(encodeDrainRecord(record as DrainRecord))).toEqual({ kind: 'record', record });
  });

  test('a health check that was never failed is null in the record; an unknown count lists no listeners', async () => {
    const { written } = await runWithRecord(
      (m, p) => (p === '/healthcheck/fail' ? { status: 405, body: '' } : p === LISTENER_GAUGES_PATH ? ok('') : m === 'POST' ? ok() : serverInfo('1.31.2')),
      { deadlineMs: 5000 },
    );
    expect(written.at(-1)?.record).toMatchObject({ reason: 'deadline', healthcheckFailedAtMs: null, connectionsAtEnd: null, openListeners: [] });
  });

  test('a record write that fails is logged and the drain goes on exactly as without a record', async () => {
    const script = envoy('1.31.2', (t) => (t < 3000 ? 2 : 0));
    const without = await run(script, { minDrainMs: 1000 });
    const failing = await runWithRecord(script, { minDrainMs: 1000 }, true);
    expect(failing.summary).toEqual(without.summary);
    expect(failing.calls).toEqual(without.calls);
    expect(failing.written.map((w) => w.record.state)).toEqual(['started', 'finished']);
    expect(failing.logs.find((l) => l.phase === 'record')).toMatchObject({
      state: 'started',
      outcome: 'not written: /dev/termination-log: No space left on device (ENOSPC)',
    });
    expect(failing.logs.at(-1)).toMatchObject({ phase: 'summary', record: 'not written: /dev/termination-log: No space left on device (ENOSPC)' });
  });

  test('a sink that throws does not stop the drain either', async () => {
    const clock = new FakeClock();
    const { admin } = fakeAdmin(clock, envoy('1.31.2', () => 0));
    const logs: Array<{ phase: string } & LogFields> = [];
    const summary = await drainEnvoy(settings({ minDrainMs: 0 }), {
      admin,
      clock,
      log: (phase, fields = {}) => logs.push({ phase, ...fields }),
      record: {
        path: '/x',
        write: () => {
          throw new Error('boom');
        },
      },
    });
    expect(summary.reason).toBe('drained');
    expect(logs.at(-1)).toMatchObject({ phase: 'summary', record: 'not written: boom' });
  });

  test('finish from outside (safety timer) ends the run once, with the reason given, and the run itself then changes nothing', async () => {
    const clock = new FakeClock();
    const { admin } = fakeAdmin(clock, envoy('1.31.2', () => 5));
    const logs: Array<{ phase: string } & LogFields> = [];
    const sink = recordingSink(clock);
    const drain = new DrainRun(settings({ deadlineMs: 4000 }), { admin, clock, log: (phase, fields = {}) => logs.push({ phase, ...fields }), record: sink });
    const running = drain.run();
    drain.finish('signal', { signal: 'SIGTERM' });
    await running;
    expect(sink.written.map((w) => w.record.state)).toEqual(['started', 'finished']);
    expect(sink.written[1]?.record).toMatchObject({ reason: 'signal', signal: 'SIGTERM' });
    expect(logs.filter((l) => l.phase === 'summary')).toEqual([expect.objectContaining({ reason: 'signal', signal: 'SIGTERM' })]);
  });
});

describe('failing the health check under stress (issue 20)', () => {
  test('a /healthcheck/fail that times out for 4 s (a throttled Envoy) is retried with back-off until Envoy takes it, then confirmed', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { calls, logs, summary } = await run(
      (m, p, t) => (p === '/healthcheck/fail' && t < 4000 ? 'hang' : healthy(m, p, t)),
      { minDrainMs: 0, requestTimeoutMs: 1000, deadlineMs: 60_000 },
    );
    const fails = calls.filter((c) => c.path === '/healthcheck/fail');
    expect(fails.length).toBeGreaterThan(3);
    // Waits between rounds grow: the gap before the last attempt is longer than the first retry's.
    const gaps = fails.slice(1).map((c, i) => c.at - (fails[i] as Call).at);
    expect(Math.max(...gaps)).toBeGreaterThan(gaps[0] as number);
    const attempts = logs.filter((l) => l.phase === 'healthcheck-fail');
    expect(attempts.map((l) => l.attempt)).toEqual(fails.map((_, i) => i + 1));
    expect(attempts.at(-1)).toMatchObject({ status: 200 });
    expect(attempts.slice(0, -1).every((l) => l.status === 'no-answer')).toBe(true);
    expect(logs.find((l) => l.phase === 'healthcheck-confirm')).toMatchObject({ state: 'DRAINING' });
    expect(summary.reason).toBe('drained');
  });

  test('an Envoy that answers 200 but still reports LIVE is failed again', async () => {
    let failsSeen = 0;
    const healthy = envoy('1.31.2', () => 0);
    const { calls, logs } = await run(
      (m, p, t) => {
        if (p === '/healthcheck/fail') failsSeen++;
        // The first fail is lost (a /healthcheck/ok after it): LIVE until the second.
        if (p === '/server_info' && failsSeen < 2) return serverInfo('1.31.2', 'LIVE');
        return healthy(m, p, t);
      },
      { minDrainMs: 0 },
    );
    expect(calls.filter((c) => c.path === '/healthcheck/fail')).toHaveLength(2);
    expect(logs.filter((l) => l.phase === 'healthcheck-confirm').map((l) => l.state)).toEqual(['LIVE', 'DRAINING']);
  });

  test('without /server_info, /ready answering 503 DRAINING confirms it', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { logs, summary } = await run((m, p, t) => (p === '/server_info' ? { status: 500, body: '' } : healthy(m, p, t)), { minDrainMs: 0 });
    expect(logs.find((l) => l.phase === 'healthcheck-confirm')).toMatchObject({ state: 'DRAINING', via: '/ready' });
    expect(summary.reason).toBe('drained');
  });

  test('the deadline bounds the retries: a health check never taken ends as deadline, healthcheckFailedAtMs null', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { summary, calls } = await run((m, p, t) => (p === '/healthcheck/fail' ? 'hang' : healthy(m, p, t)), { deadlineMs: 20_000 });
    expect(summary).toMatchObject({ reason: 'deadline', durationMs: 20_000 });
    expect(calls.filter((c) => c.path === '/healthcheck/fail').length).toBeGreaterThan(10);
  });

  test.each([
    ['no drain delay', 0, 1000],
    ['no drain delay, a 60 s request timeout', 0, 60_000],
    ['a 2 s drain delay', 2000, 1000],
    ['a 2 s drain delay, a 60 s request timeout', 2000, 60_000],
  ])('a silent /server_info does not delay the first /healthcheck/fail (%s)', async (_case, drainDelayMs, requestTimeoutMs) => {
    const healthy = envoy('1.31.2', () => 0);
    const { calls } = await run((m, p, t) => (p === '/server_info' ? 'hang' : healthy(m, p, t)), {
      drainDelayMs,
      requestTimeoutMs,
      minDrainMs: 0,
      deadlineMs: 600_000,
    });
    expect(calls.find((c) => c.path === '/healthcheck/fail')?.at).toBe(drainDelayMs);
  });

  test('/stats connections closed before their first byte while the rest answers: not "gone"; the health check is failed and the drain goes on', async () => {
    const healthy = envoy('1.31.2', () => 0);
    const { summary, calls, logs } = await run((m, p, t) => (p === LISTENER_GAUGES_PATH ? 'refused' : healthy(m, p, t)), { deadlineMs: 10_000 });
    expect(calls.some((c) => c.path === '/healthcheck/fail')).toBe(true);
    expect(summary.reason).toBe('deadline');
    expect(logs.find((l) => l.phase === 'connections')).toMatchObject({ connections: 'unknown', stats_error: expect.stringContaining('the admin API still answers') });
  });

  test('the admin API gone as a whole mid-drain still ends the drain promptly', async () => {
    const healthy = envoy('1.31.2', () => 4);
    const { summary, calls } = await run((m, p, t) => (t >= 2000 ? 'refused' : healthy(m, p, t)), { deadlineMs: 60_000 });
    expect(summary.reason).toBe('admin-unreachable');
    expect(calls.at(-1)?.path).toBe('/ready');
  });
});

test('a negative gauge (listener A 5, listener B -10) never ends the drain as drained: that poll is unknown (issue 20 item 6)', async () => {
  const healthy = envoy('1.31.2', () => 0);
  const cancelling = statLines([
    ['listener.a.downstream_cx_active', 5],
    ['listener.b.downstream_cx_active', -10],
  ]);
  const { summary, logs } = await run((m, p, t) => (p === LISTENER_GAUGES_PATH ? cancelling : healthy(m, p, t)), { minDrainMs: 0, deadlineMs: 5000 });
  expect(summary).toMatchObject({ reason: 'deadline', connectionsAtEnd: null });
  expect(logs.find((l) => l.phase === 'poll')).toMatchObject({ connections: 'unknown', stats_error: expect.stringContaining('not a count') });
});
