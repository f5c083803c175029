/**
 * The drain record (src/drain-record.ts) as the built program leaves it in a termination message file,
 * read back with the reporter's strict reader: for each architecture's executable (the other one under
 * qemu-user in an empty root, as uid 65534). The file is made as the kubelet makes it: it exists before
 * the container starts, empty, mode 0666 whatever the umask (pkg/kubelet/kuberuntime, makeMounts).
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { readDrainRecord, type DrainRecord } from '../../../src/drain-record';
import { drainHarness, expectHealthCheckFailedOnceAnswered } from './harness';
import { E2E_TARGETS, summaryOf } from '../../support/envoy/shutdown-executable';

describe.each(E2E_TARGETS)('$title', (target) => {
  const h = drainHarness(target, 'record');
  let fileCounter = 0;

  /** A termination message file as the kubelet creates it. */
  function terminationLog(): string {
    const dir = join(h.workDir, 'termination');
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const path = join(dir, `log-${fileCounter++}`);
    writeFileSync(path, '');
    chmodSync(path, 0o666);
    return path;
  }

  function recordIn(path: string): DrainRecord {
    const reading = readDrainRecord(readFileSync(path, 'utf8'));
    if (reading.kind !== 'record') throw new Error(`no drain record in ${path}: ${JSON.stringify(reading)}`);
    return reading.record;
  }

  test('a started record is there while the drain runs, and the finished one replaces it', async () => {
    const sim = await h.simulator();
    const clients = await h.openClients(sim, 2);
    const path = terminationLog();
    const running = h.drain(sim, ['--deadline', '30s', '--min-drain', '0s', '--poll-interval', '200ms', '--termination-message-path', h.seen(path)]);
    await sim.waitForRequest(/^\/drain_listeners/);
    expect(recordIn(path)).toMatchObject({ state: 'started', deadlineMs: 30_000 });
    for (const client of clients) client.end();
    const run = await running.finished;
    expect(run.code).toBe(0);
    const record = recordIn(path);
    expect(record).toMatchObject({
      state: 'finished',
      reason: 'drained',
      connectionsAtStart: 2,
      connectionsAtEnd: 0,
      openListeners: [],
      envoyVersion: '1.31.2',
      deadlineMs: 30_000,
    });
    if (record.state !== 'finished') throw new Error('not finished');
    expect(record.healthcheckFailedAtMs).not.toBeNull();
    expect(record.durationMs).toBeGreaterThanOrEqual(record.healthcheckFailedAtMs as number);
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', record: expect.stringMatching(/^written \(\d+ bytes\)$/) });
  });

  test('at the deadline the record names the listeners still holding connections', async () => {
    const sim = await h.simulator({ listeners: [{ statName: 'ingress_https' }, { statName: 'ingress_http' }] });
    await h.openClients(sim, 3);
    const path = terminationLog();
    const run = await h.drain(sim, ['--deadline', '2s', '--min-drain', '0s', '--poll-interval', '300ms', '--termination-message-path', h.seen(path)]).finished;
    expect(run.code).toBe(0);
    expect(recordIn(path)).toMatchObject({
      state: 'finished',
      reason: 'deadline',
      connectionsAtEnd: 3,
      openListeners: [{ name: 'ingress_https', connections: 3 }],
      openListenersOmitted: 0,
    });
  });

  test('a drain killed midway leaves its started record: seen as one that never finished', async () => {
    const sim = await h.simulator();
    await h.openClients(sim, 1);
    const path = terminationLog();
    const running = h.drain(sim, ['--deadline', '30s', '--termination-message-path', h.seen(path)]);
    await sim.waitForRequest(/^\/healthcheck\/fail$/);
    running.child.kill('SIGKILL');
    await running.finished;
    expect(recordIn(path)).toMatchObject({ state: 'started' });
  });

  test.each([
    ['a missing file', (): string => join(h.workDir, 'no-such-termination-log')],
    ['a directory', (): string => {
      const dir = join(h.workDir, `a-directory-${fileCounter++}`);
      mkdirSync(dir, { mode: 0o777 });
      return dir;
    }],
    ['a FIFO nobody reads', (): string => {
      const fifo = join(h.workDir, `fifo-${fileCounter++}`);
      execFileSync('mkfifo', ['-m', '0666', fifo]);
      return fifo;
    }],
  ])('a record that cannot be written (%s) is logged, and the drain goes on as ever', async (_name, makePath) => {
    const sim = await h.simulator();
    const run = await h.drain(sim, ['--deadline', '10s', '--min-drain', '0s', '--termination-message-path', h.seen(makePath())]).finished;
    expect(run.code).toBe(0);
    // However many attempts /healthcheck/fail took on a loaded machine, it came first and was taken once.
    expect(sim.requests.filter((r) => r.method === 'POST' && r.path !== '/healthcheck/fail').map((r) => r.path)).toEqual(['/drain_listeners?graceful&skip_exit']);
    expect(sim.requests.findIndex((r) => r.method === 'POST')).toBe(sim.requests.findIndex((r) => r.path === '/healthcheck/fail'));
    expect(sim.requests.findLastIndex((r) => r.path === '/healthcheck/fail')).toBeLessThan(sim.requests.findIndex((r) => r.path.startsWith('/drain_listeners')));
    expectHealthCheckFailedOnceAnswered(run, sim);
    expect(run.logs.find((l) => l.phase === 'record')).toMatchObject({ state: 'started', outcome: expect.stringMatching(/^not written: .*(ENOENT|EISDIR|ENXIO)/) });
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', record: expect.stringMatching(/^not written: /) });
  });

  test('a path the contract refuses is a usage error before anything is done', async () => {
    const sim = await h.simulator();
    const run = await h.drain(sim, ['--termination-message-path', 'relative/log']).finished;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--termination-message-path "relative/log": the termination message path must be absolute');
    expect(sim.requests).toHaveLength(0);
  });
});
