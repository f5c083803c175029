/**
 * The built and installed `envoy-shutdown drain`, as its own process, against the admin simulator over
 * a unix socket with real client connections: for each architecture's executable (the other
 * architecture's under qemu-user), against each Envoy release the simulator plays (PLAYED_ENVOY_RELEASES).
 */
import { statSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { drainHarness, expectFailedThenDrained, expectHealthCheckFailedOnceAnswered } from './harness';
import { MAX_DEADLINE_SECONDS } from '../../../src/drain-contract';
import { listenerExclusionPattern } from '../../../src/mutate/plan/listeners';
import { LISTENER_GAUGES_PATH } from '../../../src/shutdown/listener-stats';
import { summaryOf, E2E_CASES } from '../../support/envoy/shutdown-executable';

describe.each(E2E_CASES)('$title', (target) => {
  const h = drainHarness(target, 'e2e');
  const { simulator, openClients, drain } = h;
  const clients: ReturnType<typeof connect>[] = [];
  afterEach(() => {
    for (const c of clients.splice(0)) c.destroy();
  });

  test('install leaves the program executable, mode 0755, in the target directory', () => {
    expect(statSync(h.program).mode & 0o777).toBe(0o755);
  });

  test('calls the admin API in the documented order and exits on the first poll after the drain can complete', async () => {
    const sim = await simulator({ listeners: [{}, { statName: '0.0.0.0_8002' }] });
    const connections = await openClients(sim, 3);
    // The stats listener's own scraper connection never closes and must not hold the drain.
    const scraper = connect(sim.listenerPorts[1] as number, '127.0.0.1');
    clients.push(scraper);
    await sim.waitFor(() => sim.activeConnections('0.0.0.0_8002') === 1);

    const pollMs = 400;
    // Shorter than the three polls the clients take to leave, so the drain completes when the last
    // client closes, a moment the simulator sees itself. (With the minimum drain as the bound, the
    // program's own clock starts it when Envoy's answer arrives, later than the simulator saw the
    // request: a poll in between was wrongly counted as "after" on a loaded machine.)
    const minDrainMs = 300;
    // Clients leave as the drain goes on: one connection closes after each poll that follows healthcheck/fail.
    let drainedAt: number | undefined;
    sim.on('change', () => {
      if (drainedAt === undefined && sim.state === 'DRAINING' && sim.activeConnections('0.0.0.0_8002') === sim.activeConnections()) drainedAt = performance.now();
    });
    let closedAfterPolls = 0;
    sim.on('change', () => {
      const pollsSinceFail = sim.requests.filter((r, i) => r.path === LISTENER_GAUGES_PATH && i > sim.requests.findIndex((q) => q.path === '/healthcheck/fail')).length;
      if (sim.state === 'DRAINING' && pollsSinceFail > closedAfterPolls && connections.length > 0) {
        closedAfterPolls = pollsSinceFail;
        connections.shift()?.end();
      }
    });

    const run = await drain(sim, ['--deadline', '10s', '--min-drain', `${minDrainMs}ms`, '--poll-interval', `${pollMs}ms`, '--exclude-listener', '_8002$']).finished;
    expect(run.code).toBe(0);
    const calls = sim.requests.map((r) => `${r.method} ${r.path === LISTENER_GAUGES_PATH ? 'STATS' : r.path}`);
    expect(calls.slice(0, 4)).toEqual(['POST /healthcheck/fail', 'GET /server_info', 'GET STATS', 'POST /drain_listeners?graceful&skip_exit']);
    expect(new Set(calls.slice(4))).toEqual(new Set(['GET STATS']));
    expect(sim.quitRequested).toBe(false);

    const failedAt = sim.requests.find((r) => r.path === '/healthcheck/fail')?.at as number;
    // Three polls after the health check failed, so past the minimum drain by the program's clock too.
    expect(drainedAt).toBeGreaterThan(failedAt + minDrainMs);
    const canExitFrom = drainedAt as number;
    expect(run.exitedAt).toBeGreaterThanOrEqual(canExitFrom);
    // Not one poll more than needed: the first look after the drain could complete is the last request.
    const pollsAfter = sim.requests.filter((r) => r.path === LISTENER_GAUGES_PATH && r.at >= canExitFrom);
    expect(pollsAfter).toHaveLength(1);
    expect(sim.requests.at(-1)).toBe(pollsAfter[0]);
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 3, connections_at_end: 0, envoy_version: target.envoyRelease });
    expect(run.logs.map((l) => l.phase)).toEqual(expect.arrayContaining(['start', 'server-info', 'healthcheck-fail', 'drain-listeners', 'poll', 'summary']));
  });

  test('the minimum drain holds an already idle Envoy, then exits at once', async () => {
    const sim = await simulator();
    const run = await drain(sim, ['--deadline', '10s', '--min-drain', '1s', '--poll-interval', '1s']).finished;
    const failedAt = sim.requests.find((r) => r.path === '/healthcheck/fail')?.at as number;
    expect(run.code).toBe(0);
    // Envoy took the health check after the simulator saw the request: the exit is past both.
    expect(run.exitedAt - (failedAt + 1000)).toBeGreaterThanOrEqual(0);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ reason: 'drained' });
    // The minimum drain by the program's own clock, from when Envoy took the health check.
    expect((summary.duration_ms as number) - (summary.healthcheck_failed_at_ms as number)).toBeGreaterThanOrEqual(1000);
    // At once, in the program's causal order rather than the simulator's clock (under qemu on a loaded
    // machine the first poll after the drain of the listeners can come after failedAt + 1 s by the
    // simulator's clock and still before the end of the minimum drain by the program's): a poll that
    // found Envoy idle before the minimum drain was over held it (logged), and the next poll, at its
    // end, ended it; a first poll that came after it ended the drain itself. Nothing after that poll.
    const drainedListenersAt = sim.requests.findIndex((r) => r.path.startsWith('/drain_listeners'));
    const loopPolls = sim.requests.filter((r, i) => r.path === LISTENER_GAUGES_PATH && i > drainedListenersAt);
    const holds = run.logs.filter((l) => l.phase === 'min-drain');
    expect(holds.length).toBeLessThanOrEqual(1);
    expect(loopPolls).toHaveLength(holds.length + 1);
    expect(sim.requests.at(-1)).toBe(loopPolls.at(-1));
  });

  test('the longest deadline the contract accepts is honoured; a longer one is a usage error, never a drain cut short', async () => {
    const sim = await simulator();
    const run = await drain(sim, ['--deadline', `${MAX_DEADLINE_SECONDS}s`, '--min-drain', '0s']).finished;
    expect(run.code).toBe(0);
    // However many attempts /healthcheck/fail took under a 1 s request timeout on a loaded machine.
    expectFailedThenDrained(sim, '/drain_listeners?graceful&skip_exit');
    expectHealthCheckFailedOnceAnswered(run, sim);
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_end: 0 });

    // 2147484 s is past 2^31-1 ms, where a JavaScript timer overflows and fires at once.
    const requestsBefore = sim.requests.length;
    const refused = await drain(sim, ['--deadline', '2147484s', '--min-drain', '0s']).finished;
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--deadline "2147484s": expected');
    expect(sim.requests).toHaveLength(requestsBefore);
  });

  test('connections that never close → exit 0 at the deadline', async () => {
    const sim = await simulator();
    await openClients(sim, 2);
    const run = await drain(sim, ['--deadline', '3s', '--min-drain', '1s', '--poll-interval', '500ms']).finished;
    expect(run.code).toBe(0);
    expect(run.exitedAt - run.spawnedAt).toBeGreaterThanOrEqual(3000);
    // Ended by the drain's own deadline, not by the safety timer behind it.
    expect(summaryOf(run)).toMatchObject({ reason: 'deadline', connections_at_start: 2, connections_at_end: 2 });
    expect(summaryOf(run).note).toBeUndefined();
  });

  test('status: table for people, --json for machines', async () => {
    const sim = await simulator({ listeners: [{}, { statName: '0.0.0.0_8002' }] });
    await openClients(sim, 2);
    const table = await h.run(['status', '--admin', sim.adminAddress, '--exclude-listener', '_8002$']).finished;
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^State\s+LIVE$/m);
    expect(table.stdout).toMatch(new RegExp(`^Envoy\\s+${target.envoyRelease.replaceAll('.', '\\.')}$`, 'm'));
    expect(table.stdout).toMatch(/^Active connections\s+2$/m);
    expect(table.stdout).toMatch(/^0\.0\.0\.0_8002\s+0\s+no \(excluded\)$/m);
    const json = await h.run(['status', '--admin', sim.adminAddress, '--json']).finished;
    // The exit and stderr first: an admin call that timed out prints nothing on stdout, only why on stderr.
    expect({ code: json.code, stderr: json.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toMatchObject({ state: 'LIVE', envoyVersion: target.envoyRelease, activeConnections: 2, admin: h.seen(sim.adminAddress) });
    const down = await h.run(['status', '--admin', `unix:${join(h.workDir, 'gone.sock')}`]).finished;
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/cannot read Envoy status from unix:.*gone\.sock: GET \/server_info: ENOENT/);
  });

  test('status: listener names beyond ASCII are read as UTF-8 and matched by --exclude-listener', async () => {
    const sim = await simulator({ listeners: [{ statName: 'ingress_ünïcødé_8002' }, { statName: 'ingress_日本_80' }] });
    await openClients(sim, 1);
    const table = await h.run(['status', '--admin', sim.adminAddress, '--exclude-listener', 'ünïcødé']).finished;
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^ingress_ünïcødé_8002\s+\d+\s+no \(excluded\)$/m);
    expect(table.stdout).toMatch(/^ingress_日本_80\s+\d+\s+yes$/m);
  });

  test("an IPv6 listener's probe port is left out by the pattern the webhook writes: Envoy names [::]:8002 [__]_8002", async () => {
    // The listener Envoy serves probes on keeps its prober's connection: only the other one counts.
    const sim = await simulator({ listeners: [{ statName: '[::]:8002' }, { statName: '[::]:8080' }] });
    const prober = await openClients(sim, 1);
    expect(sim.listenerStatNames()).toEqual(['[__]_8002', '[__]_8080']);
    const table = await h.run(['status', '--admin', sim.adminAddress, '--exclude-listener', listenerExclusionPattern(8002)]).finished;
    expect(table.stdout).toMatch(/^\[__\]_8002\s+1\s+no \(excluded\)$/m);
    expect(table.stdout).toMatch(/^\[__\]_8080\s+0\s+yes$/m);
    const run = await drain(sim, ['--deadline', '10s', '--min-drain', '0s', '--exclude-listener', listenerExclusionPattern(8002)]).finished;
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 0, connections_at_end: 0 });
    expect(sim.activeConnections('[__]_8002')).toBe(1);
    prober[0]?.end();
  });

  describe('faults', () => {
    test.each([
      ['a missing unix socket', () => `unix:${join(h.workDir, 'gone.sock')}`],
      ['a closed loopback port', () => 'http://127.0.0.1:1'],
    ])('admin unreachable (%s) → exit 0 at once, not at the deadline', async (_name, address) => {
      // A 60 s deadline and a 30 s test: only giving up on an unreachable admin ends this in time.
      const run = await drain(address(), ['--deadline', '60s']).finished;
      expect(run.code).toBe(0);
      expect(summaryOf(run)).toMatchObject({ reason: 'admin-unreachable' });
    });

    test('admin accepting but never answering → exit by the deadline', async () => {
      const sim = await simulator();
      sim.faults.hang = {};
      const run = await drain(sim, ['--deadline', '3s', '--request-timeout', '1s']).finished;
      expect(run.code).toBe(0);
      expect(summaryOf(run)).toMatchObject({ reason: 'deadline' });
      expect(summaryOf(run).note).toBeUndefined();
    });

    test('5xx on server_info: drain goes on with a plain graceful drain', async () => {
      const sim = await simulator();
      sim.faults.errors = [{ code: 503, paths: /^\/server_info$/ }];
      const run = await drain(sim, ['--deadline', '5s', '--min-drain', '0s']).finished;
      expect(run.code).toBe(0);
      expect(sim.requests.filter((r) => r.path === '/server_info')).toHaveLength(3);
      expect(sim.requests.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual(['/healthcheck/fail', '/drain_listeners?graceful']);
      expect(summaryOf(run)).toMatchObject({ reason: 'drained', envoy_version: 'unknown' });
    });

    test('405 on healthcheck/fail and 404 on drain_listeners are logged; the drain still completes', async () => {
      const sim = await simulator();
      sim.faults.errors = [
        { code: 405, paths: /^\/healthcheck\/fail$/, body: 'Method POST not allowed, GET required.' },
        { code: 404, paths: /^\/drain_listeners$/, body: 'invalid path. admin commands are:\n' },
      ];
      const run = await drain(sim, ['--deadline', '5s', '--min-drain', '0s']).finished;
      expect(run.code).toBe(0);
      expect(run.logs.find((l) => l.phase === 'healthcheck-fail')).toMatchObject({ status: 405 });
      expect(run.logs.find((l) => l.phase === 'drain-listeners')).toMatchObject({ status: 404 });
      expect(summaryOf(run)).toMatchObject({ reason: 'drained' });
    });

    test('listener stats hidden by a stats matcher → "unknown", not zero: waits for the deadline', async () => {
      const sim = await simulator();
      sim.faults.statsHidden = true;
      const run = await drain(sim, ['--deadline', '3s', '--min-drain', '0s', '--poll-interval', '500ms']).finished;
      expect(run.code).toBe(0);
      expect(summaryOf(run)).toMatchObject({ reason: 'deadline', connections_at_start: 'unknown', connections_at_end: 'unknown' });
    });

    test('the admin socket vanishing mid-drain → prompt exit 0', async () => {
      const sim = await simulator();
      await openClients(sim, 2);
      const running = drain(sim, ['--deadline', '30s', '--min-drain', '1s', '--poll-interval', '500ms']);
      await sim.waitForRequest(/^\/drain_listeners/);
      await sim.die();
      // A 30 s deadline and a 30 s test: only giving up on the vanished admin ends this in time.
      const run = await running.finished;
      expect(run.code).toBe(0);
      expect(summaryOf(run)).toMatchObject({ reason: 'admin-unreachable', connections_at_end: 2 });
    });

    test('Envoy < 1.28: skip_exit never sent, no early drain during the drain delay', async () => {
      const sim = await simulator({ version: '1.27.4' });
      const run = await drain(sim, ['--deadline', '5s', '--drain-delay', '300ms', '--min-drain', '0s']).finished;
      expect(run.code).toBe(0);
      expect(sim.requests.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual(['/healthcheck/fail', '/drain_listeners?graceful']);
    });

    test('Envoy 1.28–1.40: graceful&skip_exit (never skip_exit alone), begun during the drain delay', async () => {
      const sim = await simulator({ version: '1.36.0' });
      // A delay long enough for /server_info and the first stats read even under qemu on a busy machine:
      // the early drain needs the version, and each call during the delay is bounded by its end.
      const run = await drain(sim, ['--deadline', '8s', '--drain-delay', '2s', '--min-drain', '0s']).finished;
      expect(run.code).toBe(0);
      const posts = sim.requests.filter((r) => r.method === 'POST');
      // /healthcheck/fail is tried again after an attempt a loaded machine left unanswered in time:
      // however many attempts it took, they all come between the two drains, and the last was taken.
      const failFrom = posts.findIndex((r) => r.path === '/healthcheck/fail');
      const failTo = posts.findLastIndex((r) => r.path === '/healthcheck/fail');
      expect(posts.slice(failFrom, failTo + 1).every((r) => r.path === '/healthcheck/fail')).toBe(true);
      expect([...posts.slice(0, failFrom), ...posts.slice(failTo + 1)].map((r) => r.path)).toEqual(['/drain_listeners?graceful&skip_exit', '/drain_listeners?graceful&skip_exit']);
      expect(failFrom).toBe(1);
      expectHealthCheckFailedOnceAnswered(run, sim);
      // The health check is failed when the delay after the start has passed, whatever came before it.
      expect((posts[failFrom]?.at as number) - run.spawnedAt).toBeGreaterThanOrEqual(2000);
      expect(sim.gracefulDrain).toMatchObject({ skipExit: true });
      expect(sim.listenersStopped).toBe(false);
    });
  });
});
