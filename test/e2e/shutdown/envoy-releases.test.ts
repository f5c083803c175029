/**
 * The drain's admin calls are right on every Envoy release it supports (issue 34 item 1): the built
 * program against a simulator playing each release's `/drain_listeners` (1.40's PR #47042 beside the
 * older ones, and 1.40 with its runtime guard reverted), for each architecture's executable. The POSTs
 * are the ones the drain contract's table lists for that release, every client connection learns of
 * the drain (and closes, as a client told `Connection: close` does), so the drain ends drained, and
 * on 1.28 and later the listeners still accept when the hook returns (SIGTERM comes after it).
 */
import { connect, type Socket } from 'node:net';
import { drainPosts } from '../../../src/drain-contract';
import { parseEnvoyVersion } from '../../../src/shutdown/envoy-version';
import { NON_GRACEFUL_DRAIN_NOTIFIES_GUARD, type RuntimeGuards } from '../../support/envoy/drain-manager';
import { E2E_TARGETS, summaryOf } from '../../support/envoy/shutdown-executable';
import { drainHarness } from './harness';

const RELEASES: { release: string; guards: RuntimeGuards; name: string; stopsListeners: boolean }[] = [
  { release: '1.27.4', guards: {}, name: 'Envoy 1.27.4 (no skip_exit)', stopsListeners: true },
  { release: '1.39.0', guards: {}, name: 'Envoy 1.39.0', stopsListeners: false },
  { release: '1.40.0', guards: {}, name: 'Envoy 1.40.0', stopsListeners: false },
  { release: '1.40.0', guards: { [NON_GRACEFUL_DRAIN_NOTIFIES_GUARD]: false }, name: 'Envoy 1.40.0 with non_graceful_drain_notifies_connections off', stopsListeners: false },
];

describe.each(E2E_TARGETS)('$title', (target) => {
  const h = drainHarness(target, 'releases');
  const clients: Socket[] = [];
  afterEach(() => {
    for (const client of clients.splice(0)) client.destroy();
  });

  describe.each(RELEASES)('$name', ({ release, guards, stopsListeners }) => {
    test.each([false, true])('drain delay %s: the contract\'s POSTs; every connection is told to drain, closes, and the drain ends drained', async (delay) => {
      // MODIFY_ONLY listeners: a failed health check does not tell their connections, only a drain does.
      const sim = await h.simulator({ version: release, runtimeGuards: guards, drainTimeS: 1, listeners: [{ drainType: 'MODIFY_ONLY' }, { drainType: 'MODIFY_ONLY' }] });
      const connections = await Promise.all(
        sim.listenerPorts.map((port) => new Promise<Socket>((resolve) => { const c = connect(port, '127.0.0.1', () => resolve(c)); clients.push(c); })),
      );
      await sim.waitFor(() => sim.activeConnections() === 2);
      // A client told to drain closes, as one answered `Connection: close` (or sent GOAWAY) does.
      let toldAt: number | undefined;
      sim.on('change', () => {
        if (toldAt === undefined && sim.connectionsToldToDrain() === 2) {
          toldAt = performance.now();
          for (const c of connections) c.end();
        }
      });
      const flags = ['--deadline', '20s', '--min-drain', '0s', '--poll-interval', '200ms', ...(delay ? ['--drain-delay', '1s'] : [])];
      const run = await h.drain(sim, flags).finished;
      expect(run.code).toBe(0);
      const posts = sim.requests.filter((r) => r.method === 'POST' && !(r.path === '/healthcheck/fail' && r.answeredAt === undefined));
      // The health check may be posted again after an attempt a loaded machine left unanswered in time.
      const distinct = posts.map((r) => r.path).filter((path, i, all) => !(path === '/healthcheck/fail' && all[i - 1] === path));
      expect(distinct).toEqual(drainPosts(parseEnvoyVersion(`x/${release}/y`), { inboundOnly: false, drainDelay: delay }));
      expect(posts.every((r) => r.answeredAt !== undefined)).toBe(true);
      expect(toldAt).toBeDefined();
      expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 2, connections_at_end: 0, envoy_version: release });
      if (stopsListeners) {
        // Without skip_exit the drain time (1 s here) stops the listeners: the drain still completes.
        await sim.waitFor(() => sim.listenersStopped);
      } else {
        // Still accepting when the hook returns: a client that arrives late is answered.
        expect(sim.listenersStopped).toBe(false);
        const late = connect(sim.listenerPorts[0] as number, '127.0.0.1');
        clients.push(late);
        await sim.waitFor(() => sim.activeConnections() === 1);
      }
    });
  });
});
