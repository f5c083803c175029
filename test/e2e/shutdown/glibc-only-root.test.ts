/**
 * The installed program runs in a root filesystem holding only glibc, as uid
 * 65534, with /proc and /dev mounted as in any container (glibc resolves `$ORIGIN` through
 * /proc/self/exe), draining the simulator through a unix socket placed inside that root.
 *
 * The mounts are made in a private mount namespace of the chroot'ed process (`unshare -m`), so they
 * vanish with it even if this test crashes; afterAll still verifies nothing is left mounted before it
 * deletes the root (deleting through a live /dev bind mount would wipe the host's /dev).
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EnvoyAdminSimulator } from '../../support/envoy-admin-simulator';
import { buildGlibcRoot, hasGlibcRootTools, mountsUnder } from '../../support/envoy/glibc-root';
import { ensureBuilt, installTo, start, summaryOf, stopStarted } from '../../support/envoy/shutdown-executable';

// A failed assertion must not leave a drain program running.
afterEach(stopStarted);

const NOBODY = '65534:65534';
let root: string;
let glibc: string[];

describe('glibc-only root filesystem, uid 65534', () => {
  beforeAll(async () => {
    // Never skipped: without it nothing shows the program runs in a glibc-only image. CI runs as root on Debian, which has both tools.
    if (!hasGlibcRootTools()) throw new Error('this suite needs root, dpkg (Debian) and unshare (util-linux)');
    await ensureBuilt();
    root = mkdtempSync(join(tmpdir(), 'envoy-shutdown-glibc-root-'));
    glibc = buildGlibcRoot(root);
    mkdirSync(join(root, 'admin'), { mode: 0o755 });
    installTo(join(root, 'config/drainguard')); // from outside, as the init container would
  }, 120_000);

  afterAll(() => {
    if (!root) return;
    for (const mountPoint of mountsUnder(root).reverse()) execFileSync('umount', ['-l', mountPoint]);
    if (mountsUnder(root).length > 0) throw new Error(`still mounted under ${root}; not deleting it`);
    rmSync(root, { recursive: true, force: true });
  });

  /** `chroot --userspec=65534:65534 ROOT …` with /proc and /dev mounted in a private mount namespace. */
  function inRoot(args: string[]) {
    const script = 'mount -t proc proc "$1/proc" && mount --bind /dev "$1/dev" && shift && exec chroot "$@"';
    return start('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', root, `--userspec=${NOBODY}`, root, ...args]);
  }

  test('the root holds nothing but glibc (and the installed program)', () => {
    expect(glibc.some((f) => /\/libc\.so\.6$/.test(f))).toBe(true);
    expect(glibc.some((f) => /ld-linux-x86-64\.so\.2$/.test(f))).toBe(true);
    expect(glibc.some((f) => /libstdc\+\+|libgcc_s/.test(f))).toBe(false);
  });

  test('needs no library outside glibc and no symbol newer than Ubuntu 22.04 glibc 2.35', () => {
    const program = join(root, 'config/drainguard/envoy-shutdown');
    const needed = [...execFileSync('readelf', ['-d', program], { encoding: 'utf8' }).matchAll(/\(NEEDED\)\s+Shared library: \[(.+)\]/g)].map((m) => m[1] as string);
    const glibcNames = new Set(glibc.map((f) => f.slice(f.lastIndexOf('/') + 1)));
    expect(needed.filter((lib) => !glibcNames.has(lib))).toEqual([]);
    const versions = [...execFileSync('objdump', ['-T', program], { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 }).matchAll(/GLIBC_2\.(\d+)/g)].map((m) => Number(m[1]));
    expect(Math.max(...versions)).toBeLessThanOrEqual(35);
  });

  test('version runs', async () => {
    const run = await inRoot(['/config/drainguard/envoy-shutdown', 'version']).finished;
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^envoy-shutdown \d+\.\d+\.\d+\n$/);
  });

  test('drain completes against the simulator socket inside the root', async () => {
    const sim = await EnvoyAdminSimulator.start({ unixSocketPath: join(root, 'admin/admin.sock') });
    chmodSync(join(root, 'admin/admin.sock'), 0o666); // Envoy's admin socket is reachable by Envoy's user
    const clients: Socket[] = [];
    try {
      const port = sim.listenerPorts[0] as number;
      for (let i = 0; i < 2; i++) clients.push(connect(port, '127.0.0.1'));
      await sim.waitFor(() => sim.activeConnections() === 2);
      const running = inRoot([
        '/config/drainguard/envoy-shutdown', 'drain', '--admin', 'unix:/admin/admin.sock',
        '--deadline', '5s', '--min-drain', '500ms', '--poll-interval', '200ms', '--exclude-listener', '_8002$',
      ]);
      await sim.waitForRequest(/^\/healthcheck\/fail$/);
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
});
