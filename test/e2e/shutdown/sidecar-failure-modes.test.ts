/**
 * Envoy Gateway main's shutdown-manager fixes, as regression cases for drainguard's drain (issue 34
 * item 3; docs/upstream-shapes.md, "What the sidecar's newest fixes mean for drainguard"). Each failure
 * comes from something the drain program does not need, and each test runs the built program where that
 * thing is missing, for each architecture's executable (the other under qemu-user):
 *
 * - 10119: the sidecar could not create /tmp/shutdown-ready under readOnlyRootFilesystem. The drain
 *   program runs in a read-only root; the only file it writes is the termination message file, which
 *   the kubelet mounts into the container itself.
 * - 10186: FailedPreStopHook when a drain outlasted the sidecar's 10 s HTTP write deadline. The hook is
 *   the program itself (exec): a drain of 11 s exits 0 with its record, nothing to time out in between.
 * - PR #9861 / kubernetes#134285: the preStop httpGet fails on hostNetwork pods (no pod IP to resolve).
 *   The exec hook needs no network: the drain runs in a network namespace with no interface up.
 * - 8912: the sidecar's default 64 Mi memory limit. The program drains a 10,000-listener Envoy with UDP
 *   proxies under an address-space limit of 64 MiB (RLIMIT_AS: a bound, not a measurement, so no
 *   timing is involved).
 */
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readDrainRecord } from '../../../src/drain-record';
import { EnvoyAdminSimulator } from '../../support/envoy-admin-simulator';
import { buildRoot, hasRootTools, inRootCommand, removeRoot, type RootMounts } from '../../support/envoy/roots';
import { ensureBuilt, HOST_TARGET, installTo, NOBODY, start, stopStarted, summaryOf, TARGETS } from '../../support/envoy/shutdown-executable';

afterEach(stopStarted);

const PROGRAM = '/config/drainguard/envoy-shutdown';

/** Every path under `dir`, with its size and mode: what a read-only root must still hold afterwards. */
function listing(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name);
    const stat = statSync(join(dir, path));
    const line = `${path} ${stat.isDirectory() ? 'dir' : stat.size} ${(stat.mode & 0o7777).toString(8)}`;
    return entry.isDirectory() && !['proc', 'dev', 'admin'].includes(path) ? [line, ...listing(dir, path)] : [line];
  });
}

describe.each(TARGETS)('$title, in an empty root as uid 65534', (target) => {
  let root: string;
  /** Outside the root: Envoy's admin socket directory (an emptyDir) and the kubelet's termination message file. */
  let volumes: string;
  const sims: EnvoyAdminSimulator[] = [];
  const clients: Socket[] = [];

  beforeAll(async () => {
    // An acceptance test: never skipped. CI runs as root on Debian, which has the tools.
    if (!hasRootTools()) throw new Error('this suite needs root, dpkg (Debian) and unshare (util-linux)');
    await ensureBuilt();
    root = mkdtempSync(join(tmpdir(), `envoy-shutdown-sidecar-modes-${target.arch}-`));
    buildRoot(root, 'empty', target);
    installTo(join(root, 'config/drainguard'), target);
    writeFileSync(join(root, 'termination-log'), ''); // the mount point of the kubelet's file
    volumes = mkdtempSync(join(tmpdir(), `envoy-shutdown-volumes-${target.arch}-`));
    chmodSync(volumes, 0o755);
  }, 120_000);
  afterAll(() => {
    if (root) removeRoot(root);
    if (volumes) rmSync(volumes, { recursive: true, force: true });
  });
  afterEach(async () => {
    for (const client of clients.splice(0)) client.destroy();
    await Promise.all(sims.splice(0).map((sim) => sim.stop()));
  });

  /** A simulator whose admin socket is in a fresh admin volume, reachable by the program's user. */
  async function envoyWithAdminVolume(name: string, tcp = false): Promise<{ sim: EnvoyAdminSimulator; adminVolume: string }> {
    const adminVolume = join(volumes, name);
    mkdirSync(adminVolume, { mode: 0o755 });
    const sim = await EnvoyAdminSimulator.start({ version: '1.40.0', unixSocketPath: join(adminVolume, 'admin.sock'), tcp });
    sims.push(sim);
    chmodSync(join(adminVolume, 'admin.sock'), 0o666);
    return { sim, adminVolume };
  }

  /** The kubelet's termination message file: empty, 0666, outside the root. */
  function terminationFile(name: string): string {
    const path = join(volumes, name);
    writeFileSync(path, '', { mode: 0o666 });
    chmodSync(path, 0o666);
    return path;
  }

  const inRoot = (args: string[], mounts: RootMounts) => start(...inRootCommand(root, target, NOBODY, args, true, mounts));

  test('Envoy Gateway 10119 (readOnlyRootFilesystem): the drain needs no writable root', async () => {
    const { sim, adminVolume } = await envoyWithAdminVolume('ro');
    const record = terminationFile('ro-termination-log');
    const mounts: RootMounts = { readOnly: true, binds: [[adminVolume, '/admin'], [record, '/termination-log']] };
    const before = listing(root);
    // The control: the root really is read-only for the program.
    const install = await inRoot([PROGRAM, 'install', '--to', '/scratch/drainguard'], mounts).finished;
    expect(install.code).toBe(1);
    expect(install.stderr).toMatch(/EROFS/);

    const client = connect(sim.listenerPorts[0] as number, '127.0.0.1');
    clients.push(client);
    await sim.waitFor(() => sim.activeConnections() === 1);
    void sim.waitForRequest(/^\/drain_listeners/).then(() => client.end());
    const run = await inRoot([PROGRAM, 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '20s', '--min-drain', '0s', '--poll-interval', '200ms', '--termination-message-path', '/termination-log'], mounts).finished;
    expect(run.code).toBe(0);
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 1, connections_at_end: 0, record: expect.stringMatching(/^written/) });
    expect(readDrainRecord(readFileSync(record, 'utf8'))).toMatchObject({ kind: 'record', record: { state: 'finished', reason: 'drained' } });
    expect(listing(root)).toEqual(before);
  });

  test('Envoy Gateway 10186 (the sidecar\'s 10 s HTTP write deadline): a drain of 11 s exits 0 with its record', async () => {
    const { adminVolume } = await envoyWithAdminVolume('long');
    const record = terminationFile('long-termination-log');
    const mounts: RootMounts = { readOnly: true, binds: [[adminVolume, '/admin'], [record, '/termination-log']] };
    const run = await inRoot([PROGRAM, 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '30s', '--min-drain', '11s', '--poll-interval', '1s', '--termination-message-path', '/termination-log'], mounts).finished;
    // The kubelet's exec hook waits for the process; its exit status is the hook's result.
    expect(run.code).toBe(0);
    const summary = summaryOf(run);
    expect(summary).toMatchObject({ reason: 'drained' });
    // The drain outlasted the sidecar's write deadline by its own clock (what it was asked: 11 s of minimum drain).
    expect(summary.duration_ms as number).toBeGreaterThanOrEqual(11_000);
    expect(readDrainRecord(readFileSync(record, 'utf8'))).toMatchObject({ kind: 'record', record: { state: 'finished', reason: 'drained' } });
  }, 60_000);

  test('Envoy Gateway PR #9861, kubernetes#134285 (hostNetwork preStop httpGet): the exec hook needs no network at all', async () => {
    const { sim, adminVolume } = await envoyWithAdminVolume('nonet', true);
    const mounts: RootMounts = { noNetwork: true, binds: [[adminVolume, '/admin']] };
    // The control: from the program's network namespace nothing is reachable, not even loopback (the
    // kernel answers ENETUNREACH, which the program does not take for an Envoy that is gone).
    const unreachable = await inRoot([PROGRAM, 'drain', '--admin', `http://127.0.0.1:${sim.adminPort}`, '--deadline', '2s'], mounts).finished;
    expect(unreachable.code).toBe(0);
    expect(unreachable.logs.find((l) => l.phase === 'healthcheck-fail')).toMatchObject({ status: 'no-answer', error: expect.stringMatching(/ENETUNREACH/) });
    expect(sim.requests).toEqual([]);

    const client = connect(sim.listenerPorts[0] as number, '127.0.0.1');
    clients.push(client);
    await sim.waitFor(() => sim.activeConnections() === 1);
    void sim.waitForRequest(/^\/drain_listeners/).then(() => client.end());
    const run = await inRoot([PROGRAM, 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '20s', '--min-drain', '0s', '--poll-interval', '200ms'], mounts).finished;
    expect(run.code).toBe(0);
    expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 1, connections_at_end: 0 });
    expect(sim.requests.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual(['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']);
  });
});

describe(`Envoy Gateway 8912 (the sidecar's default 64 Mi memory limit): ${HOST_TARGET.title}`, () => {
  // qemu-user reserves the emulated address space up front, so an address-space limit would measure the
  // emulator: the host's executable only (the arm64 build is the same program; its heap is capped alike).
  const LIMIT = 64 * 1024 * 1024;
  let dir: string;
  let program: string;
  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'envoy-shutdown-64mi-'));
    program = installTo(join(dir, 'drainguard'), HOST_TARGET);
  }, 120_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('the control: a limit this low stops the program from starting at all', async () => {
    const run = await start('prlimit', [`--as=${1024 * 1024}`, '--', program, 'version']).finished;
    expect(run.code).not.toBe(0);
    expect(run.stdout).toBe('');
  });

  test('a drain of a 10,000-listener Envoy with UDP proxies completes under RLIMIT_AS 64 MiB', async () => {
    const sim = await EnvoyAdminSimulator.start({
      version: '1.40.0',
      unixSocketPath: join(dir, 'admin.sock'),
      idleListeners: 10_000,
      udpProxies: [{ statPrefix: 'dns' }, { statPrefix: 'game' }],
    });
    const client = connect(sim.listenerPorts[0] as number, '127.0.0.1');
    try {
      await sim.waitFor(() => sim.activeConnections() === 1);
      void sim.waitForRequest(/^\/drain_listeners/).then(() => client.end());
      const run = await start('prlimit', [`--as=${LIMIT}`, '--', program, 'drain', '--admin', sim.adminAddress, '--deadline', '60s', '--min-drain', '0s', '--poll-interval', '200ms']).finished;
      expect({ code: run.code, signal: run.signal }).toEqual({ code: 0, signal: null });
      expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 1, connections_at_end: 0, udp_sessions_at_end: 0 });
      // Every poll read the whole answer: 10,002 listeners and their per-worker copies were there to count.
      expect(run.logs.filter((l) => l.phase === 'poll' && l.stats_error !== undefined)).toEqual([]);
    } finally {
      client.destroy();
      await sim.stop();
    }
  });
});
