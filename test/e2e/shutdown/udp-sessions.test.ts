/**
 * UDP sessions hold the drain (issue 34 item 2): the built program against a simulated Envoy with a UDP
 * proxy whose sessions end only at their idle timeout, for each architecture's executable. A drain that
 * counted listeners alone would end at once here (the UDP listener's own gauge is 0): these drains end
 * on the first poll after the last session (and connection) ended, and not before.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readDrainRecord } from '../../../src/drain-record';
import { LISTENER_GAUGES_PATH } from '../../../src/shutdown/listener-stats';
import type { EnvoyAdminSimulator, RecordedRequest } from '../../support/envoy-admin-simulator';
import { E2E_TARGETS, summaryOf, type FinishedRun, type RunningProcess } from '../../support/envoy/shutdown-executable';
import { drainHarness } from './harness';

/**
 * Short, so a test waits little for a session to end; long beside the poll interval, so a beat on each
 * poll keeps a session alive even when a loaded machine leaves long gaps between polls.
 */
const IDLE_TIMEOUT_MS = 3000;
const POLL_MS = 200;

describe.each(E2E_TARGETS)('$title', (target) => {
  const h = drainHarness(target, 'udp');
  const udpClients: UdpSocket[] = [];
  afterEach(() => {
    for (const client of udpClients.splice(0)) client.close();
  });

  async function udpClient(): Promise<UdpSocket> {
    const socket = createSocket('udp4');
    udpClients.push(socket);
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()));
    return socket;
  }

  /** Opens a session before the drain starts: one datagram, answered by the proxy's upstream. */
  async function openSession(sim: EnvoyAdminSimulator, client: UdpSocket): Promise<void> {
    await new Promise<void>((resolve) => {
      client.once('message', () => resolve());
      client.send('hello', sim.udpPort(), '127.0.0.1');
    });
  }

  /**
   * A client whose session the drain must see: its first datagram goes out with the drain's first admin
   * call (before the program reads any count), and while its session is there it sends another on each
   * of the drain's stats polls, until `polls` of them were answered with the session there (an answer is
   * made when the request arrives, so the count at that moment is what the program read). Then it falls
   * silent and its session idles out. It never opens a session again: a session lost to a long stall
   * ends the case early, never with a session the drain did not see. Resolves when it fell silent, or
   * when the drain ended first.
   */
  function sessionSeenBy(sim: EnvoyAdminSimulator, client: UdpSocket, running: RunningProcess, polls: number): Promise<unknown> {
    const silent = new Promise<void>((resolve) => {
      let seen = 0;
      let answered = 0;
      const onChange = () => {
        const stats = sim.requests.filter((r) => r.path === LISTENER_GAUGES_PATH);
        if (stats.length === answered) return;
        answered = stats.length;
        if (sim.udpSessions() === 0) return;
        if (++seen >= polls) {
          sim.off('change', onChange);
          resolve();
        } else client.send('beat', sim.udpPort(), '127.0.0.1');
      };
      sim.on('change', onChange);
      void sim.waitForRequest(/./).then(() => client.send('hello', sim.udpPort(), '127.0.0.1'));
    });
    return Promise.race([silent, running.finished]);
  }

  /** The drain's stats polls that arrived at or after `at`: the first one ended the drain, and nothing came after it. */
  function expectEndedOnFirstPollFrom(sim: EnvoyAdminSimulator, run: FinishedRun, at: number): void {
    const after = sim.requests.filter((r) => r.path === LISTENER_GAUGES_PATH && r.at >= at);
    expect(after).toHaveLength(1);
    expect(sim.requests.at(-1)).toBe(after[0] as RecordedRequest);
    expect(run.exitedAt).toBeGreaterThanOrEqual(at);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ reason: 'drained', connections_at_end: 0, udp_sessions_at_end: 0 });
    // A poll saw the session; the last one saw nothing open.
    const polls = run.logs.filter((l) => l.phase === 'poll');
    expect(polls.some((l) => (l.udp_sessions as number) > 0)).toBe(true);
    expect(polls.at(-1)).toMatchObject({ connections: 0, udp_sessions: 0 });
    // Every session ended by its idle timer: nothing but its idle time ends one.
    expect(sim.udpProxies.flatMap((p) => p.history).map((s) => s.endedBy)).toEqual(expect.arrayContaining(['idle-timeout']));
    for (const session of sim.udpProxies.flatMap((p) => p.history)) expect(session.endedBy).toBe('idle-timeout');
  }

  test('UDP only: the drain ends on the first poll after the last session idled out, not before', async () => {
    const sim = await h.simulator({ version: '1.40.0', udpProxies: [{ statPrefix: 'dns', idleTimeoutMs: IDLE_TIMEOUT_MS }] });
    const client = await udpClient();
    const running = h.drain(sim, ['--deadline', '60s', '--min-drain', '0s', '--poll-interval', `${POLL_MS}ms`]);
    await sessionSeenBy(sim, client, running, 3);
    const run = await running.finished;
    expect(run.code).toBe(0);
    expectEndedOnFirstPollFrom(sim, run, sim.udpProxies[0]!.lastSessionEndedAt as number);
  });

  test.each([
    ['the session last: the connection closes first', 'session'],
    ['the connection last: it closes once the session idled out', 'connection'],
  ] as const)('TCP and UDP, %s: the drain ends on the first poll after the last of them', async (_case, last) => {
    const sim = await h.simulator({ version: '1.40.0', udpProxies: [{ statPrefix: 'game', idleTimeoutMs: IDLE_TIMEOUT_MS }] });
    const [connection] = await h.openClients(sim, 1);
    const client = await udpClient();
    let connectionClosedAt: number | undefined;
    sim.on('change', () => {
      if (connectionClosedAt === undefined && sim.activeConnections() === 0) connectionClosedAt = performance.now();
    });
    const running = h.drain(sim, ['--deadline', '60s', '--min-drain', '0s', '--poll-interval', `${POLL_MS}ms`]);
    await sessionSeenBy(sim, client, running, 3);
    if (last === 'session') connection!.end();
    else await sim.waitFor(() => sim.udpSessions() === 0).then(() => connection!.end());
    const run = await running.finished;
    expect(run.code).toBe(0);
    const sessionEndedAt = sim.udpProxies[0]!.lastSessionEndedAt as number;
    expect(connectionClosedAt).toBeDefined();
    // The order the case meant.
    if (last === 'session') expect(sessionEndedAt).toBeGreaterThan(connectionClosedAt as number);
    else expect(connectionClosedAt).toBeGreaterThan(sessionEndedAt);
    expectEndedOnFirstPollFrom(sim, run, Math.max(sessionEndedAt, connectionClosedAt as number));
    expect(summaryOf(run)).toMatchObject({ connections_at_start: 1 });
  });

  test('sessions kept alive hold the drain to its deadline; the record and the summary name their UDP proxy', async () => {
    const sim = await h.simulator({ version: '1.40.0', udpProxies: [{ statPrefix: 'game', idleTimeoutMs: IDLE_TIMEOUT_MS }] });
    const client = await udpClient();
    await openSession(sim, client);
    // A game client that never stops: a datagram on every poll.
    let polls = 0;
    sim.on('change', () => {
      const now = sim.requests.filter((r) => r.path === LISTENER_GAUGES_PATH).length;
      if (now > polls) client.send('beat', sim.udpPort(), '127.0.0.1');
      polls = now;
    });
    const recordPath = join(h.workDir, 'termination-log-udp');
    writeFileSync(recordPath, '', { mode: 0o666 });
    h.share(recordPath);
    const run = await h.drain(sim, ['--deadline', '3s', '--min-drain', '0s', '--poll-interval', `${POLL_MS}ms`, '--termination-message-path', h.seen(recordPath)]).finished;
    expect(run.code).toBe(0);
    expect(summaryOf(run)).toMatchObject({ reason: 'deadline', udp_sessions_at_end: 1, open_udp_proxies: [{ name: 'game', sessions: 1 }] });
    expect(readDrainRecord(readFileSync(recordPath, 'utf8'))).toEqual({
      kind: 'record',
      record: expect.objectContaining({ reason: 'deadline', udpSessionsAtEnd: 1, openUdpProxies: [{ name: 'game', sessions: 1 }], openUdpProxiesOmitted: 0 }),
    });
  });

  test('status lists the UDP proxies and their sessions', async () => {
    const sim = await h.simulator({ version: '1.40.0', udpProxies: [{ statPrefix: 'dns' }, { statPrefix: 'probe_8002' }] });
    await openSession(sim, await udpClient());
    const table = await h.run(['status', '--admin', sim.adminAddress, '--exclude-listener', '_8002$']).finished;
    expect({ code: table.code, stderr: table.stderr }).toEqual({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(/^UDP sessions\s+1$/m);
    expect(table.stdout).toMatch(/^dns\s+1\s+yes$/m);
    expect(table.stdout).toMatch(/^probe_8002\s+0\s+no \(excluded\)$/m);
  });
});
