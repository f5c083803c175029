/**
 * A throttled or partly broken Envoy (issue 20, items 4-10), against the built programs: the health
 * check is failed even when Envoy is slow to take it, a silent /server_info does not delay it, one
 * endpoint's closed connections do not pass for a gone Envoy, counts that are not counts are never
 * trusted, signals end the drain with a summary (or are ignored), and versions are read strictly.
 */
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { drainHarness } from './harness';
import { E2E_TARGETS, summaryOf } from '../../support/envoy/shutdown-executable';

const GAUGES = /^\/stats\?/;

/** Whether SIGALRM is pending for the (stopped) process `pid`: bit 13 of its pending-signal masks. */
function alarmPending(pid: number): boolean {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return [...status.matchAll(/^(?:ShdPnd|SigPnd):\s+([0-9a-f]+)$/gm)].some((m) => (BigInt(`0x${m[1]}`) & (1n << 13n)) !== 0n);
}

/** Resolves once `predicate` holds, looking every few milliseconds; rejects after `timeoutMs`. */
async function until(predicate: () => boolean, timeoutMs: number): Promise<void> {
  const started = performance.now();
  while (!predicate()) {
    if (performance.now() - started > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(E2E_TARGETS)('$title', (target) => {
  const h = drainHarness(target, 'stressed');

  test('a /healthcheck/fail that gets no answer is retried until Envoy takes it, then confirmed as DRAINING', async () => {
    const sim = await h.simulator();
    sim.faults.hang = { paths: /^\/healthcheck\/fail$/ };
    const running = h.drain(sim, ['--deadline', '30s', '--min-drain', '0s', '--request-timeout', '200ms']);
    // Three rounds of three attempts unanswered, then Envoy answers again.
    await sim.waitFor(() => sim.requests.filter((r) => r.path === '/healthcheck/fail').length >= 4);
    expect(sim.state).toBe('LIVE');
    delete sim.faults.hang;
    const run = await running.finished;
    expect(run.code).toBe(0);
    expect(sim.state).toBe('DRAINING');
    const attempts = run.logs.filter((l) => l.phase === 'healthcheck-fail');
    expect(attempts.length).toBe(sim.requests.filter((r) => r.path === '/healthcheck/fail').length);
    expect(attempts.at(-1)).toMatchObject({ status: 200 });
    expect(run.logs.find((l) => l.phase === 'healthcheck-confirm')).toMatchObject({ state: 'DRAINING', via: '/server_info' });
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', healthcheck_failed_at_ms: expect.any(Number) });
  });

  test('a /server_info that never answers does not delay /healthcheck/fail, even with a 60 s request timeout', async () => {
    const sim = await h.simulator();
    sim.faults.hang = { paths: /^\/server_info$/ };
    const running = h.drain(sim, ['--deadline', '20s', '--min-drain', '0s', '--request-timeout', '60s']);
    await sim.waitForRequest(/^\/healthcheck\/fail$/);
    expect(sim.requests[0]?.path).toBe('/healthcheck/fail');
    expect(sim.state).toBe('DRAINING');
    running.child.kill('SIGKILL');
    await running.finished;
  });

  test('/stats connections closed before any answer while the rest of the admin API answers: the drain goes on (not "admin-unreachable")', async () => {
    const sim = await h.simulator();
    sim.faults.reset = { paths: /^\/stats$/ };
    // That the drain goes on is shown by what it does, not by how many polls fit in a wall-clock
    // deadline (under qemu on a loaded machine a 3 s one ran out before the first poll): it keeps
    // polling after the listeners were drained, and, once /stats answers again, ends by itself as
    // drained. The deadline is one the test never waits for.
    const running = h.drain(sim, ['--deadline', '120s', '--min-drain', '0s', '--poll-interval', '200ms']);
    const pollsAfterDrain = () => sim.requests.filter((r, i) => GAUGES.test(r.path) && i > sim.requests.findIndex((q) => q.path.startsWith('/drain_listeners'))).length;
    // Each poll tries /stats three times, all closed unanswered: two polls, then another attempt.
    await sim.waitFor(() => sim.requests.some((r) => r.path.startsWith('/drain_listeners')) && pollsAfterDrain() > 3);
    expect(sim.state).toBe('DRAINING');
    delete sim.faults.reset;
    const run = await running.finished;
    expect(run.code).toBe(0);
    expect(run.logs.some((l) => l.phase === 'admin-unreachable')).toBe(false);
    expect(run.logs.find((l) => l.phase === 'connections')).toMatchObject({ connections: 'unknown', stats_error: expect.stringContaining('the admin API still answers') });
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 'unknown', connections_at_end: 0, healthcheck_failed_at_ms: expect.any(Number) });
  });

  test('an --exclude-listener pattern a regular expression engine would backtrack on is refused before any admin call', async () => {
    const sim = await h.simulator({ listeners: [{ statName: `${'a'.repeat(5000)}!` }] });
    const run = await h.drain(sim, ['--deadline', '10s', '--exclude-listener', '(a+)+$']).finished;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--exclude-listener "(a+)+$": ( at 0 is not supported');
    expect(sim.requests).toHaveLength(0);
  });

  test('a wildcard pattern against a 5000-character listener name is matched, and the drain ends by itself', async () => {
    const sim = await h.simulator({ listeners: [{ statName: `${'a'.repeat(5000)}_8002` }, {}] });
    const run = await h.drain(sim, ['--deadline', '10s', '--min-drain', '0s', '--exclude-listener', `${'.'.repeat(200)}_8002$`]).finished;
    expect(run.code).toBe(0);
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_end: 0 });
  });

  describe('signals', () => {
    test.each(['SIGTERM', 'SIGINT'] as const)('%s ends the drain at once with its summary (reason signal) and record, exit 0', async (signal) => {
      const sim = await h.simulator();
      await h.openClients(sim, 1);
      const path = `${h.workDir}/signal-${signal}.log`;
      writeFileSync(path, '');
      chmodSync(path, 0o666);
      const running = h.drain(sim, ['--deadline', '30s', '--termination-message-path', h.seen(path)]);
      await sim.waitForRequest(/^\/drain_listeners/);
      running.child.kill(signal);
      const run = await running.finished;
      expect(run.code).toBe(0);
      expect(run.signal).toBeNull();
      expect(summaryOf(run)).toMatchObject({ reason: 'signal', signal, connections_at_end: 1 });
      expect(run.logs.at(-1)?.phase).toBe('summary');
      expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({ state: 'finished', reason: 'signal', signal });
    });

    test.each(['SIGHUP', 'SIGUSR1', 'SIGALRM'] as const)('%s is ignored: logged, and the drain goes on to its own end', async (signal) => {
      const sim = await h.simulator();
      const clients = await h.openClients(sim, 1);
      const running = h.drain(sim, ['--deadline', '30s', '--min-drain', '0s', '--poll-interval', '200ms']);
      await sim.waitForRequest(/^\/drain_listeners/);
      running.child.kill(signal);
      // The drain is still polling after the signal: wait for two more polls, then let it finish.
      const polls = () => sim.requests.filter((r) => GAUGES.test(r.path)).length;
      const before = polls();
      await sim.waitFor(() => polls() >= before + 2);
      for (const client of clients) client.end();
      const run = await running.finished;
      expect(run.code).toBe(0);
      expect(run.logs.find((l) => l.phase === 'signal')).toMatchObject({ signal, action: 'ignored' });
      expect(summaryOf(run)).toMatchObject({ reason: 'drained' });
      expect(run.stderr).not.toContain('hard deadline reached');
    });

    test("the hard deadline is the kernel's SIGALRM: a drain stopped past it ends through it at once when continued", async () => {
      const sim = await h.simulator();
      await h.openClients(sim, 1);
      const running = h.drain(sim, ['--deadline', '1s']);
      await sim.waitForRequest(/^\/drain_listeners/);
      const pid = running.child.pid as number;
      running.child.kill('SIGSTOP');
      // The kernel's timer fires at deadline + 1 s while the process is stopped: SIGALRM (14) pending.
      // Nothing else changes meanwhile, so the process's own status is what is watched.
      await until(() => alarmPending(pid), 20_000);
      running.child.kill('SIGCONT');
      const run = await running.finished;
      expect(run.code).toBe(0);
      expect(run.stderr).toContain('envoy-shutdown: hard deadline reached, exiting');
    });
  });
});
