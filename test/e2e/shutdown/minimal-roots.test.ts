/**
 * The installed program runs in the roots Envoy images give it, as uid 65534 (distroless's nobody):
 * an empty root (no libc at all) and a glibc-only root, for each architecture's executable (the other
 * architecture's under Debian's static qemu-user, copied into the root). /proc and /dev are mounted
 * as in any container, inside a private mount namespace; afterAll refuses to delete a root that still
 * has something mounted under it (deleting through a live /dev bind mount would wipe the host's /dev).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvoyAdminSimulator } from '../../support/envoy-admin-simulator';
import { buildRoot, hasRootTools, inRootCommand, removeRoot, type RootKind } from '../../support/envoy/roots';
import { ensureBuilt, installTo, start, stopStarted, summaryOf, TARGETS } from '../../support/envoy/shutdown-executable';

afterEach(stopStarted);

const NOBODY = '65534:65534';
const PROGRAM = '/config/drainguard/envoy-shutdown';

test.each(TARGETS)('the $arch executable is static: no program interpreter, no dynamic section', (target) => {
  const headers = execFileSync('readelf', ['--program-headers', '--dynamic', target.built], { encoding: 'utf8' });
  expect(headers).not.toMatch(/INTERP|Requesting program interpreter/);
  expect(headers).not.toMatch(/\(NEEDED\)/);
  expect(headers).toMatch(/There is no dynamic section in this file/);
  const machine = execFileSync('readelf', ['--file-header', target.built], { encoding: 'utf8' });
  expect(machine).toMatch(target.arch === 'amd64' ? /Machine:\s+Advanced Micro Devices X86-64/ : /Machine:\s+AArch64/);
});

const ROOTS: { kind: RootKind; mounts: boolean; name: string }[] = [
  { kind: 'empty', mounts: true, name: 'an empty root (no libc)' },
  { kind: 'glibc', mounts: true, name: 'a glibc-only root' },
  { kind: 'empty', mounts: false, name: 'an empty root with nothing mounted (no /proc, no /dev)' },
];

describe.each(TARGETS.flatMap((target) => ROOTS.map(({ kind, mounts, name }) => ({ target, kind, mounts, title: `${target.title}, in ${name} as uid 65534` }))))(
  '$title',
  ({ target, kind, mounts }) => {
    let root: string;
    let placed: string[];

    beforeAll(async () => {
      // An acceptance test: never skipped. CI runs as root on Debian, which has both tools.
      if (!hasRootTools()) throw new Error('this suite needs root, dpkg (Debian) and unshare (util-linux)');
      await ensureBuilt();
      root = mkdtempSync(join(tmpdir(), `envoy-shutdown-root-${target.arch}-${kind}-`));
      placed = buildRoot(root, kind, target);
      installTo(join(root, 'config/drainguard'), target); // from outside, as the init container would
    }, 120_000);

    afterAll(() => {
      if (root) removeRoot(root);
    });

    const inRoot = (args: string[]) => start(...inRootCommand(root, target, NOBODY, args, mounts));

    test('the root holds only what it should', () => {
      const libc = placed.filter((path) => /\/libc\.so\.6$/.test(path));
      expect(libc).toHaveLength(kind === 'glibc' ? 1 : 0);
      expect(placed.filter((path) => /libstdc\+\+|libgcc_s|musl/.test(path))).toEqual([]);
      expect(placed.filter((path) => path.startsWith('/usr/bin/'))).toEqual(target.emulator ? [`/usr/bin/${target.emulator}`] : []);
    });

    test('version runs', async () => {
      const run = await inRoot([PROGRAM, 'version']).finished;
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^envoy-shutdown \d+\.\d+\.\d+\n$/);
    });

    test('install works inside the root too (finding itself without /proc when there is none)', async () => {
      mkdirSync(join(root, 'scratch'), { mode: 0o1777 });
      chmodSync(join(root, 'scratch'), 0o1777);
      const run = await inRoot([PROGRAM, 'install', '--to', '/scratch/drainguard']).finished;
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(readFileSync(join(root, 'scratch/drainguard/envoy-shutdown')).equals(readFileSync(target.built))).toBe(true);
    });

    test('drain completes against the simulator socket inside the root', async () => {
      const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(root, 'admin/admin.sock') });
      chmodSync(join(root, 'admin/admin.sock'), 0o666); // Envoy's admin socket is reachable by Envoy's user
      const clients: Socket[] = [];
      try {
        const port = sim.listenerPorts[0] as number;
        for (let i = 0; i < 2; i++) clients.push(connect(port, '127.0.0.1'));
        await sim.waitFor(() => sim.activeConnections() === 2);
        const running = inRoot([PROGRAM, 'drain', '--admin', 'unix:/admin/admin.sock', '--deadline', '20s', '--min-drain', '500ms', '--poll-interval', '200ms', '--exclude-listener', '_8002$']);
        // After the connections at start were read (done when the next reading is asked for).
        await sim.waitFor(() => sim.requests.filter((r) => r.path.startsWith('/stats?')).length >= 2);
        const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${running.child.pid}/status`, 'utf8'))?.[1];
        for (const client of clients) client.end();
        const run = await running.finished;
        expect(uid).toBe('65534');
        expect(run.code).toBe(0);
        expect(summaryOf(run)).toMatchObject({ reason: 'drained', connections_at_start: 2, connections_at_end: 0 });
        expect(sim.requests.filter((r) => r.method === 'POST').map((r) => r.path)).toEqual(['/healthcheck/fail', '/drain_listeners?graceful&skip_exit']);
      } finally {
        for (const client of clients) client.destroy();
        await sim.stop();
      }
    });
  },
);
